//! A deterministic simulator for [`FailoverState`]: scripted fake masters on a fake clock.
//!
//! In the spirit of quinn-proto's test `Pair`: [`Sim`] carries out every [`Action`] against a
//! set of [`FakeMaster`]s (each with a sign-in answer and a health timeline), delivers their
//! answers after a fixed latency, and jumps the clock straight to the next thing that can
//! happen (an answer, a health change, or [`FailoverState::poll_timeout`]). A ten-minute
//! scenario runs in microseconds. [`Sim::drive_bounded`] fails if the state machine does not
//! let time advance (livelock).
//!
//! It also checks the driver contract while it runs and records breaches in
//! [`Sim::violations`]: no action to a master other than the one whose sockets are open, and
//! a master order that stays a permutation of all masters.
//!
//! Used by this crate's tests and the `failover_trace` example; not by the minion itself.

use std::time::{Duration, Instant};

use tracing::Level;

use super::{Action, Event, FailoverConfig, FailoverState, PhaseKind};

/// What a fake master answers to a sign-in while it is healthy.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Answer {
    /// Accepts the minion.
    Accept,
    /// Answers with an error the driver notices (bad master key, bad signature).
    Broken,
    /// `ret: "full"`.
    Full,
    /// `ret: False`.
    Reject,
    /// Its name does not resolve (independent of health).
    Unresolvable,
}

/// The health of a fake master at some moment.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Health {
    /// Black-holed network: packets dropped, no RST. No answers, no disconnect.
    BlackHole,
    /// Process exited or was killed: the kernel resets the connections, so the SUB monitor
    /// reports a disconnect at once, and requests (sign-ins, alive checks) fail at once
    /// (connection refused or dropped; the driver's clients fail fast).
    Exited,
    /// SIGSTOP: connections stay up, nothing is answered.
    Frozen,
    /// Answers everything.
    Up,
}

/// A scripted master.
#[derive(Clone, Debug)]
pub struct FakeMaster {
    /// The sign-in answer once `pending_first` pending answers have been given.
    pub answer: Answer,
    /// Answer "pending" to this many sign-ins first.
    pub pending_first: u32,
    /// Health changes at offsets from the start of the simulation (starts [`Health::Up`]).
    pub health: Vec<(Duration, Health)>,
    /// Moments at which the SUB connection drops and comes back 100 ms later although the
    /// master is healthy (network blip, Salt #66497 territory).
    pub sub_blips: Vec<Duration>,
}

impl FakeMaster {
    /// A healthy master with this answer.
    pub fn new(answer: Answer) -> Self {
        Self {
            answer,
            pending_first: 0,
            health: Vec::new(),
            sub_blips: Vec::new(),
        }
    }

    /// A healthy master that accepts.
    pub fn accept() -> Self {
        Self::new(Answer::Accept)
    }

    /// Answers "pending" `n` times before `self.answer`.
    pub fn pending(mut self, n: u32) -> Self {
        self.pending_first = n;
        self
    }

    /// Changes health at `at`.
    pub fn at(mut self, at: Duration, health: Health) -> Self {
        self.health.push((at, health));
        self
    }

    /// A SUB blip at `at`.
    pub fn blip(mut self, at: Duration) -> Self {
        self.sub_blips.push(at);
        self
    }
}

/// One recorded action with its time since the start.
#[derive(Clone, Debug)]
pub struct Record {
    /// Offset from the start of the simulation.
    pub at: Duration,
    /// The action.
    pub action: Action,
}

/// [`Sim::drive_bounded`] gave up.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
pub enum SimError {
    /// Too many steps without reaching the end time: the state machine is spinning.
    #[error("livelock: {steps} steps without reaching {until:?} (now {now:?})")]
    Livelock {
        /// Steps taken.
        steps: usize,
        /// The target time.
        until: Duration,
        /// Where the clock stopped.
        now: Duration,
    },
}

#[derive(Clone, Copy, Debug)]
enum Change {
    Health(Health),
    BlipDown,
    BlipUp,
}

