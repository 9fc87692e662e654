//! The minion daemon loop: drives [`FailoverState`] and turns its actions into network I/O.
//!
//! One tokio task owns all state (the failover state machine, the sign-in client, the
//! current keys, the jid queue); I/O runs in small spawned tasks that report back on a
//! channel, so the loop never blocks:
//!
//! ```text
//! FailoverState ──Action──► driver ──spawn──► REQ exchange / SUB reader / job
//!       ▲                     │  ▲                         │
//!       └──────Event──────────┘  └────────── Ev ───────────┘
//! ```
//!
//! Sign-ins, alive checks and failback pings are timed out by the state machine; the
//! driver only reports answers. A publish that no longer decrypts (the master rotated its
//! AES key) triggers one re-authentication with the current master after a random delay
//! ([`crate::rekey`]: spread so a fleet does not stampede), after which the held publish is
//! decoded once; a request whose reply does not decrypt (the session key rotated) re-auths
//! at once and is retried once.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmpv::Value;
use salt_pki::PrivateKey;
use salt_proto::auth_minion::{
    AuthAction, AuthClient, AuthError, AuthNote, AuthOutcome, AuthSettings, PendingAuth,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::{debug, error, info, warn};

use crate::channel::{ChannelError, Session, minion_tok, open_pillar, topic_for};
use crate::failover::{Action, CheckId, Event, FailoverConfig, FailoverState, MasterAddr};
use crate::job::{JidQueue, Job};
use crate::modules::ExecContext;
use crate::net::{self, NetError, SubNote, SubOptions};
use crate::rekey::ReauthSpread;

/// Everything the driver needs, already validated (the binary maps salt-config onto it).
#[derive(Debug, Clone)]
pub struct MinionSettings {
    /// Minion id.
    pub id: String,
    /// `pki_dir` (minion.pem/.pub, minion_master.pub, master_sign.pub).
    pub pki_dir: PathBuf,
    /// `keysize` for a first-start key.
    pub keysize: u32,
    /// Masters, failover and timing options.
    pub failover: FailoverConfig,
    /// Sign-in verification options.
    pub auth: AuthSettings,
    /// `publish_port` from the config, if set.
    pub publish_port: Option<u16>,
    /// `zmq_filtering`.
    pub zmq_filtering: bool,
    /// `sign_pub_messages` (verify publish signatures).
    pub sign_pub_messages: bool,
    /// Timeout of one return/event request try (`return_retry_timer_max`).
    pub return_timeout: Duration,
    /// Tries for returns and events (`return_retry_tries`).
    pub return_tries: u32,
    /// `enable_legacy_startup_events`.
    pub legacy_start_event: bool,
    /// Request pillar after sign-in (`_pillar`, ver 2).
    pub request_pillar: bool,
    /// Grains to report (collected once).
    pub grains: Arc<Value>,
    /// The pillar last received (`_pillar` after sign-in), for `I@`/`J@` targets.
    pub pillar: Arc<std::sync::RwLock<Option<Value>>>,
    /// Seed for the state machine's randomness.
    pub rng_seed: u64,
    /// `random_reauth_delay`: bounds the random wait before re-authenticating after the
    /// master rotated its AES key (capped, see [`crate::rekey`]).
    pub random_reauth_delay: Duration,
    /// Prometheus metrics to keep up to date (`metrics_port`), if any.
    pub metrics: Option<Arc<crate::metrics::MinionMetrics>>,
}

/// How [`run`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOutcome {
    /// The shutdown future completed.
    Shutdown,
    /// The minion must exit with this code (rejected 77, fingerprint mismatch 42, ...).
    Exit(i32),
}

/// Errors that stop the minion before it can run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    /// Loading or creating the minion key failed.
    #[error("minion key: {0}")]
    Keys(#[from] salt_pki::Error),
    /// The failover configuration is invalid.
    #[error("master configuration: {0}")]
    Config(#[from] crate::failover::ConfigError),
}

/// Salt's exit code for a master fingerprint mismatch.
pub const EXIT_FINGER_MISMATCH: i32 = 42;

/// Why a sign-in is in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    /// Chosen by the state machine.
    SignIn,
    /// Refreshing keys with the current master after a decrypt failure.
    Refresh,
}

/// Reports from spawned I/O tasks.
enum Ev {
    Auth {
        idx: usize,
        epoch: u64,
        purpose: Purpose,
        pending: PendingAuth,
        ip: String,
        result: Result<Vec<u8>, NetError>,
    },
    Dns {
        idx: usize,
        epoch: u64,
    },
    Alive {
        idx: usize,
        id: CheckId,
        ok: bool,
        rtt: Duration,
    },
    Failback {
        idx: usize,
        id: CheckId,
        ok: bool,
    },
    JobDone(Value),
    /// A request's reply did not decrypt: re-auth and send `load` again (once).
    NeedsReauth(Value),
    /// A return failed on the connection of this sign-in epoch and was kept (kept.rs).
    Kept(u64),
}

