//! salt-minion-core: the minion's brain, without the binary's CLI and logging.
//!
//! * [`matcher`]: does a job target this minion (glob, pcre, list, grain)?
//! * [`grains`]: facts about the host.
//! * [`modules`]: the execution-function registry (`test`, `cmd`, `grains`, `sys`, `state`,
//!   `cp`, `pillar`, `saltutil`); [`fileclient`]: `salt://` from the master;
//!   [`master_link`]: the AES request channel modules use.
//! * [`job`]: publish load → job → `_return` load; duplicate-jid filter.
//! * [`pageout`]: the start-up's code pages given back once signed in, a job's once idle.
// Denied, not forbidden: `pageout` allows itself its one FFI call (madvise).
#![deny(unsafe_code)]

pub mod blocking;
pub mod channel;
pub mod cmdmod;
pub mod driver;
pub mod fileclient;
pub mod grains;
pub mod job;
pub mod kept;
pub mod master_link;
pub mod masterless;
pub mod matcher;
pub mod metrics;
pub mod modules;
pub mod net;
pub mod pageout;
pub mod running;
pub mod signin;
pub mod startup;
