//! What the master knows about its minions: the minion data cache ([`data`]) and target
//! matching over it ([`target`]), the Salt Resources minions manage ([`resources`]).

pub(crate) mod data;
pub(crate) mod resources;
pub(crate) mod target;