/// The connection to the master in use.
struct Conn {
    idx: usize,
    epoch: u64,
    ip: String,
    port: u16,
    session: Session,
    publish_port: u16,
    req: salt_transport::ReqClient,
    sub: Option<JoinHandle<()>>,
}

struct Driver {
    s: MinionSettings,
    key: PrivateKey,
    tok: Arc<Vec<u8>>,
    auth: AuthClient,
    st: FailoverState,
    ev_tx: mpsc::Sender<Ev>,
    sub_tx: mpsc::Sender<(u64, SubNote)>,
    epoch: u64,
    signing_in: Option<(usize, u64)>,
    conn: Option<Conn>,
    serial: u64,
    jids: JidQueue,
    topic: String,
    refreshing: bool,
    retry_publishes: Vec<Vec<Vec<u8>>>,
    retry_requests: Vec<Value>,
    /// Returns no master acknowledged yet, sent again after the next sign-in (kept.rs).
    kept: crate::kept::Kept,
    rekey: ReauthSpread,
    exit: Option<i32>,
}

/// A timer firing later than this means the process was not running meanwhile.
const LATE_SLACK: Duration = Duration::from_millis(250);
/// The longest wait for answers in flight after the loop ran late.
const MAX_SETTLE: Duration = Duration::from_secs(1);

/// Publishes held while waiting to re-authenticate (more are dropped, as a full queue).
const MAX_HELD_PUBLISHES: usize = 64;

fn now_std() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

fn nonce() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Python `time.asctime()` for a unix time (UTC): `Sun Nov 22 02:50:41 2026`.
pub fn asctime(unix: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = unix / 86_400;
    let rem = unix % 86_400;
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // Civil from days (Howard Hinnant's algorithm), days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    let wd = DAYS.get((days % 7) as usize).copied().unwrap_or("Mon");
    let mon = MONTHS.get((mo - 1) as usize).copied().unwrap_or("Jan");
    format!("{wd} {mon} {d:>2} {h:02}:{m:02}:{s:02} {y}")
}

fn clear_request(load: Value) -> Vec<u8> {
    salt_proto::encode(&Value::Map(vec![
        ("enc".into(), "clear".into()),
        ("load".into(), load),
        ("version".into(), 3.into()),
    ]))
}

