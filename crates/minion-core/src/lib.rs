//! salt-minion-core
#![forbid(unsafe_code)]

pub mod failover;
