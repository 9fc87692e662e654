//! salt-failover: master selection, failover, failback and liveness for the minion, as a
//! sans-IO state machine; and [`rekey`], when to re-authenticate after an AES key rotation.
//!
//! Nothing here does I/O or reads a clock: `clippy.toml` disallows `Instant::now`,
//! `SystemTime::now`, `thread_rng`, sleeps, threads, sockets, files and processes, so
//! `cargo clippy -p salt-failover -- -D warnings` fails on any that creep in.
//!
//! [`FailoverState`] decides which master the minion talks to and when that master counts as
//! lost. It has no sockets, never reads the clock (every input carries `now`), and its only
//! randomness (Salt's `random_master` shuffle and the exit delay after a rejection) comes from
//! a seed given to [`FailoverState::new`]. A driver (the minion's tokio loop, or the
//! `sim::Sim` used by the tests, behind the `sim` feature) turns its [`Action`]s into socket
//! work and feeds the outcomes back as [`Event`]s.
//!
//! The semantics are Salt's (`salt/minion.py` `eval_master` and the `__master_disconnected`
//! handler, and the "Multiple Master Failover Tutorial"), with the differences listed in
//! `docs/failover.md`: loss is detected by application-level alive checks plus the SUB
//! socket's disconnect events (so frozen and black-holed masters are caught too), a lone SUB
//! disconnect is confirmed before anything happens (no false "connection lost", Salt issue
//! #66497), and a round where every master failed backs off instead of spinning.

use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use tracing::Level;

mod config;
mod liveness;
mod phase;
pub mod rekey;
mod signin;
#[cfg(any(test, feature = "sim"))]
pub mod sim;
mod types;

pub use config::{ConfigError, DEFAULT_MASTER_PORT, FailoverConfig, MasterAddr, MasterType};
use phase::{
    AwaitingAcceptance, BackingOff, Connected, Connecting, Exiting, Failback, Failed, Failure,
    Liveness, Phase, Probe, Resume, Tally,
};
pub use types::{Action, CheckId, Event, LeaveCause, PhaseKind};

/// Exit code when a master rejects the minion's key and `rejected_retry` is off (Salt's
/// `EX_NOPERM`).
pub const EXIT_REJECTED: i32 = 77;
/// Exit code when the only master's name does not resolve and `retry_dns` is off (Salt raises
/// `SaltSystemExit(code=42)`).
pub const EXIT_UNRESOLVABLE: i32 = 42;
/// Floor for every retry wait, so that `acceptance_wait_time: 0` cannot make the minion spin.
pub const MIN_RETRY_WAIT: Duration = Duration::from_secs(1);
/// Failback ping interval when neither `master_failback_interval` nor `master_alive_interval`
/// is set (Salt would schedule the ping every 0 s).
pub const DEFAULT_FAILBACK_INTERVAL: Duration = Duration::from_secs(60);
/// Alive checks are sent every `P = alive_interval / ALIVE_PERIOD_DIVISOR`, whether or not
/// earlier ones have been answered (each on its own fresh socket).
const ALIVE_PERIOD_DIVISOR: u32 = 6;
/// A master is lost when an alive check has gone unanswered for
/// `L = alive_interval * SILENCE_TENTHS / 10` and at least [`CHECKS_TO_LOSE`] checks are
/// unanswered. Detection takes at most `P + L` (0.57 of the interval), which leaves the rest
/// for signing in to the next master, so the minion answers through it within
/// `alive_interval` of the fault (docs/failover.md).
const SILENCE_TENTHS: u32 = 4;
/// Unanswered checks needed, besides the silence, to declare a master lost: one slow answer is
/// never enough.
const CHECKS_TO_LOSE: u32 = 2;
/// At most this many alive checks in flight at once.
const MAX_CHECKS_IN_FLIGHT: usize = 4;

