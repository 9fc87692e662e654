//! What the master knows about its minions: the minion data cache ([`data`]) and target
//! matching over it ([`target`]).

pub(crate) mod data;
pub(crate) mod target;
