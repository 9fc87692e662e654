//! Master selection, failover, failback and liveness for the minion, as a sans-IO state
//! machine.
//!
//! [`FailoverState`] decides which master the minion talks to and when that master counts as
//! lost. It has no sockets, never reads the clock (every input carries `now`), and its only
//! randomness (Salt's `random_master` shuffle and the exit delay after a rejection) comes from
//! a seed given to [`FailoverState::new`]. A driver (the minion's tokio loop, or the
//! [`sim::Sim`] used by the tests) turns its [`Action`]s into socket work and feeds the
//! outcomes back as [`Event`]s.
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
pub mod sim;

pub use config::{ConfigError, DEFAULT_MASTER_PORT, FailoverConfig, MasterAddr, MasterType};

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

/// Identifies one alive check or failback ping, so that a late answer to an earlier one is
/// not mistaken for an answer to the current one. The driver echoes it back in the event.
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub struct CheckId(pub u64);

/// What the driver observed. Every event names the master index (into
/// [`FailoverConfig::masters`]) it is about; events about a master the state machine is not
/// currently working with are stale and ignored.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// The master accepted the sign-in (`_auth` reply with AES key and session): the minion
    /// now uses it.
    SignInAccepted(usize),
    /// The master answered that our key is pending (`ret: True`). The minion stays on that
    /// master and signs in again after `acceptance_wait_time`.
    SignInPending(usize),
    /// The master rejected or denied our key (`ret: False`).
    SignInRejected(usize),
    /// The master is full (`ret: "full"`, `max_minions` reached).
    SignInFull(usize),
    /// The sign-in failed for any other reason the driver noticed before `timeout`: invalid
    /// master key, bad signature or nonce, socket error. A sign-in that gets no answer at all
    /// needs no event: the state machine's own timer expires.
    SignInFailed(usize),
    /// The master's host name did not resolve.
    DnsFailed(usize),
    /// The SUB socket's monitor reported a (re)connection to the master's publish port.
    SubConnected(usize),
    /// The SUB socket's monitor reported a disconnection (TCP reset or close, or a ZeroMQ
    /// heartbeat timeout).
    SubDisconnected(usize),
    /// The master answered alive check `id`.
    AliveCheckOk {
        /// Master index.
        idx: usize,
        /// The id from [`Action::SendAliveCheck`].
        id: CheckId,
    },
    /// Alive check `id` failed before its timeout: the connection was refused or dropped (the
    /// master's port is closed), or a socket error. With the SUB down since before the check
    /// was sent, this loses the master at once. No event is needed for a check that gets no
    /// answer: the state machine times it out itself.
    AliveCheckFailed {
        /// Master index.
        idx: usize,
        /// The id from [`Action::SendAliveCheck`].
        id: CheckId,
    },
    /// The preferred master answered failback ping `id`.
    FailbackPingOk {
        /// Master index (always the preferred master, index 0).
        idx: usize,
        /// The id from [`Action::SendFailbackPing`].
        id: CheckId,
    },
    /// Failback ping `id` failed before its timeout.
    FailbackPingFailed {
        /// Master index.
        idx: usize,
        /// The id from [`Action::SendFailbackPing`].
        id: CheckId,
    },
}

