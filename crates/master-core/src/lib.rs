//! salt-master-core: the master daemon's services, wire-compatible with Salt 3006, 3007 and 3008.
//!
//! [`run`]`(config, shutdown)` opens the master's state ([`shared::Shared::open`]), binds the
//! sockets and serves until `shutdown` completes. The code is in folders by responsibility,
//! and no file imports one that imports it back (lower folders never reach up):
//!
//! * `server/`: the run loop (sockets, worker pool, maintenance, shutdown), the local `salt`
//!   socket (`server/local.rs`, the other end of `salt_client::local`), the master group;
//! * [`requests`]: one request body in, one reply body out: `_auth`, the AES commands and
//!   what each does, the mine, Salt's answers to commands salt-rs does not implement, and the
//!   one place a failure becomes Salt's reply (`requests/error.rs`); a request handled on the
//!   socket thread carries a `salt_fileserver::inline::Budget` and is declined (handed to a
//!   worker) when it needs more than quick work;
//! * `jobs/`: the job cache behind the `JobStore` trait (files or `pgjsonb`), the return sink,
//!   the `salt` commands waiting for returns, jids, publishing, running a job and waiting for
//!   it as `salt` does (`find_job` rounds);
//! * [`keys`]: the master key and `pub_sig`, the publish AES key and its rotation, per-minion
//!   session keys, the minion `tok` cache, the publisher ACL;
//! * `minions/`: the minion data cache and target matching;
//! * [`events`]: the event bus and the Prometheus metrics;
//! * `runners/`: what `salt-run` calls;
//! * `reactor/`: the reactor (events to reactions, docs/reactor.md);
//! * [`pillar`]: pillar compilation;
//! * [`shared`]: [`shared::Shared`], what the tasks share, opened in one place.
//!
//! The file server is its own crate, `salt-fileserver`; the outputters are `salt-output`; the
//! local socket protocol is `salt-client`. This crate parses no command line and sets up no
//! logging (the `salt-master` binary does).
// `unsafe` only in server/trim.rs (glibc's `malloc_trim`, FFI with a SAFETY note).
#![deny(unsafe_code)]
#![warn(unreachable_pub)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod batch;
mod error;
pub mod events;
mod jobs;
pub mod keys;
mod minions;
mod orchestrate;
pub mod pillar;
mod reactor;
pub mod requests;
mod runners;
mod server;
pub mod shared;
mod wheel;

pub use error::MasterError;
pub use runners::exists as runner_exists;
/// The job cache as tools and tests reach it: Salt's `local_cache` layout and its files
/// driver, the store trait, the clean-up, and Salt's `jid_to_time`.
pub mod job_cache {
    pub use crate::jobs::clean::{CleanReport, clean_old_jobs};
    pub use crate::jobs::files::FileJobs;
    pub use crate::jobs::local_cache;
    pub use crate::jobs::pg_returner::{PostgresJobs, return_row, salt_json};
    pub use crate::jobs::store::{JobError, JobStore};
    pub use crate::runners::jobs::jid_to_time;
}
pub use server::{Ready, run, run_with_ready};
