//! The swarm: N simulated minions in one process, speaking Salt's real protocol (sign-in,
//! SUB, publish decryption, target match by id, `_return`) to our master or real Salt's.
//!
//! # How it scales
//!
//! Threads, not tasks: `threads` OS threads each own a share of the minions and drive all
//! their ZeroMQ sockets with one `zmq::poll` loop over the sockets' `ZMQ_FD` descriptors
//! (salt-transport's one-thread-per-socket
//! design does not stretch to 20,000 sockets). Per minion there is one SUB socket (the
//! master's fan-out cost is per connection, so it is not shared); requests (sign-in and
//! `_return`) go through DEALER sockets shared by `minions_per_req` minions — a DEALER sends
//! `[empty, body]` exactly like a REQ, the master sees one peer with several requests in
//! flight, and sign-in replies are routed back to their minion by the nonce in the signed
//! inner load. libzmq allows 1,023 sockets per context (the `zmq` crate cannot raise it), so
//! each thread opens a new context (one more I/O thread) per 1,000 sockets. Each libzmq socket costs two file descriptors (TCP + mailbox), and the hard
//! `nofile` limit here is 20,000, so one process holds at most ~8,000 minions; run several
//! processes (`id_start`) for more.

pub mod highstate;
pub mod keys;
pub mod signin;
mod worker;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmpv::Value;

pub use signin::Mode;

/// What each minion answers to any job.
#[derive(Debug, Clone, PartialEq)]
pub enum ReturnValue {
    /// `True` (what `test.ping` returns).
    True,
    /// A string.
    Text(String),
    /// A string of N `x` characters (return size tests).
    Bytes(usize),
}

impl ReturnValue {
    /// The msgpack value.
    pub fn value(&self) -> Value {
        match self {
            Self::True => Value::Boolean(true),
            Self::Text(t) => Value::from(t.as_str()),
            Self::Bytes(n) => Value::from("x".repeat(*n)),
        }
    }
}

impl std::str::FromStr for ReturnValue {
    type Err = String;
    /// `true`, `text:STRING` or `bytes:N`.
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "true" {
            Ok(Self::True)
        } else if let Some(t) = s.strip_prefix("text:") {
            Ok(Self::Text(t.to_owned()))
        } else if let Some(n) = s.strip_prefix("bytes:") {
            n.parse()
                .map(Self::Bytes)
                .map_err(|e| format!("bytes:N: {e}"))
        } else {
            Err("want true, text:STRING or bytes:N".to_owned())
        }
    }
}

/// Swarm settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Number of minions.
    pub minions: usize,
    /// Index of the first minion (ids and keys), to split a swarm over processes.
    pub id_start: usize,
    /// Minion id prefix: ids are `{prefix}{index:05}`.
    pub id_prefix: String,
    /// Master host (IPv4/IPv6 literal or name libzmq resolves).
    pub master: String,
    /// Master `ret_port` (4506).
    pub ret_port: u16,
    /// Master `publish_port` (4505).
    pub publish_port: u16,
    /// Sign-ins in flight at once (over the whole process).
    pub concurrency: usize,
    /// Worker threads driving sockets.
    pub threads: usize,
    /// Minions sharing one request DEALER.
    pub minions_per_req: usize,
    /// Key cache directory.
    pub key_cache: PathBuf,
    /// Distinct keys to use (minion `id_start + i` uses key `(id_start + i) % keys`);
    /// generated if missing unless `cached_only`.
    pub keys: usize,
    /// Use only keys already in the cache.
    pub cached_only: bool,
    /// Threads generating missing keys.
    pub keygen_threads: usize,
    /// `master_sign.pub` of a master with `master_sign_pubkey: True`.
    pub master_sign_pub: Option<PathBuf>,
    /// The master's public key known from the start (a minion's cached `minion_master.pub`):
    /// every first sign-in then carries a token, as a returning minion's does.
    pub master_pub: Option<Arc<str>>,
    /// Sign-in reply checks.
    pub mode: Mode,
    /// Decrypt the session key at sign-in (else at the first return).
    pub eager_session: bool,
    /// What each minion returns.
    pub ret: ReturnValue,
    /// Connect each minion's SUB socket only after its first sign-in, as a Python minion
    /// does (default: all at start, so a fan-out finds every minion listening).
    pub sub_at_signin: bool,
    /// Stop after this long.
    pub run_time: Option<Duration>,
    /// Stop once this many distinct jobs were received and every return was acknowledged.
    pub exit_after: Option<u64>,
    /// Stop once every minion has signed in.
    pub exit_after_signin: bool,
    /// Print a stats line this often.
    pub report_every: Duration,
    /// Wait between retries of a pending sign-in (Salt: `acceptance_wait_time`).
    pub retry_wait: Duration,
    /// Give up on a sign-in reply after this long and send a new request.
    pub auth_timeout: Duration,
    /// `random_reauth_delay` of our minion: after a publish that no longer decrypts, wait a
    /// random delay in `[0, min(this, 2 s)]` before signing in again
    /// (`salt_failover::rekey`); zero: at once, as a Python minion.
    pub reauth_spread: Duration,
    /// Highstate mode: a publish of `state.apply` / `state.highstate` runs this plan
    /// ([`highstate`]); each minion then has its own request socket.
    pub highstate: Option<Arc<highstate::HighstatePlan>>,
}

