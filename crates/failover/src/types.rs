//! The state machine's inputs and outputs: [`Event`], [`Action`], and the ids and summaries
//! its getters return.

use std::time::Duration;

use tracing::Level;

use super::MasterAddr;

/// Identifies one alive check or failback ping, so that a late answer to an earlier one is
/// not mistaken for an answer to the current one. The driver echoes it back in the event.
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub struct CheckId(pub u64);

/// What the driver observed. Every event names the master index (into
/// [`FailoverConfig::masters`]) it is about; events about a master the state machine is not
/// currently working with are stale and ignored.
#[derive(Clone, Debug, Eq, PartialEq)]
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
