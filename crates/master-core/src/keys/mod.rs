//! Keys and who may do what: the master key and `pub_sig` ([`master`]), the publish AES key
//! and its rotation ([`aes`]), per-minion session keys ([`sessions`]), the minion `tok` cache
//! ([`tokens`]), the access keys of local callers (`cachedir/.<user>_key`, [`access`]),
//! re-reading `pki_dir` only when it changed (`dirwatch`).
//! Who may publish what (`publisher_acl`, eauth) is `salt_eauth`'s, for every entry point.

pub(crate) mod access;
pub mod aes;
pub(crate) mod dirwatch;
pub mod master;
pub mod sessions;
pub mod tokens;