impl Config {
    /// Defaults for `minions` minions against `master`.
    pub fn new(minions: usize, master: impl Into<String>, key_cache: PathBuf) -> Self {
        Self {
            minions,
            id_start: 0,
            id_prefix: "swarm-".to_owned(),
            master: master.into(),
            ret_port: 4506,
            publish_port: 4505,
            concurrency: 64,
            threads: 2,
            minions_per_req: 8,
            key_cache,
            keys: minions,
            cached_only: false,
            keygen_threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            master_sign_pub: None,
            master_pub: None,
            mode: Mode::Lean,
            eager_session: true,
            ret: ReturnValue::True,
            sub_at_signin: false,
            run_time: None,
            exit_after: None,
            exit_after_signin: false,
            report_every: Duration::from_secs(1),
            retry_wait: Duration::from_secs(1),
            auth_timeout: Duration::from_secs(60),
            reauth_spread: Duration::ZERO,
            highstate: None,
        }
    }

    /// The id of minion `i` (0-based within this process).
    pub fn id_of(&self, i: usize) -> String {
        format!("{}{:05}", self.id_prefix, self.id_start + i)
    }
}

/// Swarm failures.
#[derive(Debug, thiserror::Error)]
pub enum SwarmError {
    /// The key cache.
    #[error(transparent)]
    Keys(#[from] keys::KeyCacheError),
    /// `master_sign.pub`.
    #[error("master_sign.pub: {0}")]
    SignPub(salt_pki::Error),
    /// A ZeroMQ call.
    #[error("zmq: {0}")]
    Zmq(#[from] zmq::Error),
    /// A worker thread could not start.
    #[error("thread: {0}")]
    Thread(std::io::Error),
}

/// Counters shared by the worker threads (monotonic).
#[derive(Debug, Default)]
pub struct Stats {
    /// Sign-in requests sent.
    pub auth_sent: AtomicU64,
    /// Successful sign-ins (first ones and re-auths).
    pub signins: AtomicU64,
    /// Minions signed in at least once.
    pub first_signins: AtomicU64,
    /// Microseconds since start of the latest first sign-in (stored before `first_signins`
    /// grows): the storm's end to the microsecond, not to the next stats poll.
    pub last_first_signin_us: AtomicU64,
    /// Sign-ins after the first (after a key rotation).
    pub reauths: AtomicU64,
    /// Pending/retry replies.
    pub retries: AtomicU64,
    /// Failed sign-ins (refused replies, timeouts).
    pub auth_failures: AtomicU64,
    /// Publishes decrypted (per minion).
    pub pubs_decrypted: AtomicU64,
    /// Publishes that did not decrypt (stale key: re-auth).
    pub pub_decrypt_failures: AtomicU64,
    /// Jobs that targeted a minion.
    pub jobs_matched: AtomicU64,
    /// `_return` requests sent.
    pub returns_sent: AtomicU64,
    /// Replies to `_return` received.
    pub returns_acked: AtomicU64,
    /// Replies to `_return` that are an error string (e.g. "bad load": the master refused
    /// the request), counted apart from `returns_acked`.
    pub returns_refused: AtomicU64,
    /// Distinct job ids seen by this process.
    pub jobs_seen: AtomicU64,
    /// Microseconds since start of the first and last re-auth.
    pub reauth_first_us: AtomicU64,
    /// See `reauth_first_us`.
    pub reauth_last_us: AtomicU64,
    /// Highstates started (highstate mode).
    pub hs_started: AtomicU64,
    /// Highstates whose `_return` the master acknowledged.
    pub hs_done: AtomicU64,
    /// Highstates given up (an error reply, a reply that does not open, a timeout).
    pub hs_failed: AtomicU64,
    /// Of those, the ones given up on a timeout.
    pub hs_timeouts: AtomicU64,
    /// Highstate requests sent (every step, the `_return` included).
    pub hs_requests: AtomicU64,
    /// Microseconds since start of the first highstate started and of the last one done.
    pub hs_first_us: AtomicU64,
    /// See `hs_first_us`.
    pub hs_last_us: AtomicU64,
}

/// State shared by the workers.
pub(crate) struct Hub {
    pub stats: Stats,
    pub start: Instant,
    pub stop: AtomicBool,
    pub jids: Mutex<std::collections::HashSet<String>>,
    pub inflight_auth: std::sync::atomic::AtomicUsize,
}

impl Hub {
    pub(crate) fn micros(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX)
    }
}

/// The outcome of a run.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Minions that signed in at least once.
    pub signed_in: u64,
    /// Seconds the swarm ran.
    pub elapsed_secs: f64,
    /// Publishes decrypted (per minion).
    pub pubs_decrypted: u64,
    /// `_return`s sent.
    pub returns_sent: u64,
    /// `_return`s acknowledged by the master.
    pub returns_acked: u64,
    /// Re-auths (after the first sign-in).
    pub reauths: u64,
}

