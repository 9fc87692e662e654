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
//! ([`salt_failover::rekey`]: spread so a fleet does not stampede), after which the held publish is
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
use crate::job::{JidQueue, Job};
use crate::modules::ExecContext;
use crate::net::{self, NetError, SubNote, SubOptions};
use salt_failover::rekey::ReauthSpread;
use salt_failover::{Action, CheckId, Event, FailoverConfig, FailoverState, MasterAddr};

mod actions;
mod auth;
mod session;

use session::{log_at, ping};

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
    /// `minion_sign_messages` (sign every request, Salt 3008's `sig`).
    pub minion_sign_messages: bool,
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
    /// master rotated its AES key (capped, see [`salt_failover::rekey`]).
    pub random_reauth_delay: Duration,
    /// Prometheus metrics to keep up to date (`metrics_port`), if any.
    pub metrics: Option<Arc<crate::metrics::MinionMetrics>>,
    /// TCP keepalive of every connection to a master (`tcp_keepalive*`).
    pub keepalive: salt_transport::Keepalive,
    /// `cachedir` (the remote file client's cache is `cachedir/files/`).
    pub cachedir: PathBuf,
    /// The minion config file's options as written, the jobs' `opts` (templates' `opts`, the
    /// state system's `failhard`, `master_tops_first`...), as `salt-call` hands them over.
    pub opts: Arc<Value>,
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
pub enum DriverError {
    /// Loading or creating the minion key failed.
    #[error("minion key: {0}")]
    Keys(#[from] salt_pki::Error),
    /// The failover configuration is invalid.
    #[error("master configuration: {0}")]
    Config(#[from] salt_failover::ConfigError),
    /// A start-up step's thread failed (panicked).
    #[error("start-up: {0}")]
    Startup(String),
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
    /// A job ended, with its return (none for a job that returns nothing).
    JobDone(Option<Value>),
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
    serial: salt_proto::SerialGuard,
    jids: JidQueue,
    topic: String,
    refreshing: bool,
    retry_publishes: Vec<Vec<Vec<u8>>>,
    retry_requests: Vec<Value>,
    /// Returns no master acknowledged yet, sent again after the next sign-in (kept.rs).
    kept: crate::kept::Kept,
    rekey: ReauthSpread,
    exit: Option<i32>,
    /// One clone per running job task, dropped when it ends (or panics): no job runs when
    /// this is the only reference. Once none runs, the code they ran is unmapped at
    /// `trim_at` (pageout.rs `trim_idle`).
    job_tokens: Arc<()>,
    trim_at: Option<std::time::Instant>,
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

/// The minion key (generated and written if missing), the cached master key and the
/// master's signing key: the start-up steps that touch the disk.
fn load_keys(
    pki_dir: &std::path::Path,
    keysize: u32,
    sign_key_name: &str,
) -> Result<(PrivateKey, Option<String>, Option<salt_pki::PublicKey>), salt_pki::Error> {
    crate::startup::step("load or generate the minion key");
    let key = salt_pki::files::load_or_generate(pki_dir, "minion", keysize)?;
    debug!(
        "Loaded minion key: {}",
        pki_dir.join("minion.pem").display()
    );
    crate::startup::step("read the cached master keys");
    let cached = std::fs::read_to_string(pki_dir.join("minion_master.pub")).ok();
    let sign_pub =
        salt_pki::files::read_public_key(&pki_dir.join(format!("{sign_key_name}.pub"))).ok();
    Ok((key, cached, sign_pub))
}

fn clear_request(load: Value) -> Vec<u8> {
    let env = salt_proto::msg::RequestEnvelope::Clear(salt_proto::msg::ClearRequest::new(load));
    salt_proto::encode(&env.to_value())
}

/// Run the minion until `shutdown` completes or the master tells it to exit.
pub async fn run(
    settings: MinionSettings,
    shutdown: impl Future<Output = ()>,
) -> Result<RunOutcome, DriverError> {
    // Key generation (CPU) and its durable write (fsync: seconds, at worst minutes, while
    // other processes flush gigabytes) run on a blocking thread: the runtime keeps handling
    // SIGTERM, and the start-up watchdog reports that thread's state if it stalls.
    tokio::pin!(shutdown);
    let load = tokio::task::spawn_blocking({
        let pki_dir = settings.pki_dir.clone();
        let (keysize, sign_key) = (settings.keysize, settings.auth.master_sign_key_name.clone());
        move || load_keys(&pki_dir, keysize, &sign_key)
    });
    let (key, cached, sign_pub) = tokio::select! {
        biased;
        () = &mut shutdown => {
            info!("Shutting down the Salt Minion");
            return Ok(RunOutcome::Shutdown);
        }
        r = load => r.map_err(|e| DriverError::Startup(e.to_string()))??,
    };
    let tok = Arc::new(minion_tok(&key)?);
    let auth = AuthClient::new(settings.auth.clone(), key.clone(), cached, sign_pub);
    let st = FailoverState::new(settings.failover.clone(), settings.rng_seed, now_std())?;
    let (ev_tx, mut ev_rx) = mpsc::channel(64);
    let (sub_tx, mut sub_rx) = mpsc::channel(64);
    let topic = topic_for(&settings.id);
    let rekey = ReauthSpread::new(
        settings.random_reauth_delay,
        settings.rng_seed.rotate_left(17) ^ 0x7e4e_7e4e,
    );
    let kept_dir = settings.cachedir.join("kept_returns");
    let kept = tokio::task::spawn_blocking(move || crate::kept::Kept::persistent(&kept_dir))
        .await
        .map_err(|e| DriverError::Startup(e.to_string()))?;
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
        serial: salt_proto::SerialGuard::new(),
        jids: JidQueue::default(),
        topic,
        refreshing: false,
        retry_publishes: Vec::new(),
        retry_requests: Vec::new(),
        kept,
        rekey,
        exit: None,
        job_tokens: Arc::new(()),
        trim_at: None,
    };
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
        let deadline = settle_until.or_else(|| {
            [d.st.poll_timeout(), d.rekey.poll_timeout(), d.trim_at]
                .into_iter()
                .flatten()
                .min()
        });
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
                if d.trim_at.is_some_and(|t| now >= t) {
                    d.trim_at = None;
                    // On the runtime's thread: a procfs read and a few madvise calls, about a
                    // millisecond once per idle period; a blocking-pool thread would map code
                    // back when it exits after the trim.
                    if d.idle() {
                        crate::pageout::trim_idle();
                    }
                }
            }
        }
    }
}

impl Driver {
    /// No job task is running.
    fn idle(&self) -> bool {
        Arc::strong_count(&self.job_tokens) == 1
    }

    fn close(&mut self) {
        if let Some(c) = self.conn.take()
            && let Some(h) = c.sub
        {
            h.abort();
        }
        // The process ends next: the kept returns' files must be on disk first (blocking,
        // once, at shutdown).
        self.kept.flush();
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
}
