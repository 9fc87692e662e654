//! salt-master-core: the master daemon's services, wire-compatible with Salt 3006, 3007 and 3008.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod convert;
pub mod events;
pub mod jobs;
pub mod keys;
/// The local client protocol (`salt`, `salt-run`): `salt_client::local`.
pub use salt_client::local;
/// Salt's outputters (moved to `salt-output`; re-exported for the CLIs).
pub use salt_output as output;
pub mod minions;
pub mod pillar;
pub mod requests;
pub mod runners;
pub mod server;
pub mod shared;

pub use server::{MasterError, Ready, run, run_with_ready};
