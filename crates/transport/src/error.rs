//! The transport's error type.

use std::fmt;

/// Why a transport operation failed.
///
/// The split follows who can act on it: [`Timeout`](Self::Timeout) and
/// [`Closed`](Self::Closed) are expected at runtime and drive retries or shutdown;
/// [`Bind`](Self::Bind) / [`Connect`](Self::Connect) are configuration problems reported
/// at start-up; [`Zmq`](Self::Zmq) and [`Spawn`](Self::Spawn) are environment failures.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// No reply arrived before the deadline. The REQ socket was replaced by a fresh one,
    /// so the next request can proceed.
    #[error("request timed out")]
    Timeout,
    /// The connection to the peer failed (refused, or closed before the reply) and the
    /// client was told to fail fast ([`ReqOptions::fail_fast`](crate::ReqOptions::fail_fast)).
    /// The REQ socket was replaced, as after a timeout.
    #[error("peer unreachable (connection refused or closed)")]
    Unreachable,
    /// The socket thread has stopped (the handle was closed or the thread failed).
    #[error("transport closed")]
    Closed,
    /// Binding a listening socket failed (address in use, bad endpoint, ...).
    #[error("cannot bind {endpoint}: {source}")]
    Bind {
        /// The endpoint that was asked for.
        endpoint: String,
        /// What libzmq said.
        source: ZmqError,
    },
    /// Connecting a client socket failed (malformed endpoint, unknown transport, ...).
    /// libzmq connects in the background, so an unreachable peer is *not* this error.
    #[error("cannot connect to {endpoint}: {source}")]
    Connect {
        /// The endpoint that was asked for.
        endpoint: String,
        /// What libzmq said.
        source: ZmqError,
    },
    /// Any other libzmq failure; `op` names what we were doing.
    #[error("zmq {op}: {source}")]
    Zmq {
        /// The operation that failed (e.g. "send", "setsockopt HEARTBEAT_IVL").
        op: &'static str,
        /// What libzmq said.
        source: ZmqError,
    },
    /// The reply was not exactly one frame (Salt always replies with one).
    #[error("malformed reply: {frames} frames")]
    MalformedReply {
        /// How many frames arrived.
        frames: usize,
    },
    /// The socket thread could not be started.
    #[error("cannot start transport thread: {0}")]
    Spawn(#[from] std::io::Error),
}

impl TransportError {
    pub(crate) fn zmq(op: &'static str) -> impl FnOnce(zmq::Error) -> Self {
        move |e| Self::Zmq {
            op,
            source: ZmqError(e),
        }
    }
}

/// An error reported by libzmq (wrapped so the backend stays an implementation detail).
#[derive(Clone, Copy, Eq, PartialEq)]
pub struct ZmqError(pub(crate) zmq::Error);

impl ZmqError {
    /// The POSIX/libzmq error number (e.g. `EADDRINUSE`).
    pub fn errno(&self) -> i32 {
        self.0.to_raw()
    }

    /// True when the address was already in use (useful to retry a bind).
    pub fn is_addr_in_use(&self) -> bool {
        self.0 == zmq::Error::EADDRINUSE
    }
}

impl fmt::Debug for ZmqError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl fmt::Display for ZmqError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.message())
    }
}

impl std::error::Error for ZmqError {}