#[derive(Clone, Debug)]
struct Queued {
    at: Instant,
    seq: u64,
    event: Event,
    /// Dropped if this master is not [`Health::Up`] at delivery.
    needs_up: Option<usize>,
}

/// The simulator. See the module docs.
pub struct Sim {
    /// The state machine under test.
    pub st: FailoverState,
    /// Time zero.
    pub start: Instant,
    /// The fake clock.
    pub now: Instant,
    /// One-way latency of every answer.
    pub latency: Duration,
    /// How long libzmq takes to reconnect the SUB after an exited master comes back.
    pub sub_reconnect: Duration,
    /// Model the SUB socket's ZeroMQ heartbeats (a frozen or black-holed master then also
    /// shows up as a SUB disconnect). Off by default, so tests exercise the alive checks.
    pub zmq_heartbeats: bool,
    /// Every action, in order.
    pub trace: Vec<Record>,
    /// Contract breaches seen so far.
    pub violations: Vec<String>,
    /// Exit code and time, once [`Action::Exit`] happened.
    pub exit: Option<(Duration, i32)>,
    /// Sign-ins received per master.
    pub sign_ins: Vec<u32>,
    masters: Vec<FakeMaster>,
    health: Vec<Health>,
    changes: Vec<(Instant, usize, Change)>,
    next_change: usize,
    queue: Vec<Queued>,
    seq: u64,
    open: Option<usize>,
    subscribed: Option<usize>,
}

impl Sim {
    /// A simulation of `cfg` (whose `masters` must line up with `masters`) with RNG seed
    /// `seed`.
    pub fn new(cfg: FailoverConfig, masters: Vec<FakeMaster>, seed: u64) -> Self {
        #[allow(clippy::disallowed_methods)] // the simulation's epoch: only differences matter
        let start = Instant::now();
        let n = masters.len();
        let mut changes = Vec::new();
        for (idx, m) in masters.iter().enumerate() {
            for &(at, h) in &m.health {
                changes.push((start + at, idx, Change::Health(h)));
            }
            for &at in &m.sub_blips {
                changes.push((start + at, idx, Change::BlipDown));
                changes.push((start + at + Duration::from_millis(100), idx, Change::BlipUp));
            }
        }
        changes.sort_by_key(|c| c.0);
        #[allow(clippy::expect_used)]
        let st = FailoverState::new(cfg, seed, start).expect("valid failover config");
        Self {
            st,
            start,
            now: start,
            latency: Duration::from_millis(5),
            sub_reconnect: Duration::from_millis(500),
            zmq_heartbeats: false,
            trace: Vec::new(),
            violations: Vec::new(),
            exit: None,
            sign_ins: vec![0; n],
            masters,
            health: vec![Health::Up; n],
            changes,
            next_change: 0,
            queue: Vec::new(),
            seq: 0,
            open: None,
            subscribed: None,
        }
    }

    /// Time since the start.
    pub fn elapsed(&self) -> Duration {
        self.now - self.start
    }

