//! What the master reports.

pub mod bus;
pub mod metrics;