/// Salt's master selection and failover as a deterministic state machine.
///
/// # Methods
///
/// * **Construction**: [`new`](Self::new) validates the configuration, orders (and maybe
///   shuffles) the master list and queues the first [`Action::SignIn`].
/// * **Inputs** (`handle_*`): [`handle`](Self::handle) for every [`Event`] the driver
///   observes, [`handle_timeout`](Self::handle_timeout) when the instant returned by
///   [`poll_timeout`](Self::poll_timeout) has passed.
/// * **Application commands**: [`close`](Self::close) to stop (shutdown).
/// * **Outputs** (`poll_*`): [`poll_action`](Self::poll_action) until it returns `None`,
///   then [`poll_timeout`](Self::poll_timeout) to re-arm the driver's single timer.
/// * **Getters**: [`current_master`](Self::current_master), [`phase`](Self::phase),
///   [`master_order`](Self::master_order), [`masters`](Self::masters),
///   [`sub_heartbeat`](Self::sub_heartbeat), [`alive_timing`](Self::alive_timing).
///
/// # Driving it
///
/// ```text
/// let mut st = FailoverState::new(cfg, seed, now)?;
/// loop {
///     while let Some(a) = st.poll_action() { carry out a (in order) }
///     wait until st.poll_timeout() or an I/O outcome arrives;
///     outcome  => st.handle(event, now),
///     deadline => st.handle_timeout(now),
/// }
/// ```
///
/// After every `handle*` call, drain `poll_action` before calling `poll_timeout`: the timer
/// may have moved. `now` must never go backwards between calls. Timeouts of sign-ins, alive
/// checks and failback pings are enforced here, so the driver only has to report answers
/// (and early errors); any answer it reports for a request the state machine has already
/// given up on is ignored.
///
/// # Guarantees (checked by the property tests)
///
/// * Between an [`Action::SignIn`] for master `i` and the next for master `j != i` there is
///   an [`Action::Disconnect`] for `i`: never two masters at once.
/// * [`master_order`](Self::master_order) is always a permutation of all masters: a failed
///   master is moved to the end, never dropped.
/// * When every master failed in a round the state machine waits at least
///   [`MIN_RETRY_WAIT`] (doubling from `acceptance_wait_time` up to `_max`) before the next.
pub struct FailoverState {
    cfg: FailoverConfig,
    /// Names used in log lines: the host, or `host:port` when two masters share a host.
    labels: Vec<String>,
    /// The order masters are tried in (Salt's `local_masters`), as indices into `cfg.masters`.
    order: Vec<usize>,
    /// Position in `order` of the master being tried in the current round.
    pos: usize,
    /// Failed rounds since the last successful sign-in.
    failed_rounds: u32,
    /// Outcomes of the current round, for the "all masters failed" log line.
    tally: Tally,
    /// Current wait while a key is pending (doubles up to the max).
    pending_wait: Duration,
    /// The master most recently signed in to (or tried), for "Master ip address changed".
    last_master: Option<usize>,
    /// A master was lost in `str` mode and not yet re-established.
    lost_single: bool,
    /// The current round was started by a failback.
    failing_back: bool,
    /// Failbacks in a row where the preferred master answered the ping but then did not take
    /// us (full, rejected, broken): each one doubles the failback interval (up to 16x), so a
    /// full preferred master does not make the minion hop back and forth every interval.
    failback_misses: u32,
    /// Times the minion left a master, by [`LeaveCause`] (index in `LeaveCause::ALL`).
    left: [u64; 3],
    rng: StdRng,
    next_check: u64,
    phase: Phase,
    actions: VecDeque<Action>,
}