    /// Runs until `until` (offset from the start), an exit, or `max_steps` steps.
    pub fn drive_bounded(&mut self, until: Duration, max_steps: usize) -> Result<(), SimError> {
        let end = self.start + until;
        let mut steps = 0;
        loop {
            self.drain_actions();
            if self.exit.is_some() || self.now >= end {
                return Ok(());
            }
            steps += 1;
            if steps > max_steps {
                return Err(SimError::Livelock {
                    steps,
                    until,
                    now: self.elapsed(),
                });
            }
            let next = [
                self.queue.iter().map(|q| q.at).min(),
                self.st.poll_timeout(),
                self.changes.get(self.next_change).map(|c| c.0),
                Some(end),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(end);
            self.now = self.now.max(next.min(end));
            self.apply_changes();
            self.deliver_events();
            if self.st.poll_timeout().is_some_and(|t| t <= self.now) {
                self.st.handle_timeout(self.now);
            }
            self.check_order();
        }
    }

    /// Runs until `until` with a generous step bound (one step per simulated millisecond).
    pub fn run_until(&mut self, until: Duration) -> Result<(), SimError> {
        let bound = usize::try_from(until.as_millis())
            .unwrap_or(usize::MAX)
            .max(1000);
        self.drive_bounded(until, bound)
    }

    /// Log lines as `(offset, level, message)`.
    pub fn logs(&self) -> Vec<(Duration, Level, &str)> {
        self.trace
            .iter()
            .filter_map(|r| match &r.action {
                Action::Log { level, message } => Some((r.at, *level, message.as_str())),
                _ => None,
            })
            .collect()
    }

    /// Log messages at INFO and above, in order.
    pub fn info_lines(&self) -> Vec<&str> {
        self.logs()
            .into_iter()
            .filter(|(_, l, _)| *l <= Level::INFO)
            .map(|(_, _, m)| m)
            .collect()
    }

    /// The first time a log line containing `needle` was written at or after `from`.
    pub fn first_log_after(&self, from: Duration, needle: &str) -> Option<Duration> {
        self.logs()
            .into_iter()
            .find(|(at, _, m)| *at >= from && m.contains(needle))
            .map(|(at, _, _)| at)
    }

    /// Actions (other than logs) matching `pred` in `[from, to)`.
    pub fn count(&self, from: Duration, to: Duration, pred: impl Fn(&Action) -> bool) -> usize {
        self.trace
            .iter()
            .filter(|r| r.at >= from && r.at < to && pred(&r.action))
            .count()
    }

    /// `(offset, master)` of every [`Action::Connected`].
    pub fn connections(&self) -> Vec<(Duration, usize)> {
        self.trace
            .iter()
            .filter_map(|r| match r.action {
                Action::Connected { idx, .. } => Some((r.at, idx)),
                _ => None,
            })
            .collect()
    }

    /// Whether the minion is connected to a master that is currently healthy.
    pub fn connected_to_healthy(&self) -> bool {
        self.st
            .current_master()
            .is_some_and(|i| self.health[i] == Health::Up)
    }

    fn drain_actions(&mut self) {
        while let Some(action) = self.st.poll_action() {
            self.trace.push(Record {
                at: self.elapsed(),
                action: action.clone(),
            });
            self.carry_out(action);
        }
    }

    fn carry_out(&mut self, action: Action) {
        match action {
            Action::SignIn { idx, .. } => {
                if self.open.is_some_and(|o| o != idx) {
                    self.violate(format!("SignIn({idx}) while {:?} is open", self.open));
                }
                self.open = Some(idx);
                self.sign_ins[idx] += 1;
                let m = &self.masters[idx];
                if m.answer == Answer::Unresolvable {
                    self.push(Duration::ZERO, Event::DnsFailed(idx), None);
                    return;
                }
                // An exited master's port refuses the connection: in failover mode the
                // driver's fail-fast client reports it at once (with one master it waits).
                if self.health[idx] == Health::Exited
                    && self.st.config().master_type == super::MasterType::Failover
                {
                    self.push(self.latency * 2, Event::SignInFailed(idx), None);
                    return;
                }
                if self.health[idx] != Health::Up {
                    return;
                }
                let event = if self.sign_ins[idx] <= m.pending_first {
                    Event::SignInPending(idx)
                } else {
                    match m.answer {
                        Answer::Accept => Event::SignInAccepted(idx),
                        Answer::Broken => Event::SignInFailed(idx),
                        Answer::Full => Event::SignInFull(idx),
                        Answer::Reject => Event::SignInRejected(idx),
                        Answer::Unresolvable => Event::DnsFailed(idx),
                    }
                };
                self.push(self.latency * 2, event, Some(idx));
            }
            Action::Subscribe { idx, .. } => {
                if self.open != Some(idx) {
                    self.violate(format!("Subscribe({idx}) while {:?} is open", self.open));
                }
                self.subscribed = Some(idx);
                if self.health[idx] == Health::Up {
                    self.push(self.latency * 2, Event::SubConnected(idx), None);
                }
            }
            Action::Connected { idx, .. } if self.open != Some(idx) => {
                self.violate(format!("Connected({idx}) while {:?} is open", self.open));
            }
            Action::Disconnect { idx } => {
                if self.open != Some(idx) {
                    self.violate(format!("Disconnect({idx}) while {:?} is open", self.open));
                }
                self.open = None;
                self.subscribed = None;
            }
            Action::SendAliveCheck { idx, id, .. } => {
                if self.open != Some(idx) {
                    self.violate(format!(
                        "alive check to {idx} while {:?} is open",
                        self.open
                    ));
                }
                match self.health[idx] {
                    Health::Up => {
                        self.push(self.latency * 2, Event::AliveCheckOk { idx, id }, Some(idx));
                    }
                    Health::Exited => {
                        let event = Event::AliveCheckFailed { idx, id };
                        self.push(self.latency * 2, event, None);
                    }
                    _ => {}
                }
            }
            Action::SendFailbackPing { idx, id, .. } if self.health[idx] == Health::Up => {
                let event = Event::FailbackPingOk { idx, id };
                self.push(self.latency * 2, event, Some(idx));
            }
            Action::Exit { code, .. } => self.exit = Some((self.elapsed(), code)),
            _ => {}
        }
    }

    fn push(&mut self, after: Duration, event: Event, needs_up: Option<usize>) {
        self.seq += 1;
        self.queue.push(Queued {
            at: self.now + after,
            seq: self.seq,
            event,
            needs_up,
        });
    }

    fn apply_changes(&mut self) {
        while let Some(&(at, idx, change)) = self.changes.get(self.next_change) {
            if at > self.now {
                break;
            }
            self.next_change += 1;
            let subscribed = self.subscribed == Some(idx);
            match change {
                Change::Health(h) => {
                    let prev = std::mem::replace(&mut self.health[idx], h);
                    if !subscribed || prev == h {
                        continue;
                    }
                    if h == Health::Exited {
                        self.push(self.latency, Event::SubDisconnected(idx), None);
                    } else if h == Health::Up && prev == Health::Exited {
                        self.push(self.sub_reconnect, Event::SubConnected(idx), None);
                    } else if self.zmq_heartbeats
                        && prev == Health::Up
                        && let Some((_, timeout)) = self.st.sub_heartbeat()
                    {
                        self.push(timeout, Event::SubDisconnected(idx), None);
                    }
                }
                Change::BlipDown if subscribed => {
                    self.push(Duration::ZERO, Event::SubDisconnected(idx), None);
                }
                Change::BlipUp if subscribed => {
                    self.push(Duration::ZERO, Event::SubConnected(idx), None);
                }
                _ => {}
            }
        }
    }

    fn deliver_events(&mut self) {
        loop {
            let Some(pos) = self
                .queue
                .iter()
                .enumerate()
                .filter(|(_, q)| q.at <= self.now)
                .min_by_key(|(_, q)| (q.at, q.seq))
                .map(|(i, _)| i)
            else {
                return;
            };
            let q = self.queue.swap_remove(pos);
            let event = match (q.needs_up.map(|i| self.health[i]), q.event) {
                (None | Some(Health::Up), event) => event,
                // The master exited with the check in flight: the connection drops and the
                // fail-fast client reports it.
                (Some(Health::Exited), Event::AliveCheckOk { idx, id }) => {
                    Event::AliveCheckFailed { idx, id }
                }
                _ => continue,
            };
            if self.st.phase() == PhaseKind::Stopped {
                continue;
            }
            self.st.handle(event, self.now);
            self.drain_actions();
        }
    }

    fn check_order(&mut self) {
        let mut order = self.st.master_order().to_vec();
        order.sort_unstable();
        if order != (0..self.masters.len()).collect::<Vec<_>>() {
            let msg = format!("master order {:?} lost a master", self.st.master_order());
            self.violate(msg);
        }
    }

    fn violate(&mut self, msg: String) {
        self.violations
            .push(format!("at {:?}: {msg}", self.elapsed()));
    }
}
