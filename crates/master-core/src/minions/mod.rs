//! What the master knows about its minions.

pub mod data;
pub mod target;
