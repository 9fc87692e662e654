//! Keys and who may do what: the master key and `pub_sig` ([`master`]), the publish AES key
//! and its rotation ([`aes`]), per-minion session keys ([`sessions`]), the minion `tok` cache
//! ([`tokens`]), `publisher_acl` ([`acl`]), the access keys of local callers
//! (`cachedir/.<user>_key`, [`access`]).

pub(crate) mod access;
pub mod acl;
pub mod aes;
pub mod master;
pub mod sessions;
pub mod tokens;