/// What the driver must do. Actions come out of [`FailoverState::poll_action`] in order and
/// must be carried out in that order.
#[derive(Clone, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum Action {
    /// Resolve `addr`, connect the request channel and send one `_auth` sign-in; report the
    /// outcome with one of the `SignIn*` events or [`Event::DnsFailed`]. The state machine
    /// gives up on its own after `timeout`; the driver then receives a `Disconnect` and must
    /// drop the attempt (and not report it any more).
    SignIn {
        /// Master index.
        idx: usize,
        /// Its address.
        addr: MasterAddr,
        /// How long the attempt may take (`auth_timeout`).
        timeout: Duration,
    },
    /// Connect the SUB socket to this (just accepted) master's publish port, with ZeroMQ
    /// heartbeats as given by [`FailoverState::sub_heartbeat`], and a monitor that reports
    /// [`Event::SubConnected`] / [`Event::SubDisconnected`].
    Subscribe {
        /// Master index.
        idx: usize,
        /// Its address.
        addr: MasterAddr,
    },
    /// The minion now uses this master: start handling publishes, fire the start events,
    /// (re)load what depends on the master.
    Connected {
        /// Master index.
        idx: usize,
        /// Its address.
        addr: MasterAddr,
    },
    /// Close every socket to this master and drop any request in flight to it (including
    /// alive checks). Sent before any other master is tried: the minion never talks to two
    /// masters at once.
    Disconnect {
        /// Master index.
        idx: usize,
    },
    /// Send an application-level alive check to the current master (a clear `{"cmd":
    /// "ping"}` request on a fresh REQ socket) and report [`Event::AliveCheckOk`]. The state
    /// machine times it out itself after `timeout`.
    SendAliveCheck {
        /// Master index.
        idx: usize,
        /// Echo this in the answer event.
        id: CheckId,
        /// How long the check may take.
        timeout: Duration,
    },
    /// Send Salt's failback ping (`status.ping_master`: a clear `ping`, one try) to the
    /// preferred master and report [`Event::FailbackPingOk`].
    SendFailbackPing {
        /// Master index (the preferred master).
        idx: usize,
        /// Its address.
        addr: MasterAddr,
        /// Echo this in the answer event.
        id: CheckId,
        /// How long the ping may take (`auth_timeout`).
        timeout: Duration,
    },
    /// Write this line to the minion log. The wording of the failover lines is Salt's.
    Log {
        /// Log level.
        level: Level,
        /// The message.
        message: String,
    },
    /// Exit the minion process with `code`.
    Exit {
        /// Process exit code ([`EXIT_REJECTED`], [`EXIT_UNRESOLVABLE`]).
        code: i32,
        /// Why.
        reason: String,
    },
}

/// Why the minion left the master it was using (for metrics).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum LeaveCause {
    /// The publish channel stayed down longer than the reconnect grace.
    PublishChannelDown,
    /// Alive checks (`master_alive_interval`) failed twice in a row.
    AliveCheckFailed,
    /// The preferred master answered the failback ping.
    Failback,
}

impl LeaveCause {
    /// Every cause, in counter order.
    pub const ALL: [LeaveCause; 3] = [
        LeaveCause::PublishChannelDown,
        LeaveCause::AliveCheckFailed,
        LeaveCause::Failback,
    ];

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            LeaveCause::PublishChannelDown => "publish_channel_down",
            LeaveCause::AliveCheckFailed => "alive_check_failed",
            LeaveCause::Failback => "failback",
        }
    }
}

