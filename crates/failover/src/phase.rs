//! The phases of [`FailoverState`](super::FailoverState) and their per-phase data.

use std::time::Instant;

use super::CheckId;

#[derive(Debug)]
pub(super) enum Phase {
    AwaitingAcceptance(AwaitingAcceptance),
    BackingOff(BackingOff),
    Connected(Connected),
    Connecting(Connecting),
    Exiting(Exiting),
    Stopped,
}

#[derive(Debug)]
pub(super) struct Connecting {
    pub(super) idx: usize,
    /// 1-based sign-in attempt on this master (`auth_tries` in `str` mode).
    pub(super) attempt: u32,
    pub(super) deadline: Instant,
}

#[derive(Debug)]
pub(super) struct AwaitingAcceptance {
    pub(super) idx: usize,
    pub(super) retry_at: Instant,
}

#[derive(Debug)]
pub(super) struct Connected {
    pub(super) idx: usize,
    pub(super) since: Instant,
    pub(super) live: Liveness,
    /// Present when failback is on and this is not the preferred master.
    pub(super) failback: Option<Failback>,
}

#[derive(Debug)]
pub(super) struct Liveness {
    /// When to send the next periodic alive check (`None`: checks are off).
    pub(super) next_check: Option<Instant>,
    /// Checks sent and not yet answered, failed or timed out, oldest first.
    pub(super) in_flight: Vec<Probe>,
    /// When the oldest check not yet answered (sent after the last answered one) went out.
    pub(super) first_unanswered: Option<Instant>,
    /// Checks sent after the last answered one (answered or not: failed ones count).
    pub(super) sent_since_heard: u32,
    pub(super) sub_down_since: Option<Instant>,
}

/// How an alive check failed.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(super) enum Failed {
    /// The driver reported an error before the deadline (connection refused or dropped).
    Refused,
    /// No answer by the deadline.
    TimedOut,
}

#[derive(Debug)]
pub(super) struct Failback {
    pub(super) next_ping: Option<Instant>,
    pub(super) in_flight: Option<Probe>,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Probe {
    pub(super) id: CheckId,
    pub(super) sent: Instant,
    pub(super) deadline: Instant,
}

#[derive(Debug)]
pub(super) struct BackingOff {
    pub(super) until: Instant,
    pub(super) resume: Resume,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Resume {
    /// Start a new round over the list.
    NewRound,
    /// Sign in to this master again (`str` mode).
    Retry(usize),
}

#[derive(Debug)]
pub(super) struct Exiting {
    pub(super) at: Instant,
    pub(super) code: i32,
    pub(super) reason: String,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Failure {
    Dns,
    Error,
    Full,
    Rejected,
    Timeout,
}

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Tally {
    pub(super) full: u32,
    pub(super) rejected: u32,
    pub(super) unreachable: u32,
    pub(super) unresolvable: u32,
}
