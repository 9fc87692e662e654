//! What the master reports: the event bus ([`bus`], `salt-run state.event`) and the
//! Prometheus metrics ([`metrics`]).

pub mod bus;
pub mod ipc;
pub mod metrics;
pub(crate) mod returner;
