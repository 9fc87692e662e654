//! What the master knows about its minions: the minion data cache ([`data`], held in memory
//! for targeting by [`index`]) and target
//! matching over it ([`target`]), the Salt Resources minions manage ([`resources`]).

pub(crate) mod data;
pub(crate) mod index;
pub(crate) mod resources;
pub(crate) mod target;
#[cfg(test)]
mod target_bench;