fn line(hub: &Hub, cfg: &Config, last: &mut (u64, Instant)) -> String {
    let s = &hub.stats;
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let signins = g(&s.signins);
    let now = Instant::now();
    let dt = now.duration_since(last.1).as_secs_f64().max(1e-6);
    let rate = (signins - last.0) as f64 / dt;
    *last = (signins, now);
    let span = (g(&s.reauth_last_us).saturating_sub(g(&s.reauth_first_us))) as f64 / 1e6;
    format!(
        "swarm t={:.1} minions={} signed_in={} signins={} signins_per_s={:.1} auth_sent={} retries={} auth_failures={} reauths={} reauth_span_s={:.3} pubs_decrypted={} pub_decrypt_failures={} jobs_matched={} returns_sent={} returns_acked={} jobs_seen={} returns_refused={} hs_started={} hs_done={} hs_failed={} hs_timeouts={} hs_requests={} hs_span_s={:.3}",
        hub.start.elapsed().as_secs_f64(),
        cfg.minions,
        g(&s.first_signins),
        signins,
        rate,
        g(&s.auth_sent),
        g(&s.retries),
        g(&s.auth_failures),
        g(&s.reauths),
        span,
        g(&s.pubs_decrypted),
        g(&s.pub_decrypt_failures),
        g(&s.jobs_matched),
        g(&s.returns_sent),
        g(&s.returns_acked),
        g(&s.jobs_seen),
        g(&s.returns_refused),
        g(&s.hs_started),
        g(&s.hs_done),
        g(&s.hs_failed),
        g(&s.hs_timeouts),
        g(&s.hs_requests),
        (g(&s.hs_last_us).saturating_sub(g(&s.hs_first_us))) as f64 / 1e6,
    )
}

