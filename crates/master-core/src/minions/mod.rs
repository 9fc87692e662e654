//! What the master knows about its minions: the minion data cache ([`data`], held in memory
//! for targeting by [`index`] in a
//! [`compact`] form) and target
//! matching over it ([`target`]), the Salt Resources minions manage ([`resources`]).

mod compact;
pub(crate) mod data;
pub(crate) mod index;
pub(crate) mod resources;
pub(crate) mod target;
#[cfg(test)]
mod target_bench;
