//! ZeroMQ transport for the Salt master and minion: bytes and peers, nothing of Salt.
//!
//! Four socket roles, each owned by a dedicated OS thread (libzmq sockets are not
//! thread-safe) and bridged to tokio with channels:
//!
//! | type | socket | Salt use |
//! |---|---|---|
//! | [`RouterServer`] | ROUTER, bind | request server, requests to a tokio channel |
//! | [`PoolServer`] | ROUTER, bind | master request server (`ret_port` 4506), own worker threads |
//! | [`Publisher`] | PUB, bind | master publisher (`publish_port` 4505) |
//! | [`ReqClient`] | REQ, connect | minion requests (auth, returns, pillar) |
//! | [`SubClient`] | SUB, connect | minion job subscription |
//!
//! ```text
//!  tokio tasks ──mpsc + doorbell──▶ socket thread ──zmq_poll──▶ libzmq ◀──TCP──▶ peers
//!              ◀──bounded mpsc / oneshot──┘
//! ```
//!
//! Options follow Salt (`docs/salt-wire-protocol.md` §1), TCP keepalive included; ZMTP
//! heartbeats notice a frozen peer sooner. Each handle has its own `zmq::Context`,
//! so dropping or closing it joins its thread *and* libzmq's I/O threads and releases the
//! port before returning (a restarted server can re-bind at once).
//!
//! This crate does not know Salt's messages, encryption or retry policy (beyond replacing a
//! timed-out REQ socket, which REQ's state machine requires); the cores do.
// `unsafe` is denied (workspace lint) except in `draft`: the FFI calls for libzmq's draft
// socket options, which the `zmq` crate does not wrap.
#![deny(unsafe_code)]

mod draft;
mod endpoint;
mod error;
mod lanes;
mod options;
mod pool;
mod publisher;
mod req;
mod router;
mod sub;
mod worker;

pub use endpoint::{ip_bracket, tcp_endpoint, tcp_endpoint_from};
pub use error::{TransportError, ZmqError};
pub use lanes::{Deferrable, Dropped};
pub use options::{
    Heartbeat, IoBatch, Keepalive, PublisherOptions, ReqOptions, ServerOptions, SubOptions,
};
pub use pool::{Handler, Inline, PoolServer};
pub use publisher::Publisher;
pub use req::{ReqClient, request_once};
pub use router::{PeerId, Replier, Request, RouterServer};
pub use sub::{SubClient, SubEvent};
pub use worker::RefusedConnections;

/// The libzmq version in use, e.g. `(4, 3, 4)` (for logs and `--versions-report`).
pub fn zmq_version() -> (i32, i32, i32) {
    zmq::version()
}
