//! salt-minion-core: the minion's brain, without the binary's CLI and logging.
//!
//! Masters and failover:
//! * the sans-IO `FailoverState` (which master to use and when it counts as gone) and
//!   `rekey` (when to re-authenticate after an AES key rotation) are the `salt-failover` crate;
//! * [`driver`]: the daemon loop driving that state machine, its network I/O through [`net`]
//!   (salt-transport) and [`channel`] (the AES request and publish channels as functions
//!   over bytes); [`signin`]: a one-shot sign-in for `salt-call` against a master;
//!   [`master_link`]: the AES request channel execution modules use (`_pillar`, file
//!   server); [`fileclient`]: `salt://` files from the master;
//! * [`kept`]: returns kept until a master acknowledges them; [`metrics`]: the opt-in
//!   Prometheus endpoint.
//!
//! Jobs:
//! * [`matcher`]: does a job target this minion (salt-matcher with the minion's id, grains
//!   and pillar)? [`job`]: publish load → job → `_return` load; duplicate-jid filter;
//!   [`running`]: the jobs running now and the `saltutil` functions over them;
//! * [`modules`]: the one execution-function registry (`test`, `grains`, `sys`, `cmd`,
//!   `saltutil`, `state`, `pillar`, `cp`, and salt-execmods' `pkg`, `service`, `user`,
//!   `group`, `file`, `cron`, `hosts`, `network`, `disk`, `status`); [`cmdmod`]: `cmd.*`
//!   with Salt's arguments;
//! * [`grains`]: facts about the host; [`masterless`]: `salt-call --local`'s files and pillar
//!   (`file_roots`, `salt-pillar`); [`blocking`]: the one way synchronous code (templates'
//!   `salt[...]`) waits on async work.
//!
//! The process: [`startup`]: the start-up steps with a stall watchdog; [`pageout`]: the
//! start-up's code pages given back once signed in, a job's once idle.
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
