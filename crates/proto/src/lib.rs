//! salt-proto
#![forbid(unsafe_code)]

pub mod auth_minion;
