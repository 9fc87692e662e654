//! salt-examples: the local lab and the swarm (many simulated minions in one process, for
//! load tests of our master and real Salt's alike).
#![forbid(unsafe_code)]

pub mod swarm;
