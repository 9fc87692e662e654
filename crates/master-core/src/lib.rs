//! salt-master-core: the master daemon's services, wire-compatible with Salt 3006, 3007 and 3008.
//!
//! Layout:
//! * [`server`]: [`run`]`(config, shutdown)`: sockets, worker pool, maintenance, shutdown.
//! * [`request`]: one request body in, one reply body out (auth, AES commands, ping).
//! * [`keys`], [`aes`], [`sessions`]: master key and `pub_sig`, publish key and serial,
//!   per-minion session keys.
//! * [`jobs`], [`publish`]: job cache, return streaming, publish payloads.
//! * [`local`], [`local_server`]: the `salt` ↔ master protocol on a Unix socket.
//! * [`target`], [`acl`], [`jid`]: target matching, publisher ACL, job ids.
//! * [`output`], [`convert`]: the `salt` command's outputters, msgpack ↔ JSON.
//! * [`unsupported`]: Salt's answers for the AES commands salt-rs does not implement.
//! * The file server is its own crate, `salt-fileserver`, called from [`request`].
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod acl;
pub mod aes;
pub mod convert;
pub mod event_ipc;
pub mod events;
pub mod gather;
mod group;
pub mod jid;
pub mod jobs;
pub mod jobs_clean;
pub mod keys;
/// The local client protocol (`salt`, `salt-run`): `salt_client::local`.
pub use salt_client::local;
pub mod local_server;
pub mod metrics;
/// Salt's outputters (moved to `salt-output`; re-exported for the CLIs).
pub use salt_output as output;
pub mod mine;
pub mod minion_data;
pub mod pillar;
pub mod publish;
pub mod request;
pub mod runners;
pub mod server;
pub mod sessions;
pub mod state;
pub mod target;
pub mod tokens;
pub mod unsupported;
pub mod workers_socket;

pub use server::{MasterError, Ready, run, run_with_ready};