/// Run the minion until `shutdown` completes or the master tells it to exit.
pub async fn run(
    settings: MinionSettings,
    shutdown: impl Future<Output = ()>,
) -> Result<RunOutcome, DriverError> {
    crate::startup::step("load or generate the minion key");
    let key = salt_pki::files::load_or_generate(&settings.pki_dir, "minion", settings.keysize)?;
    debug!(
        "Loaded minion key: {}",
        settings.pki_dir.join("minion.pem").display()
    );
    crate::startup::step("read the cached master keys");
    let tok = Arc::new(minion_tok(&key)?);
    let cached = std::fs::read_to_string(settings.pki_dir.join("minion_master.pub")).ok();
    let sign_pub = salt_pki::files::read_public_key(
        &settings
            .pki_dir
            .join(format!("{}.pub", settings.auth.master_sign_key_name)),
    )
    .ok();
    let auth = AuthClient::new(settings.auth.clone(), key.clone(), cached, sign_pub);
    let st = FailoverState::new(settings.failover.clone(), settings.rng_seed, now_std())?;
    let (ev_tx, mut ev_rx) = mpsc::channel(64);
    let (sub_tx, mut sub_rx) = mpsc::channel(64);
    let topic = topic_for(&settings.id);
    let rekey = ReauthSpread::new(
        settings.random_reauth_delay,
        settings.rng_seed.rotate_left(17) ^ 0x7e4e_7e4e,
    );
    let mut d = Driver {
        s: settings,
        key,
        tok,
        auth,
        st,
        ev_tx,
        sub_tx,
        epoch: 0,
        signing_in: None,
        conn: None,
        serial: 0,
        jids: JidQueue::default(),
        topic,
        refreshing: false,
        retry_publishes: Vec::new(),
        retry_requests: Vec::new(),
        kept: crate::kept::Kept::default(),
        rekey,
        exit: None,
    };
    tokio::pin!(shutdown);
    let mut settle_until: Option<std::time::Instant> = None;
    crate::startup::step("send the first sign-in");
    d.drain_actions();
    crate::startup::finish();
    loop {
        d.drain_actions();
        if let Some(code) = d.exit {
            d.close();
            return Ok(RunOutcome::Exit(code));
        }
        let deadline = match (d.st.poll_timeout(), d.rekey.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let deadline = settle_until.or(deadline);
        let timer = async {
            match deadline {
                Some(t) => tokio::time::sleep_until(tokio::time::Instant::from_std(t)).await,
                None => std::future::pending::<()>().await,
            }
        };
        // Biased: answers and SUB events that are already here are handled before a timer
        // that expired meanwhile (e.g. after the thread was descheduled), so an answer that
        // arrived in time is never discarded as late.
        tokio::select! {
            biased;
            () = &mut shutdown => {
                info!("Shutting down the Salt Minion");
                d.st.close(now_std());
                d.drain_actions();
                d.close();
                return Ok(RunOutcome::Shutdown);
            }
            Some(ev) = ev_rx.recv() => d.handle_ev(ev),
            Some((epoch, note)) = sub_rx.recv() => d.handle_sub(epoch, note),
            () = timer => {
                // Whatever arrived while the timer fired still counts as in time.
                while let Ok(ev) = ev_rx.try_recv() {
                    d.handle_ev(ev);
                    d.drain_actions();
                }
                while let Ok((epoch, note)) = sub_rx.try_recv() {
                    d.handle_sub(epoch, note);
                    d.drain_actions();
                }
                let now = now_std();
                // A timer that fires late means this process was not running (descheduled
                // under load, stopped, a blocking call): the answers that came in meanwhile
                // are still in the socket threads. Judge no timeout before they had as long
                // to arrive as the loop was late (bounded).
                if settle_until.take().is_none()
                    && let Some(late) = deadline.map(|t| now.saturating_duration_since(t))
                    && late > LATE_SLACK
                {
                    let settle = late.min(MAX_SETTLE);
                    debug!(
                        "The minion's event loop ran {:.3} s late; letting answers in flight \
                         arrive for {:.3} s before judging timeouts",
                        late.as_secs_f64(),
                        settle.as_secs_f64()
                    );
                    settle_until = Some(now + settle);
                    continue;
                }
                d.st.handle_timeout(now);
                if d.rekey.handle_timeout(now) {
                    d.start_refresh();
                }
            }
        }
    }
}

impl Driver {
    fn close(&mut self) {
        if let Some(c) = self.conn.take()
            && let Some(h) = c.sub
        {
            h.abort();
        }
    }

    fn drain_actions(&mut self) {
        while let Some(a) = self.st.poll_action() {
            self.do_action(a);
            if self.exit.is_some() {
                return;
            }
        }
    }

    fn addr(&self, idx: usize) -> Option<MasterAddr> {
        self.st.masters().get(idx).cloned()
    }

    fn do_action(&mut self, a: Action) {
        match a {
            Action::SignIn { idx, addr, timeout } => {
                self.epoch += 1;
                self.signing_in = Some((idx, self.epoch));
                self.spawn_auth(idx, self.epoch, addr, timeout, Purpose::SignIn);
            }
            Action::Subscribe { idx, .. } => self.subscribe(idx),
            Action::Connected { idx, .. } => {
                if let Some(m) = &self.s.metrics {
                    let all: Vec<String> = self
                        .st
                        .masters()
                        .iter()
                        .map(|a| format!("{}:{}", a.host, a.port))
                        .collect();
                    if let Some(cur) = all.get(idx) {
                        m.set_master(cur, &all);
                    }
                    m.sync_failovers(&self.st.leave_counts());
                }
                self.connected(idx)
            }
            Action::Disconnect { idx } => {
                if let Some(m) = &self.s.metrics {
                    m.sync_failovers(&self.st.leave_counts());
                }
                if self.signing_in.is_some_and(|(i, _)| i == idx) {
                    self.signing_in = None;
                }
                if self.conn.as_ref().is_some_and(|c| c.idx == idx) {
                    self.close();
                }
                self.epoch += 1;
                self.refreshing = false;
                self.rekey.cancel();
            }
            Action::SendAliveCheck { idx, id, timeout } => {
                let Some(addr) = self.addr(idx) else { return };
                let uri = match &self.conn {
                    Some(c) if c.idx == idx => net::tcp_uri(&c.ip, c.port),
                    _ => net::tcp_uri(&addr.host, addr.port),
                };
                let tx = self.ev_tx.clone();
                let mid = self.s.id.clone();
                tokio::spawn(async move {
                    let t0 = tokio::time::Instant::now();
                    let Some(ok) = ping(&mid, &uri, timeout).await else {
                        return; // timed out: the state machine times checks out itself
                    };
                    let rtt = t0.elapsed();
                    let _ = tx.send(Ev::Alive { idx, id, ok, rtt }).await;
                });
            }
            Action::SendFailbackPing {
                idx,
                addr,
                id,
                timeout,
            } => {
                let tx = self.ev_tx.clone();
                let mid = self.s.id.clone();
                tokio::spawn(async move {
                    let uri = net::tcp_uri(&addr.host, addr.port);
                    let ok = ping(&mid, &uri, timeout).await.unwrap_or(false);
                    let _ = tx.send(Ev::Failback { idx, id, ok }).await;
                });
            }
            Action::Log { level, message } => log_at(level, &message),
            Action::Exit { code, reason } => {
                error!("{reason}");
                self.exit = Some(code);
            }
            #[allow(unreachable_patterns)]
            other => debug!("unhandled failover action {other:?}"),
        }
    }

    fn spawn_auth(
        &self,
        idx: usize,
        epoch: u64,
        addr: MasterAddr,
        timeout: Duration,
        purpose: Purpose,
    ) {
        let (req, pending) = self.auth.build_request(&nonce());
        let body = salt_proto::encode(&req);
        let tx = self.ev_tx.clone();
        let mid = self.s.id.clone();
        // In failover mode a master whose port is closed is skipped at once (the next one
        // may be up); with one master (`str`), a sign-in sent before the master is up waits
        // for it, as Salt's does, instead of failing into a backoff.
        let fail_fast = self.s.failover.master_type == crate::failover::MasterType::Failover;
        tokio::spawn(async move {
            let ip = match tokio::net::lookup_host((addr.host.as_str(), addr.port)).await {
                Ok(mut it) => match it.next() {
                    Some(sa) => sa.ip().to_string(),
                    None => {
                        let _ = tx.send(Ev::Dns { idx, epoch }).await;
                        return;
                    }
                },
                Err(_) => {
                    let _ = tx.send(Ev::Dns { idx, epoch }).await;
                    return;
                }
            };
            let uri = net::tcp_uri(&ip, addr.port);
            let result = net::request_once(&mid, &uri, body, timeout, fail_fast).await;
            let _ = tx
                .send(Ev::Auth {
                    idx,
                    epoch,
                    purpose,
                    pending,
                    ip,
                    result,
                })
                .await;
        });
    }

    fn handle_ev(&mut self, ev: Ev) {
        let now = now_std();
        match ev {
            Ev::Dns { idx, epoch } => {
                if self.signing_in == Some((idx, epoch)) {
                    self.st.handle(Event::DnsFailed(idx), now);
                }
            }
            Ev::Auth {
                idx,
                epoch,
                purpose,
                pending,
                ip,
                result,
            } => self.auth_reply(idx, epoch, purpose, &pending, ip, result),
            Ev::Alive { idx, id, ok, rtt } => {
                if ok && let Some(m) = &self.s.metrics {
                    m.alive(rtt);
                }
                let e = if ok {
                    Event::AliveCheckOk { idx, id }
                } else {
                    Event::AliveCheckFailed { idx, id }
                };
                self.st.handle(e, now);
            }
            Ev::Failback { idx, id, ok } => {
                let e = if ok {
                    Event::FailbackPingOk { idx, id }
                } else {
                    Event::FailbackPingFailed { idx, id }
                };
                self.st.handle(e, now);
            }
            Ev::JobDone(load) => self.send_request(load, true),
            Ev::NeedsReauth(load) => {
                self.retry_requests.push(load);
                self.start_refresh();
            }
            // Signed in elsewhere since that return failed: send what is kept now.
            Ev::Kept(epoch) => {
                if let Some(idx) = self
                    .conn
                    .as_ref()
                    .filter(|c| c.epoch != epoch)
                    .map(|c| c.idx)
                {
                    self.connected_resend(idx);
                }
            }
        }
    }

    fn auth_reply(
        &mut self,
        idx: usize,
        epoch: u64,
        purpose: Purpose,
        pending: &PendingAuth,
        ip: String,
        result: Result<Vec<u8>, NetError>,
    ) {
        let now = now_std();
        let current = match purpose {
            Purpose::SignIn => self.signing_in == Some((idx, epoch)),
            Purpose::Refresh => self
                .conn
                .as_ref()
                .is_some_and(|c| c.idx == idx && c.epoch == epoch),
        };
        if !current {
            return;
        }
        let outcome = match result {
            Ok(bytes) => match salt_proto::decode(&bytes) {
                Ok(v) => self.auth.handle_reply(pending, &v),
                Err(_) => Err(AuthError::Malformed),
            },
            Err(NetError::Unreachable) => {
                info!("Master {ip} refused the connection or dropped it");
                match purpose {
                    Purpose::SignIn => self.st.handle(Event::SignInFailed(idx), now),
                    Purpose::Refresh => self.refresh_failed(),
                }
                return;
            }
            Err(NetError::Timeout) => {
                warn!("SaltReqTimeoutError: Message timed out");
                if purpose == Purpose::Refresh {
                    self.refresh_failed();
                }
                return; // the state machine times the sign-in out itself
            }
            Err(e) => {
                error!("Sign-in attempt failed: {e}");
                match purpose {
                    Purpose::SignIn => self.st.handle(Event::SignInFailed(idx), now),
                    Purpose::Refresh => self.refresh_failed(),
                }
                return;
            }
        };
        let event = match outcome {
            Ok(AuthOutcome::Accepted(creds)) => {
                for note in &creds.notes {
                    match note {
                        AuthNote::PubSigVerified => debug!(
                            "Successfully verified signature of master public key with verification public key {}.pub",
                            self.s.auth.master_sign_key_name
                        ),
                        AuthNote::SignedPubkeyReceived => {
                            info!("Received signed and verified master pubkey from master {ip}");
                        }
                        AuthNote::DecryptingAes => debug!("Decrypting the current master AES key"),
                        #[allow(unreachable_patterns)]
                        _ => {}
                    }
                }
                for action in &creds.actions {
                    if let AuthAction::WriteMasterPub(text) = action {
                        // Durable writes wait for the disk (seconds under I/O load): never on
                        // the loop that times alive checks.
                        let path = self.s.pki_dir.join("minion_master.pub");
                        let text = text.clone();
                        tokio::task::spawn_blocking(move || {
                            if let Err(e) =
                                salt_pki::files::atomic_write(&path, text.as_bytes(), 0o644)
                            {
                                error!("Unable to write {}: {e}", path.display());
                            }
                        });
                    }
                }
                info!("Authentication with master at {ip} successful!");
                let session = Session {
                    id: self.s.id.clone(),
                    aes: creds.aes.clone(),
                    session: creds.session.clone(),
                    master_pub: creds.master_pub.clone(),
                    tok: self.tok.clone(),
                    enc_algo: self.s.auth.enc_algo,
                    sig_algo: self.s.auth.sig_algo,
                };
                match purpose {
                    Purpose::SignIn => {
                        let port = self.addr(idx).map_or(4506, |a| a.port);
                        self.close();
                        let req = match net::req_client(&self.s.id, &net::tcp_uri(&ip, port)) {
                            Ok(r) => r,
                            Err(e) => {
                                error!("Unable to create the request channel: {e}");
                                self.st.handle(Event::SignInFailed(idx), now);
                                return;
                            }
                        };
                        self.serial = 0;
                        self.conn = Some(Conn {
                            idx,
                            epoch,
                            ip,
                            port,
                            session,
                            publish_port: creds.publish_port,
                            req,
                            sub: None,
                        });
                        self.signing_in = None;
                        Event::SignInAccepted(idx)
                    }
                    Purpose::Refresh => {
                        if let Some(c) = &mut self.conn {
                            if c.session.aes.key_string() != session.aes.key_string() {
                                debug!("The master's aes key has changed.");
                                self.serial = 0;
                            }
                            c.session = session;
                        }
                        self.refresh_done();
                        return;
                    }
                }
            }
            Ok(AuthOutcome::Retry) => {
                // The state machine logs Salt's "has cached the public key" line.
                if purpose == Purpose::Refresh {
                    self.refresh_failed();
                    return;
                }
                Event::SignInPending(idx)
            }
            Ok(_) => Event::SignInFailed(idx),
            Err(e) => {
                self.log_auth_error(&e);
                if purpose == Purpose::Refresh {
                    self.refresh_failed();
                    if e == AuthError::Rejected {
                        // The key was deleted or rejected while connected: treat as a lost
                        // master so the state machine signs in again (and exits if rejected).
                        if let Some(c) = &self.conn {
                            let idx = c.idx;
                            self.st.handle(Event::SubDisconnected(idx), now);
                        }
                    }
                    return;
                }
                match e {
                    AuthError::Rejected => Event::SignInRejected(idx),
                    AuthError::Full => Event::SignInFull(idx),
                    AuthError::FingerMismatch { .. } => {
                        self.exit = Some(EXIT_FINGER_MISMATCH);
                        return;
                    }
                    _ => Event::SignInFailed(idx),
                }
            }
        };
        self.st.handle(event, now);
    }

    fn log_auth_error(&self, e: &AuthError) {
        let mpub = self.s.pki_dir.join("minion_master.pub");
        match e {
            _ if e.is_master_key_failure() => {
                match e {
                    AuthError::PubSigInvalid => debug!("Failed to verify signature of public key"),
                    AuthError::SignKeyMissing(name) => error!(
                        "Verification public key {name}.pub does not exist. You need to copy it from the master to the minions pki directory"
                    ),
                    AuthError::AuthDeps {
                        master_signs: true, ..
                    } => error!(
                        "The masters sent its public-key signature, but signature verification is not enabled on the minion. Either enable signature verification on the minion or disable signing the public key on the master!"
                    ),
                    AuthError::AuthDeps { .. } => error!(
                        "The master did not send its public-key signature, but signature verification is enabled on the minion. Either disable signature verification on the minion or enable signing the public on the master!"
                    ),
                    AuthError::MasterKeyChanged => error!(
                        "The master key has changed, the salt master could have been subverted, verify salt master's public key"
                    ),
                    AuthError::TokenMismatch => {
                        error!("The master failed to decrypt the random minion token");
                    }
                    other => debug!("{other}"),
                }
                error!(
                    critical = true,
                    "The Salt Master server's public key did not authenticate!\nThe master may need to be updated if it is a version of Salt lower than {}, or\nIf you are confident that you are connecting to a valid Salt Master, then remove the master public key and restart the Salt Minion.\nThe master public key can be found at:\n{}",
                    crate::grains::SALT_VERSION,
                    mpub.display()
                );
            }
            AuthError::Signature => {
                error!(critical = true, "The payload signature did not validate.")
            }
            AuthError::Nonce => error!(critical = true, "The payload nonce did not validate."),
            // The state machine logs Salt's rejection lines (it knows about rejected_retry).
            AuthError::Rejected => {}
            AuthError::BadEncAlgo => error!(
                "This minion is using a encryption algorithm that is not supported by it's Master. Please check your minion configutation."
            ),
            AuthError::BadSigAlgo => error!(
                "This minion is using a signing algorithm that is not supported by it's Master. Please check your minion configutation."
            ),
            AuthError::FingerMismatch { expected, actual } => error!(
                critical = true,
                "The specified fingerprint in the master configuration file:\n{expected}\nDoes not match the authenticating master's key:\n{actual}\nVerify that the configured fingerprint matches the fingerprint of the correct master and that this minion is not subject to a man-in-the-middle attack."
            ),
            other => error!("Sign-in attempt failed: {other}"),
        }
    }

    fn start_refresh(&mut self) {
        if self.refreshing {
            return;
        }
        let Some(c) = &self.conn else {
            self.retry_publishes.clear();
            self.retry_requests.clear();
            return;
        };
        self.refreshing = true;
        debug!("Re-authenticating with the master to refresh the AES keys");
        let addr = MasterAddr::new(c.ip.clone(), c.port);
        self.spawn_auth(
            c.idx,
            c.epoch,
            addr,
            self.s.failover.auth_timeout,
            Purpose::Refresh,
        );
    }

    fn refresh_done(&mut self) {
        self.refreshing = false;
        for frames in std::mem::take(&mut self.retry_publishes) {
            self.handle_publish(&frames, false);
        }
        for load in std::mem::take(&mut self.retry_requests) {
            self.send_request(load, false);
        }
    }

    fn refresh_failed(&mut self) {
        self.refreshing = false;
        if !self.retry_publishes.is_empty() || !self.retry_requests.is_empty() {
            warn!("Re-authentication failed: dropping messages that need the new keys");
        }
        self.retry_publishes.clear();
        for load in std::mem::take(&mut self.retry_requests) {
            self.kept.keep(load);
        }
    }

    fn subscribe(&mut self, idx: usize) {
        let heartbeat = self.st.sub_heartbeat();
        let Some(c) = self.conn.as_mut().filter(|c| c.idx == idx) else {
            return;
        };
        // Salt: a configured publish_port other than 4506 wins over the reply's.
        let port = match self.s.publish_port {
            Some(p) if p != 4506 => p,
            _ => c.publish_port,
        };
        let topics = if self.s.zmq_filtering {
            vec![b"broadcast".to_vec(), self.topic.as_bytes().to_vec()]
        } else {
            vec![Vec::new()]
        };
        let opts = SubOptions {
            uri: net::tcp_uri(&c.ip, port),
            topics,
            heartbeat,
            identity: self.s.id.as_bytes().to_vec(),
        };
        debug!(
            "Connecting the Minion to the Master publish port, using the URI: {}",
            opts.uri
        );
        match net::spawn_sub(opts, c.epoch, self.sub_tx.clone()) {
            Ok(h) => c.sub = Some(h),
            Err(e) => {
                error!("Unable to connect to the master publish port: {e}");
                self.st.handle(Event::SubDisconnected(idx), now_std());
            }
        }
    }

    fn connected_resend(&mut self, idx: usize) {
        if self.conn.as_ref().is_some_and(|c| c.idx == idx) {
            for load in self.kept.take() {
                self.send_request(load, true);
            }
        }
    }

    fn connected(&mut self, idx: usize) {
        self.connected_resend(idx);
        let Some(c) = self.conn.as_ref().filter(|c| c.idx == idx) else {
            return;
        };
        let session = c.session.clone();
        let req = c.req.clone();
        let s = self.s.clone();
        let key = self.key.clone();
        let tx = self.ev_tx.clone();
        tokio::spawn(async move {
            if s.request_pillar {
                fetch_pillar(&s, &key, &session, &req).await;
            }
            let data = format!("Minion {} started at {}", s.id, asctime(unix_now()));
            let mut tags = Vec::new();
            if s.legacy_start_event {
                tags.push("minion_start".to_owned());
            }
            tags.push(format!("salt/minion/{}/start", s.id));
            for tag in tags {
                let load = Value::Map(vec![
                    ("id".into(), s.id.as_str().into()),
                    ("cmd".into(), "_minion_event".into()),
                    ("pretag".into(), Value::Nil),
                    ("tok".into(), Value::Binary(session.tok.as_ref().clone())),
                    ("data".into(), data.as_str().into()),
                    ("tag".into(), tag.into()),
                ]);
                if let Err(RequestError::Channel(
                    ChannelError::Decrypt | ChannelError::MasterError(_),
                )) = send_aes(&session, &req, &load, s.return_timeout, s.return_tries).await
                {
                    let _ = tx.send(Ev::NeedsReauth(load)).await;
                }
            }
            info!("Minion is ready to receive requests!");
        });
    }

    fn handle_sub(&mut self, epoch: u64, note: SubNote) {
        let Some(idx) = self
            .conn
            .as_ref()
            .filter(|c| c.epoch == epoch)
            .map(|c| c.idx)
        else {
            return;
        };
        match note {
            SubNote::Message(frames) => self.handle_publish(&frames, true),
            SubNote::Connected => self.st.handle(Event::SubConnected(idx), now_std()),
            SubNote::Disconnected => self.st.handle(Event::SubDisconnected(idx), now_std()),
        }
    }

    fn handle_publish(&mut self, frames: &[Vec<u8>], may_retry: bool) {
        let Some(c) = &self.conn else { return };
        let load = match c.session.open_publish(
            frames,
            &self.topic,
            self.s.sign_pub_messages,
            &mut self.serial,
        ) {
            Ok(Some(load)) => load,
            Ok(None) => return,
            Err(ChannelError::Decrypt) if may_retry => {
                if self.retry_publishes.len() < MAX_HELD_PUBLISHES {
                    self.retry_publishes.push(frames.to_vec());
                }
                if !self.refreshing
                    && let Some(delay) = self.rekey.handle_stale_key(now_std())
                {
                    debug!(
                        "Publish did not decrypt: the master AES key may have rotated; \
                         re-authenticating in {:.3}s",
                        delay.as_secs_f64()
                    );
                }
                return;
            }
            Err(ChannelError::Replay(s)) => {
                error!(
                    critical = true,
                    "A message with an invalid serial was received.\nthis serial: {s}\nlast serial: {}\nThe minion will not honor this request.",
                    self.serial
                );
                return;
            }
            Err(e) => {
                debug!("Dropping publish: {e}");
                return;
            }
        };
        let job = match Job::from_load(load) {
            Ok(j) => j,
            Err(e) => {
                debug!("Ignoring publish: {e}");
                return;
            }
        };
        let pillar = self
            .s
            .pillar
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if !job.targets(&self.s.id, &self.s.grains, pillar.as_ref()) {
            debug!("Publish target does not match this minion");
            return;
        }
        if !self.jids.insert(&job.jid) {
            debug!("jid {} already executed, ignoring", job.jid);
            return;
        }
        info!(
            "User {} Executing command {} with jid {}",
            job.user
                .as_ref()
                .map_or_else(|| "UNKNOWN".to_owned(), crate::matcher::py_str),
            job.fun,
            job.jid
        );
        let ctx = ExecContext {
            id: self.s.id.clone(),
            grains: self.s.grains.clone(),
        };
        let tx = self.ev_tx.clone();
        tokio::spawn(async move {
            if let Some(ret) = crate::job::run(&job, &ctx).await {
                let _ = tx.send(Ev::JobDone(ret)).await;
            }
        });
    }

    /// Send an AES request (a return or an event) to the current master.
    fn send_request(&mut self, load: Value, may_retry: bool) {
        let Some(c) = &self.conn else {
            if !self.kept.keep(load) {
                warn!("Not connected to a master: dropping an event");
            }
            return;
        };
        let session = c.session.clone();
        let req = c.req.clone();
        let (timeout, tries) = (self.s.return_timeout, self.s.return_tries);
        let tx = self.ev_tx.clone();
        let (kept, epoch) = (self.kept.clone(), c.epoch);
        tokio::spawn(async move {
            let jid = crate::matcher::map_lookup(&load, "jid").map(crate::matcher::py_str);
            if let Some(j) = &jid {
                info!("Returning information for job: {j}");
            }
            match send_aes(&session, &req, &load, timeout, tries).await {
                Ok(_) => {}
                Err(RequestError::Channel(
                    ChannelError::Decrypt | ChannelError::MasterError(_),
                )) if may_retry => {
                    let _ = tx.send(Ev::NeedsReauth(load)).await;
                }
                Err(RequestError::Timeout) => {
                    warn!(
                        "The minion failed to return the job information for job {}. This is often due to the master being shut down or overloaded. If the master is running, consider increasing the worker_threads value.",
                        jid.unwrap_or_default()
                    );
                    if kept.keep(load) {
                        let _ = tx.send(Ev::Kept(epoch)).await;
                    }
                }
                Err(e) => {
                    error!("Request to the master failed: {e}");
                    if kept.keep(load) {
                        let _ = tx.send(Ev::Kept(epoch)).await;
                    }
                }
            }
        });
    }
}

/// Failure of an AES request.
#[derive(Debug, thiserror::Error)]
enum RequestError {
    #[error("request timed out")]
    Timeout,
    #[error("{0}")]
    Net(NetError),
    #[error("{0}")]
    Channel(ChannelError),
}

/// Send one AES request with `tries` attempts (new nonce each), return the opened reply.
async fn send_aes(
    session: &Session,
    req: &salt_transport::ReqClient,
    load: &Value,
    timeout: Duration,
    tries: u32,
) -> Result<Value, RequestError> {
    let mut last = RequestError::Timeout;
    for _ in 0..tries.max(1) {
        let n = nonce();
        let body = session.aes_request(load, &n, unix_now());
        match net::request(req, body, timeout).await {
            Ok(reply) => {
                return session
                    .open_reply(&reply, &n)
                    .map_err(RequestError::Channel);
            }
            Err(NetError::Timeout) => last = RequestError::Timeout,
            Err(e) => last = RequestError::Net(e),
        }
    }
    Err(last)
}

async fn fetch_pillar(
    s: &MinionSettings,
    key: &PrivateKey,
    session: &Session,
    req: &salt_transport::ReqClient,
) {
    let load = Value::Map(vec![
        ("cmd".into(), "_pillar".into()),
        ("id".into(), s.id.as_str().into()),
        ("grains".into(), (*s.grains).clone()),
        ("saltenv".into(), Value::Nil),
        ("pillarenv".into(), Value::Nil),
        ("pillar_override".into(), Value::Map(vec![])),
        ("extra_minion_data".into(), Value::Map(vec![])),
        ("ver".into(), "2".into()),
    ]);
    let n = nonce();
    let body = session.aes_request(&load, &n, unix_now());
    match net::request(req, body, s.return_timeout).await {
        Ok(reply) => match open_pillar(
            &reply,
            &n,
            key,
            &session.master_pub,
            s.auth.enc_algo,
            s.auth.sig_algo,
        ) {
            Ok(p) => {
                debug!(
                    "Received pillar with {} top-level keys",
                    p.as_map().map_or(0, Vec::len)
                );
                *s.pillar.write().unwrap_or_else(|e| e.into_inner()) = Some(p);
            }
            Err(e) => warn!("Pillar request failed: {e}"),
        },
        Err(e) => warn!("Pillar request failed: {e}"),
    }
}

/// Salt's clear `ping` (alive check / `status.ping_master`): any reply counts. `None` when
/// it timed out, `Some(false)` when it failed early (refused, dropped, socket error).
async fn ping(id: &str, uri: &str, timeout: Duration) -> Option<bool> {
    let body = clear_request(Value::Map(vec![("cmd".into(), "ping".into())]));
    match net::request_once(id, uri, body, timeout, true).await {
        Ok(_) => Some(true),
        Err(NetError::Timeout) => None,
        Err(_) => Some(false),
    }
}

fn log_at(level: tracing::Level, message: &str) {
    match level {
        tracing::Level::ERROR => error!("{message}"),
        tracing::Level::WARN => warn!("{message}"),
        tracing::Level::INFO => info!("{message}"),
        _ => debug!("{message}"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn asctime_like_python() {
        // python: time.asctime(time.gmtime(0)) == 'Thu Jan  1 00:00:00 1970'
        assert_eq!(asctime(0), "Thu Jan  1 00:00:00 1970");
        // time.asctime(time.gmtime(1795230641)) == "Sat Nov 21 03:10:41 2026"
        assert_eq!(asctime(1_795_230_641), "Sat Nov 21 03:10:41 2026");
        assert_eq!(asctime(951_782_400), "Tue Feb 29 00:00:00 2000");
    }
}