/// Run the swarm until `run_time`, `exit_after` or `exit_after_signin` says stop (or
/// forever). Stats lines go to `out` every `report_every`.
pub fn run(cfg: Config, out: &mut dyn FnMut(&str)) -> Result<Summary, SwarmError> {
    let t_keys = Instant::now();
    let keys = keys::load(
        &cfg.key_cache,
        cfg.keys.max(1).min(cfg.id_start + cfg.minions.max(1)),
        cfg.keygen_threads,
        cfg.cached_only,
    )?;
    out(&format!(
        "swarm keys={} loaded_in_s={:.2}",
        keys.len(),
        t_keys.elapsed().as_secs_f64()
    ));
    let sign_pub = match &cfg.master_sign_pub {
        Some(p) => Some(salt_pki::files::read_public_key(p).map_err(SwarmError::SignPub)?),
        None => None,
    };
    let shared = Arc::new(signin::Shared::new(sign_pub));
    let hub = Arc::new(Hub {
        stats: Stats::default(),
        start: Instant::now(),
        stop: AtomicBool::new(false),
        jids: Mutex::new(Default::default()),
        inflight_auth: Default::default(),
    });
    let keys = Arc::new(keys);
    let cfg = Arc::new(cfg);
    let mut handles = Vec::new();
    for t in 0..cfg.threads.max(1) {
        let w = worker::Worker::new(t, cfg.clone(), keys.clone(), shared.clone(), hub.clone())?;
        handles.push(
            std::thread::Builder::new()
                .name(format!("swarm-{t}"))
                .spawn(move || w.run())
                .map_err(SwarmError::Thread)?,
        );
    }
    let mut last = (0u64, Instant::now());
    let mut all_in_reported = false;
    let n = cfg.minions as u64;
    loop {
        let tick = Instant::now() + cfg.report_every;
        // Poll the stop conditions ten times per report.
        while Instant::now() < tick {
            std::thread::sleep(cfg.report_every / 10);
            let s = &hub.stats;
            let first = s.first_signins.load(Ordering::Acquire);
            if !all_in_reported && first >= n {
                all_in_reported = true;
                let secs = match s.last_first_signin_us.load(Ordering::Relaxed) {
                    0 => hub.start.elapsed().as_secs_f64(),
                    us => us as f64 / 1e6,
                };
                out(&format!(
                    "swarm ALL_SIGNED_IN n={n} secs={secs:.3} signins_per_s={:.1}",
                    n as f64 / secs
                ));
                if cfg.exit_after_signin {
                    hub.stop.store(true, Ordering::Relaxed);
                }
            }
            if let Some(k) = cfg.exit_after {
                let seen = s.jobs_seen.load(Ordering::Relaxed);
                let sent = s.returns_sent.load(Ordering::Relaxed);
                let acked = s.returns_acked.load(Ordering::Relaxed);
                if seen >= k && acked >= sent {
                    hub.stop.store(true, Ordering::Relaxed);
                }
            }
            if cfg.run_time.is_some_and(|r| hub.start.elapsed() >= r) {
                hub.stop.store(true, Ordering::Relaxed);
            }
            if hub.stop.load(Ordering::Relaxed) {
                break;
            }
        }
        out(&line(&hub, &cfg, &mut last));
        if hub.stop.load(Ordering::Relaxed) {
            break;
        }
    }
    for h in handles {
        let _ = h.join();
    }
    let s = &hub.stats;
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
    Ok(Summary {
        signed_in: g(&s.first_signins),
        elapsed_secs: hub.start.elapsed().as_secs_f64(),
        pubs_decrypted: g(&s.pubs_decrypted),
        returns_sent: g(&s.returns_sent),
        returns_acked: g(&s.returns_acked),
        reauths: g(&s.reauths),
    })
}