/// A summary of the current phase, for getters and tests.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
#[non_exhaustive]
pub enum PhaseKind {
    /// Waiting `acceptance_wait_time` before signing in again to a master that has our key
    /// pending.
    AwaitingAcceptance,
    /// Waiting before the next round (every master failed) or the next reconnect attempt.
    BackingOff,
    /// Using a master.
    Connected,
    /// A sign-in is in flight.
    Connecting,
    /// Rejected: waiting Salt's random 10–20 s before emitting [`Action::Exit`].
    Exiting,
    /// Done: `master_type: disable`, after [`Action::Exit`], or after [`FailoverState::close`].
    Stopped,
}

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

    fn start_round(&mut self, now: Instant) {
        self.pos = 0;
        self.tally = Tally::default();
        let idx = self.order[0];
        self.sign_in(idx, 1, now);
    }

    fn sign_in(&mut self, idx: usize, attempt: u32, now: Instant) {
        if let Some(prev) = self.last_master
            && prev != idx
        {
            let msg = format!(
                "Master ip address changed from {} to {}",
                self.labels[prev], self.labels[idx]
            );
            self.log(Level::WARN, msg);
        }
        self.last_master = Some(idx);
        let msg = format!(
            "Attempting to authenticate with the Salt Master at {}",
            self.labels[idx]
        );
        self.log(Level::DEBUG, msg);
        self.actions.push_back(Action::SignIn {
            idx,
            addr: self.cfg.masters[idx].clone(),
            timeout: self.cfg.auth_timeout,
        });
        self.phase = Phase::Connecting(Connecting {
            idx,
            attempt,
            deadline: now + self.cfg.auth_timeout,
        });
    }

    fn accepted(&mut self, idx: usize, now: Instant) {
        self.log(
            Level::INFO,
            "Authentication with master successful!".to_owned(),
        );
        if self.lost_single {
            self.lost_single = false;
            let msg = format!("Connection to master {} re-established", self.labels[idx]);
            self.log(Level::INFO, msg);
        }
        if std::mem::take(&mut self.failing_back) {
            if idx == 0 {
                self.failback_misses = 0;
            } else {
                self.failback_misses += 1;
                let msg = format!(
                    "Failback to master {} did not succeed; next failback ping in {} seconds",
                    self.labels[0],
                    secs(self.failback_delay())
                );
                self.log(Level::INFO, msg);
            }
        }
        self.failed_rounds = 0;
        self.pending_wait = self.cfg.acceptance_wait_time.max(MIN_RETRY_WAIT);
        let addr = self.cfg.masters[idx].clone();
        self.actions.push_back(Action::Subscribe {
            idx,
            addr: addr.clone(),
        });
        self.actions.push_back(Action::Connected { idx, addr });
        let failback = (self.cfg.failback && idx != 0).then(|| Failback {
            next_ping: Some(now + self.failback_delay()),
            in_flight: None,
        });
        self.phase = Phase::Connected(Connected {
            idx,
            since: now,
            live: Liveness {
                next_check: self.alive_timing().map(|(p, _)| now + p),
                in_flight: Vec::new(),
                first_unanswered: None,
                sent_since_heard: 0,
                sub_down_since: None,
            },
            failback,
        });
    }

    /// Key pending (or rejected with `rejected_retry` in `str` mode): keep the master, sign
    /// in again after the (doubling) acceptance wait.
    fn pending(&mut self, idx: usize, now: Instant) {
        let wait = self.pending_wait;
        let msg = format!(
            "The Salt Master has cached the public key for this node, this salt minion will \
             wait for {} seconds before attempting to re-authenticate",
            secs(wait)
        );
        self.log(Level::ERROR, msg);
        self.wait_for_acceptance(idx, wait, now);
    }

    fn wait_for_acceptance(&mut self, idx: usize, wait: Duration, now: Instant) {
        self.pending_wait = (wait * 2).min(self.wait_cap());
        self.phase = Phase::AwaitingAcceptance(AwaitingAcceptance {
            idx,
            retry_at: now + wait,
        });
    }

    fn rejected(&mut self, idx: usize, now: Instant) {
        if !self.cfg.rejected_retry {
            // Salt logs this at CRITICAL; `tracing` stops at ERROR.
            self.log(
                Level::ERROR,
                "The Salt Master has rejected this minion's public key!\nTo repair this \
                 issue, delete the public key for this minion on the Salt Master and restart \
                 this minion.\nOr restart the Salt Master in open mode to clean out the keys. \
                 The Salt Minion will now exit."
                    .to_owned(),
            );
            self.actions.push_back(Action::Disconnect { idx });
            // Salt sleeps 10-20 s so that a service manager restarting it does not hammer
            // the master.
            let delay = Duration::from_secs(self.rng.gen_range(10..=20));
            self.phase = Phase::Exiting(Exiting {
                at: now + delay,
                code: EXIT_REJECTED,
                reason: format!("rejected by master {}", self.labels[idx]),
            });
            return;
        }
        self.log(
            Level::ERROR,
            "The Salt Master has rejected this minion's public key.\nTo repair this issue, \
             delete the public key for this minion on the Salt Master.\nThe Salt Minion will \
             attempt to re-authenicate."
                .to_owned(),
        );
        if self.cfg.master_type == MasterType::Failover {
            // Divergence from Salt (which retries the same master forever): another master
            // may well accept us, so a rejection moves on like "full".
            self.sign_in_failed(idx, Failure::Rejected, now);
        } else {
            let wait = self.pending_wait;
            self.wait_for_acceptance(idx, wait, now);
        }
    }

    fn sign_in_failed(&mut self, idx: usize, failure: Failure, now: Instant) {
        let attempt = match &self.phase {
            Phase::Connecting(c) => c.attempt,
            _ => 1,
        };
        self.actions.push_back(Action::Disconnect { idx });
        let label = self.labels[idx].clone();
        if self.cfg.master_type != MasterType::Failover {
            self.single_master_failed(idx, attempt, failure, now);
            return;
        }
        let msg = match failure {
            Failure::Timeout | Failure::Error => {
                self.tally.unreachable += 1;
                format!("Master {label} could not be reached, trying next master (if any)")
            }
            Failure::Full => {
                self.tally.full += 1;
                format!("Master {label} is full (max_minions reached), trying next master (if any)")
            }
            Failure::Rejected => {
                self.tally.rejected += 1;
                format!("Master {label} rejected this minion, trying next master (if any)")
            }
            Failure::Dns => {
                self.tally.unresolvable += 1;
                format!("Master {label} could not be resolved, trying next master (if any)")
            }
        };
        self.log(Level::INFO, msg);
        self.pos += 1;
        if let Some(&next) = self.order.get(self.pos) {
            self.sign_in(next, 1, now);
        } else {
            self.round_failed(now);
        }
    }

    fn single_master_failed(&mut self, idx: usize, attempt: u32, failure: Failure, now: Instant) {
        let label = self.labels[idx].clone();
        match failure {
            Failure::Timeout | Failure::Error if attempt < self.cfg.auth_tries => {
                // Salt's line, with the port and why: ZeroMQ retries a refused connection
                // quietly, so "refused" and "down" show as no answer in time.
                let why = match failure {
                    Failure::Timeout => format!(
                        "no answer within {}s: is the master running and port {} reachable?",
                        secs(self.cfg.auth_timeout),
                        self.cfg.masters[idx].port
                    ),
                    _ => "the request failed (the error is logged above)".to_owned(),
                };
                let msg = format!(
                    "Attempt to authenticate with the salt master {} failed (try {attempt} \
                     of {}): {why}; retrying",
                    self.cfg.masters[idx], self.cfg.auth_tries
                );
                self.log(Level::WARN, msg);
                self.sign_in(idx, attempt + 1, now);
            }
            Failure::Dns => match self.cfg.retry_dns {
                Some(wait) if !wait.is_zero() => {
                    let wait = wait.max(MIN_RETRY_WAIT);
                    let msg = format!(
                        "Master hostname: '{label}' not found or not responsive. Retrying in \
                         {} seconds",
                        secs(wait)
                    );
                    self.log(Level::ERROR, msg);
                    self.phase = Phase::BackingOff(BackingOff {
                        until: now + wait,
                        resume: Resume::Retry(idx),
                    });
                }
                _ => {
                    let msg = format!(
                        "Master address: '{label}' could not be resolved. Invalid or \
                         unresolveable address. Set 'master' value in minion config."
                    );
                    self.log(Level::ERROR, msg.clone());
                    self.actions.push_back(Action::Exit {
                        code: EXIT_UNRESOLVABLE,
                        reason: msg,
                    });
                    self.phase = Phase::Stopped;
                }
            },
            _ => {
                let what = match failure {
                    Failure::Full => "is full (max_minions reached)",
                    _ => "could not be reached",
                };
                self.failed_rounds += 1;
                let wait = self.round_backoff();
                let msg = format!("Master {label} {what}; retrying in {} seconds", secs(wait));
                self.log(Level::WARN, msg);
                self.master_tries_exhausted();
                self.phase = Phase::BackingOff(BackingOff {
                    until: now + wait,
                    resume: Resume::Retry(idx),
                });
            }
        }
    }

    /// Every master of the round failed: say so clearly and back off.
    fn round_failed(&mut self, now: Instant) {
        self.failed_rounds += 1;
        let wait = self.round_backoff();
        let t = self.tally;
        let msg = format!(
            "No master could be reached or all masters are full or rejected us \
             (unreachable: {}, full: {}, rejected: {}, unresolvable: {}); retrying in {} seconds",
            t.unreachable,
            t.full,
            t.rejected,
            t.unresolvable,
            secs(wait)
        );
        self.log(Level::WARN, msg);
        self.master_tries_exhausted();
        self.phase = Phase::BackingOff(BackingOff {
            until: now + wait,
            resume: Resume::NewRound,
        });
    }

    /// Logs Salt's error each time `master_tries` rounds have failed in a row.
    fn master_tries_exhausted(&mut self) {
        if let Ok(tries) = u32::try_from(self.cfg.master_tries)
            && tries > 0
            && self.failed_rounds.is_multiple_of(tries)
        {
            self.log(
                Level::ERROR,
                "No master could be reached or all masters denied the minion's connection \
                 attempt."
                    .to_owned(),
            );
        }
    }

    /// `acceptance_wait_time * 2^(failed_rounds - 1)`, capped, at least [`MIN_RETRY_WAIT`].
    fn round_backoff(&self) -> Duration {
        let base = self.cfg.acceptance_wait_time.max(MIN_RETRY_WAIT);
        let exp = self.failed_rounds.saturating_sub(1).min(16);
        base.saturating_mul(1 << exp).min(self.wait_cap())
    }

    fn wait_cap(&self) -> Duration {
        self.cfg
            .acceptance_wait_time_max
            .max(self.cfg.acceptance_wait_time)
            .max(MIN_RETRY_WAIT)
    }

    /// `master_failback_interval`, doubled for each failback in a row that did not stick.
    fn failback_delay(&self) -> Duration {
        let base = self
            .cfg
            .failback_interval
            .unwrap_or(DEFAULT_FAILBACK_INTERVAL)
            .max(MIN_RETRY_WAIT);
        base.saturating_mul(1 << self.failback_misses.min(4))
    }

    // === Connected: liveness and failback ===

    fn connected_timeout(&mut self, now: Instant) {
        let Phase::Connected(c) = &mut self.phase else {
            return;
        };
        let idx = c.idx;
        if c.live
            .sub_down_since
            .is_some_and(|t| t + self.cfg.sub_reconnect_grace <= now)
        {
            let reason = format!(
                "publish channel down for more than {} seconds",
                secs(self.cfg.sub_reconnect_grace)
            );
            self.lost(idx, &reason, LeaveCause::PublishChannelDown, now);
            return;
        }
        let expired: Vec<CheckId> = c
            .live
            .in_flight
            .iter()
            .filter(|p| p.deadline <= now)
            .map(|p| p.id)
            .collect();
        for id in expired {
            self.alive_failed(idx, id, Failed::TimedOut, now);
            if self.current_master() != Some(idx) {
                return;
            }
        }
        if let Phase::Connected(c) = &mut self.phase
            && c.live.next_check.is_some_and(|t| t <= now)
        {
            self.send_alive_check(now);
        }
        if self.silent_too_long(now) {
            return;
        }
        if let Phase::Connected(c) = &self.phase
            && let Some(f) = &c.failback
            && let Some(p) = f.in_flight
            && p.deadline <= now
        {
            self.failback_answer(0, p.id, false, now);
        }
        if let Phase::Connected(c) = &mut self.phase
            && let Some(f) = &mut c.failback
            && f.in_flight.is_none()
            && f.next_ping.is_some_and(|t| t <= now)
        {
            self.next_check += 1;
            let id = CheckId(self.next_check);
            let timeout = self.cfg.auth_timeout;
            f.next_ping = None;
            f.in_flight = Some(Probe {
                id,
                sent: now,
                deadline: now + timeout,
            });
            self.actions.push_back(Action::SendFailbackPing {
                idx: 0,
                addr: self.cfg.masters[0].clone(),
                id,
                timeout,
            });
        }
    }

    /// Sends an alive check now (periodic, or to confirm a suspicion), and schedules the next
    /// periodic one a period from now.
    fn send_alive_check(&mut self, now: Instant) {
        let timing = self.alive_timing();
        let timeout = timing.map_or(self.cfg.auth_timeout, |(_, l)| l);
        let Phase::Connected(c) = &mut self.phase else {
            return;
        };
        c.live.next_check = timing.map(|(p, _)| now + p);
        if c.live.in_flight.len() >= MAX_CHECKS_IN_FLIGHT {
            return;
        }
        self.next_check += 1;
        let id = CheckId(self.next_check);
        c.live.sent_since_heard += 1;
        c.live.first_unanswered.get_or_insert(now);
        c.live.in_flight.push(Probe {
            id,
            sent: now,
            deadline: now + timeout,
        });
        let idx = c.idx;
        self.actions
            .push_back(Action::SendAliveCheck { idx, id, timeout });
    }

    fn alive_answer(&mut self, idx: usize, id: CheckId, ok: bool, now: Instant) {
        if !ok {
            self.alive_failed(idx, id, Failed::Refused, now);
            return;
        }
        let Phase::Connected(c) = &mut self.phase else {
            return;
        };
        let Some(probe) = c.live.in_flight.iter().find(|p| p.id == id).copied() else {
            return;
        };
        if c.idx != idx {
            return;
        }
        // Checks sent before this one are moot: the master answered after them. Those sent
        // after it are still to be answered.
        c.live.in_flight.retain(|p| p.sent > probe.sent);
        let was_suspect =
            c.live.sent_since_heard >= CHECKS_TO_LOSE || c.live.sub_down_since.is_some();
        c.live.first_unanswered = c.live.in_flight.iter().map(|p| p.sent).min();
        c.live.sent_since_heard = u32::try_from(c.live.in_flight.len()).unwrap_or(u32::MAX);
        if was_suspect {
            let msg = format!(
                "Master {} answered the alive check; keeping the connection",
                self.labels[idx]
            );
            self.log(Level::DEBUG, msg);
        }
    }

    /// Alive check `id` failed: refused or dropped by the peer (early), or no answer by its
    /// deadline. With the publish channel down, a check sent after it went down that fails
    /// confirms the loss at once; otherwise the silence rule decides.
    fn alive_failed(&mut self, idx: usize, id: CheckId, how: Failed, now: Instant) {
        let Phase::Connected(c) = &mut self.phase else {
            return;
        };
        let Some(probe) = c.live.in_flight.iter().find(|p| p.id == id).copied() else {
            return;
        };
        if c.idx != idx {
            return;
        }
        c.live.in_flight.retain(|p| p.id != id);
        if let Some(down) = c.live.sub_down_since
            && probe.sent >= down
        {
            let reason = match how {
                Failed::Refused => "publish channel down and the alive check was refused",
                Failed::TimedOut => "publish channel down and the alive check timed out",
            };
            self.lost(idx, reason, LeaveCause::AliveCheckFailed, now);
            return;
        }
        // With the publish channel up, one failed check is only a suspicion (the periodic
        // checks go on; a refused one is not retried at once, so a refusing port cannot make
        // the minion spin).
        let msg = format!(
            "Master {} did not answer alive check {} ({how:?})",
            self.labels[idx], id.0
        );
        self.log(Level::DEBUG, msg);
        self.silent_too_long(now);
    }

    /// The silence rule: a check unanswered for `silence`, with at least [`CHECKS_TO_LOSE`]
    /// unanswered. Declares the master lost and returns true when it applies.
    fn silent_too_long(&mut self, now: Instant) -> bool {
        let Some((_, silence)) = self.alive_timing() else {
            return false;
        };
        let Phase::Connected(c) = &self.phase else {
            return false;
        };
        let Some(first) = c.live.first_unanswered else {
            return false;
        };
        if c.live.sent_since_heard < CHECKS_TO_LOSE || now < first + silence {
            return false;
        }
        let (idx, n) = (c.idx, c.live.sent_since_heard);
        let reason = format!(
            "no answer to {n} alive checks in {} seconds",
            secs(now.saturating_duration_since(first))
        );
        self.lost(idx, &reason, LeaveCause::AliveCheckFailed, now);
        true
    }

    fn sub_disconnected(&mut self, idx: usize, now: Instant) {
        let Phase::Connected(c) = &mut self.phase else {
            return;
        };
        if c.idx != idx {
            return;
        }
        c.live.sub_down_since.get_or_insert(now);
        let msg = format!(
            "Publish channel to master {} disconnected; confirming with an alive check",
            self.labels[idx]
        );
        self.log(Level::DEBUG, msg);
        self.send_alive_check(now);
    }

    fn failback_answer(&mut self, idx: usize, id: CheckId, ok: bool, now: Instant) {
        let interval = self.failback_delay();
        let Phase::Connected(c) = &mut self.phase else {
            return;
        };
        let cur = c.idx;
        let Some(f) = &mut c.failback else {
            return;
        };
        let Some(probe) = f.in_flight else {
            return;
        };
        if idx != 0 || probe.id != id {
            return;
        }
        f.in_flight = None;
        if !ok {
            f.next_ping = Some((probe.sent + interval).max(now));
            return;
        }
        let msg = format!(
            "Preferred master {} answered the failback ping; failing back from master {}",
            self.labels[0], self.labels[cur]
        );
        self.log(Level::INFO, msg);
        self.actions.push_back(Action::Disconnect { idx: cur });
        self.count_leave(LeaveCause::Failback);
        self.failing_back = true;
        self.order = (0..self.cfg.masters.len()).collect();
        if self.cfg.random_master {
            self.shuffle_order(None);
        }
        self.start_round(now);
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

#[derive(Debug)]
enum Phase {
    AwaitingAcceptance(AwaitingAcceptance),
    BackingOff(BackingOff),
    Connected(Connected),
    Connecting(Connecting),
    Exiting(Exiting),
    Stopped,
}

#[derive(Debug)]
struct Connecting {
    idx: usize,
    /// 1-based sign-in attempt on this master (`auth_tries` in `str` mode).
    attempt: u32,
    deadline: Instant,
}

#[derive(Debug)]
struct AwaitingAcceptance {
    idx: usize,
    retry_at: Instant,
}

#[derive(Debug)]
struct Connected {
    idx: usize,
    since: Instant,
    live: Liveness,
    /// Present when failback is on and this is not the preferred master.
    failback: Option<Failback>,
}

#[derive(Debug)]
struct Liveness {
    /// When to send the next periodic alive check (`None`: checks are off).
    next_check: Option<Instant>,
    /// Checks sent and not yet answered, failed or timed out, oldest first.
    in_flight: Vec<Probe>,
    /// When the oldest check not yet answered (sent after the last answered one) went out.
    first_unanswered: Option<Instant>,
    /// Checks sent after the last answered one (answered or not: failed ones count).
    sent_since_heard: u32,
    sub_down_since: Option<Instant>,
}

/// How an alive check failed.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
enum Failed {
    /// The driver reported an error before the deadline (connection refused or dropped).
    Refused,
    /// No answer by the deadline.
    TimedOut,
}

#[derive(Debug)]
struct Failback {
    next_ping: Option<Instant>,
    in_flight: Option<Probe>,
}

#[derive(Clone, Copy, Debug)]
struct Probe {
    id: CheckId,
    sent: Instant,
    deadline: Instant,
}

#[derive(Debug)]
struct BackingOff {
    until: Instant,
    resume: Resume,
}

#[derive(Clone, Copy, Debug)]
enum Resume {
    /// Start a new round over the list.
    NewRound,
    /// Sign in to this master again (`str` mode).
    Retry(usize),
}

#[derive(Debug)]
struct Exiting {
    at: Instant,
    code: i32,
    reason: String,
}

#[derive(Clone, Copy, Debug)]
enum Failure {
    Dns,
    Error,
    Full,
    Rejected,
    Timeout,
}

#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    full: u32,
    rejected: u32,
    unreachable: u32,
    unresolvable: u32,
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
mod tests {
    use super::*;

    #[test]
    fn labels_disambiguate_shared_hosts() {
        let l = labels(&[
            MasterAddr::new("a", 1),
            MasterAddr::new("a", 2),
            MasterAddr::new("b", 1),
        ]);
        assert_eq!(l, ["a:1", "a:2", "b"]);
    }

    #[test]
    fn secs_formats_like_salt() {
        assert_eq!(secs(Duration::from_secs(10)), "10");
        assert_eq!(secs(Duration::from_millis(1500)), "1.5");
    }

    #[test]
    fn disable_stops_at_once() {
        let cfg = FailoverConfig {
            master_type: MasterType::Disable,
            masters: vec![],
            ..FailoverConfig::default()
        };
        let now = Instant::now();
        let mut st = FailoverState::new(cfg, 0, now).unwrap();
        assert_eq!(st.phase(), PhaseKind::Stopped);
        assert!(matches!(st.poll_action(), Some(Action::Log { .. })));
        assert_eq!(st.poll_action(), None);
        assert_eq!(st.poll_timeout(), None);
    }

    #[test]
    fn alive_timing_leaves_half_the_interval_for_the_next_master() {
        let mut cfg = FailoverConfig::failover(vec![MasterAddr::new("a", 1)]);
        cfg.alive_interval = Some(Duration::from_secs(5));
        let st = FailoverState::new(cfg, 0, Instant::now()).unwrap();
        let (p, l) = st.alive_timing().unwrap();
        assert_eq!(l, Duration::from_secs(2));
        // Two checks go out within the silence window, and detection (P + L) leaves over 40%
        // of the interval for the next master.
        assert!(CHECKS_TO_LOSE * p <= l);
        assert!((p + l) * 10 <= Duration::from_secs(5) * 6);
    }
}
