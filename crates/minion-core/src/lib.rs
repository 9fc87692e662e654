//! salt-minion-core: the minion's brain, without the binary's CLI and logging.
//!
//! * [`matcher`]: does a job target this minion (glob, pcre, list, grain)?
//! * [`grains`]: facts about the host.
//! * [`modules`]: execution functions (`test.*`, `cmd.*`, `grains.*`, `sys.*`).
//! * [`job`]: publish load → job → `_return` load; duplicate-jid filter.
//! * [`rekey`]: when to re-authenticate after an AES key rotation (spread, no stampede).
#![forbid(unsafe_code)]

pub mod channel;
pub mod cmdmod;
pub mod driver;
pub mod failover;
pub mod grains;
pub mod job;
pub mod kept;
pub mod matcher;
pub mod metrics;
pub mod modules;
pub mod net;
pub mod rekey;
pub mod running;
pub mod startup;