impl FailoverState {
    /// Validates `cfg`, applies Salt's forced settings for failover mode (`auth_tries` 1,
    /// `retry_dns` off, failback interval defaulting to the alive interval), orders the list
    /// (shuffled with `rng_seed` if `random_master`) and queues the first sign-in.
    pub fn new(mut cfg: FailoverConfig, rng_seed: u64, now: Instant) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let mut actions = VecDeque::new();
        if cfg.alive_interval.is_some_and(|d| d.is_zero()) {
            cfg.alive_interval = None;
        }
        if cfg.failback_interval.is_some_and(|d| d.is_zero()) {
            cfg.failback_interval = None;
        }
        if cfg.master_type == MasterType::Failover {
            cfg.auth_tries = 1;
            if cfg.retry_dns.is_some_and(|d| !d.is_zero()) {
                actions.push_back(log(
                    Level::WARN,
                    "'master_type' set to 'failover' but 'retry_dns' is not 0. Setting \
                     'retry_dns' to 0 to failover to the next master on DNS errors."
                        .to_owned(),
                ));
            }
            cfg.retry_dns = None;
            if cfg.failback && cfg.failback_interval.is_none() {
                cfg.failback_interval = cfg.alive_interval.or(Some(DEFAULT_FAILBACK_INTERVAL));
            }
        } else {
            cfg.failback = false;
        }
        cfg.auth_tries = cfg.auth_tries.max(1);
        let labels = labels(&cfg.masters);
        let mut st = Self {
            order: (0..cfg.masters.len()).collect(),
            pending_wait: cfg.acceptance_wait_time.max(MIN_RETRY_WAIT),
            cfg,
            labels,
            pos: 0,
            failed_rounds: 0,
            tally: Tally::default(),
            last_master: None,
            lost_single: false,
            left: [0; 3],
            failing_back: false,
            failback_misses: 0,
            rng: StdRng::seed_from_u64(rng_seed),
            next_check: 0,
            phase: Phase::Stopped,
            actions,
        };
        if st.cfg.master_type == MasterType::Disable {
            st.log(
                Level::INFO,
                "master_type is 'disable': not connecting to any master".to_owned(),
            );
            return Ok(st);
        }
        if st.cfg.random_master {
            st.shuffle_order(None);
        }
        st.start_round(now);
        Ok(st)
    }

    // === Inputs ===

    /// Feeds one observation from the driver.
    pub fn handle(&mut self, event: Event, now: Instant) {
        match event {
            Event::SignInAccepted(idx) => {
                if self.signing_in(idx) {
                    self.accepted(idx, now);
                }
            }
            Event::SignInPending(idx) => {
                if self.signing_in(idx) {
                    self.pending(idx, now);
                }
            }
            Event::SignInRejected(idx) => {
                if self.signing_in(idx) {
                    self.rejected(idx, now);
                }
            }
            Event::SignInFull(idx) => {
                if self.signing_in(idx) {
                    self.sign_in_failed(idx, Failure::Full, now);
                }
            }
            Event::SignInFailed(idx) => {
                if self.signing_in(idx) {
                    self.sign_in_failed(idx, Failure::Error, now);
                }
            }
            Event::DnsFailed(idx) => {
                if self.signing_in(idx) {
                    self.sign_in_failed(idx, Failure::Dns, now);
                }
            }
            Event::SubConnected(idx) => {
                if let Phase::Connected(c) = &mut self.phase
                    && c.idx == idx
                    && c.live.sub_down_since.take().is_some()
                {
                    let msg = format!("Publish channel to master {} reconnected", self.labels[idx]);
                    self.log(Level::DEBUG, msg);
                }
            }
            Event::SubDisconnected(idx) => self.sub_disconnected(idx, now),
            Event::AliveCheckOk { idx, id } => self.alive_answer(idx, id, true, now),
            Event::AliveCheckFailed { idx, id } => self.alive_answer(idx, id, false, now),
            Event::FailbackPingOk { idx, id } => self.failback_answer(idx, id, true, now),
            Event::FailbackPingFailed { idx, id } => self.failback_answer(idx, id, false, now),
        }
    }

    /// Runs every timer that has expired by `now`. Call it when `now` reaches
    /// [`poll_timeout`](Self::poll_timeout); calling it early is harmless.
    pub fn handle_timeout(&mut self, now: Instant) {
        match &self.phase {
            Phase::Connecting(c) if c.deadline <= now => {
                let idx = c.idx;
                self.sign_in_failed(idx, Failure::Timeout, now);
            }
            Phase::AwaitingAcceptance(a) if a.retry_at <= now => {
                let idx = a.idx;
                self.sign_in(idx, 1, now);
            }
            Phase::BackingOff(b) if b.until <= now => match b.resume {
                Resume::NewRound => self.start_round(now),
                Resume::Retry(idx) => self.sign_in(idx, 1, now),
            },
            Phase::Exiting(e) if e.at <= now => {
                let action = Action::Exit {
                    code: e.code,
                    reason: e.reason.clone(),
                };
                self.actions.push_back(action);
                self.phase = Phase::Stopped;
            }
            Phase::Connected(_) => self.connected_timeout(now),
            _ => {}
        }
    }

    // === Application commands ===

    /// Stops: disconnects from whatever master is in use and stays stopped.
    pub fn close(&mut self, _now: Instant) {
        if let Some(idx) = self.attached() {
            self.actions.push_back(Action::Disconnect { idx });
        }
        self.phase = Phase::Stopped;
    }

    // === Outputs ===

    /// The next thing the driver must do, in order.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The instant at which [`handle_timeout`](Self::handle_timeout) must be called next, if
    /// any timer is armed.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match &self.phase {
            Phase::Connecting(c) => Some(c.deadline),
            Phase::AwaitingAcceptance(a) => Some(a.retry_at),
            Phase::BackingOff(b) => Some(b.until),
            Phase::Exiting(e) => Some(e.at),
            Phase::Connected(c) => {
                let grace = c
                    .live
                    .sub_down_since
                    .map(|t| t + self.cfg.sub_reconnect_grace);
                let silence = self.alive_timing().map(|(_, l)| l);
                let lost_at = silence
                    .filter(|_| c.live.sent_since_heard >= CHECKS_TO_LOSE)
                    .and_then(|l| c.live.first_unanswered.map(|t| t + l));
                [
                    c.live.next_check,
                    c.live.in_flight.iter().map(|p| p.deadline).min(),
                    lost_at,
                    c.failback.as_ref().and_then(|f| f.next_ping),
                    c.failback
                        .as_ref()
                        .and_then(|f| f.in_flight.map(|p| p.deadline)),
                    grace,
                ]
                .into_iter()
                .flatten()
                .min()
            }
            Phase::Stopped => None,
        }
    }

    // === Getters ===

    /// The master in use (signed in and not lost), if any.
    pub fn current_master(&self) -> Option<usize> {
        match &self.phase {
            Phase::Connected(c) => Some(c.idx),
            _ => None,
        }
    }

    /// Since when the current master has been in use.
    pub fn connected_since(&self) -> Option<Instant> {
        match &self.phase {
            Phase::Connected(c) => Some(c.since),
            _ => None,
        }
    }

    /// The master a sign-in is in flight to, or whose pending key we are waiting on.
    pub fn attempting(&self) -> Option<usize> {
        match &self.phase {
            Phase::Connecting(c) => Some(c.idx),
            Phase::AwaitingAcceptance(a) => Some(a.idx),
            _ => None,
        }
    }

    /// The current phase.
    pub fn phase(&self) -> PhaseKind {
        match self.phase {
            Phase::AwaitingAcceptance(_) => PhaseKind::AwaitingAcceptance,
            Phase::BackingOff(_) => PhaseKind::BackingOff,
            Phase::Connected(_) => PhaseKind::Connected,
            Phase::Connecting(_) => PhaseKind::Connecting,
            Phase::Exiting(_) => PhaseKind::Exiting,
            Phase::Stopped => PhaseKind::Stopped,
        }
    }

    /// When the current backoff ends, if backing off.
    pub fn backoff_until(&self) -> Option<Instant> {
        match &self.phase {
            Phase::BackingOff(b) => Some(b.until),
            _ => None,
        }
    }

    /// The order masters are tried in (Salt's `local_masters`), as indices into
    /// [`masters`](Self::masters). Always a permutation of all masters.
    pub fn master_order(&self) -> &[usize] {
        &self.order
    }

    /// The configured masters.
    pub fn masters(&self) -> &[MasterAddr] {
        &self.cfg.masters
    }

    /// The configuration in effect (after Salt's forced settings).
    pub fn config(&self) -> &FailoverConfig {
        &self.cfg
    }

    /// The name this master has in log lines.
    pub fn label(&self, idx: usize) -> &str {
        self.labels.get(idx).map_or("?", String::as_str)
    }

    /// Alive-check timing `(period, silence)`: a check is sent every `period`; a master is lost
    /// when a check went unanswered for `silence` with at least two checks unanswered; each
    /// check times out after `silence`. `None` when `master_alive_interval` is off (checks are then
    /// only sent to confirm a SUB disconnect, with timeout `auth_timeout`).
    pub fn alive_timing(&self) -> Option<(Duration, Duration)> {
        let a = self.cfg.alive_interval?;
        Some((a / ALIVE_PERIOD_DIVISOR, a * SILENCE_TENTHS / 10))
    }

    /// Recommended ZeroMQ heartbeat settings `(ZMQ_HEARTBEAT_IVL, ZMQ_HEARTBEAT_TIMEOUT)` for
    /// the SUB socket, so that libzmq itself reports a frozen or black-holed master as a
    /// disconnect within the alive interval. `None` when the alive interval is off.
    pub fn sub_heartbeat(&self) -> Option<(Duration, Duration)> {
        let a = self.cfg.alive_interval?;
        Some((a / 3, a * 2 / 3))
    }

    // === Sign-in flow ===

    /// Whether a sign-in answer for `idx` is expected now.
    fn signing_in(&self, idx: usize) -> bool {
        matches!(&self.phase, Phase::Connecting(c) if c.idx == idx)
    }

    /// The master the driver has sockets open to, if any.
    fn attached(&self) -> Option<usize> {
        match &self.phase {
            Phase::Connecting(c) => Some(c.idx),
            Phase::AwaitingAcceptance(a) => Some(a.idx),
            Phase::Connected(c) => Some(c.idx),
            _ => None,
        }
    }

    fn count_leave(&mut self, cause: LeaveCause) {
        if let Some(i) = LeaveCause::ALL.iter().position(|c| *c == cause)
            && let Some(n) = self.left.get_mut(i)
        {
            *n += 1;
        }
    }

    /// How many times the minion left a master, by cause (for metrics).
    pub fn leave_counts(&self) -> [(LeaveCause, u64); 3] {
        let l = self.left;
        [
            (LeaveCause::ALL[0], l[0]),
            (LeaveCause::ALL[1], l[1]),
            (LeaveCause::ALL[2], l[2]),
        ]
    }

    /// The current master is gone: log it Salt's way and tune in to the next one.
    fn lost(&mut self, idx: usize, reason: &str, cause: LeaveCause, now: Instant) {
        self.count_leave(cause);
        let label = self.labels[idx].clone();
        self.log(Level::INFO, format!("Connection to master {label} lost"));
        self.log(
            Level::DEBUG,
            format!("Master {label} considered lost: {reason}"),
        );
        self.actions.push_back(Action::Disconnect { idx });
        self.failing_back = false;
        if self.cfg.master_type != MasterType::Failover {
            self.lost_single = true;
            self.sign_in(idx, 1, now);
            return;
        }
        self.log(
            Level::INFO,
            "Trying to tune in to next master from master-list".to_owned(),
        );
        self.log(
            Level::INFO,
            format!("Removing possibly failed master {label} from list of masters"),
        );
        self.order.retain(|&m| m != idx);
        self.order.push(idx);
        if self.cfg.random_master {
            self.shuffle_order(Some(idx));
        }
        self.start_round(now);
    }

    /// Shuffles the order. With failback on, the preferred master stays first (Salt shuffles
    /// only `[1:]`); `last` (a master just lost) stays last.
    fn shuffle_order(&mut self, last: Option<usize>) {
        let mut end = self.order.len();
        if last.is_some() {
            end = end.saturating_sub(1);
        }
        let start =
            usize::from(self.cfg.failback && self.order.first() == Some(&0) && last != Some(0));
        if start < end {
            self.order[start..end].shuffle(&mut self.rng);
        }
    }

    fn log(&mut self, level: Level, message: String) {
        self.actions.push_back(log(level, message));
    }
}

impl fmt::Debug for FailoverState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FailoverState")
            .field("phase", &self.phase)
            .field("order", &self.order)
            .field("pos", &self.pos)
            .field("failed_rounds", &self.failed_rounds)
            .finish_non_exhaustive()
    }
}

fn log(level: Level, message: String) -> Action {
    Action::Log { level, message }
}

/// Seconds for log lines: whole numbers print without a fraction, as Salt's ints do.
fn secs(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        d.as_secs().to_string()
    } else {
        format!("{:.1}", d.as_secs_f64())
    }
}

/// Log names: the host, unless two masters share it, then `host:port`.
fn labels(masters: &[MasterAddr]) -> Vec<String> {
    masters
        .iter()
        .map(|m| {
            let shared = masters.iter().filter(|o| o.host == m.host).count() > 1;
            if shared {
                m.to_string()
            } else {
                m.host.clone()
            }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[allow(clippy::disallowed_methods)] // a test's epoch: only differences are used
mod tests;
