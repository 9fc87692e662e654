//! The `external_auth` backends: Salt's `salt/auth/{pam,file,auto,sharedsecret}.py`.
//!
//! Each answers one question, "is this the password of this user?", with a plain yes or no;
//! the reasons for a no go to the log (never the password). Group lookups (`group%` keys)
//! are Salt's `pam.groups()`: the user's system groups.

mod file;
mod htpasswd;
mod pam;

use crate::config::{Backend, BackendConfig, EauthConfig};

pub use htpasswd::{apr1_crypt, verify_htpasswd_hash};
pub use pam::user_groups;

/// `<backend>.auth(username, password)`.
pub fn authenticate(
    cfg: &EauthConfig,
    section: &BackendConfig,
    username: &str,
    password: &str,
) -> bool {
    match section.backend {
        Backend::Auto => true,
        Backend::SharedSecret => cfg
            .sharedsecret
            .as_ref()
            .is_some_and(|secret| ct_eq(secret.as_bytes(), password.as_bytes())),
        Backend::File => file::authenticate(section, username, password),
        Backend::Pam => pam::authenticate(&cfg.pam_service, username, password),
    }
}

/// Equality that takes the same time for every input of one length (OpenSSL's
/// `CRYPTO_memcmp`); only the length can leak.
pub(crate) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && openssl::memcmp::eq(a, b)
}

/// `<backend>.groups(username)`: `None` for a backend without `groups()`.
pub fn groups(backend: Backend, username: &str) -> Option<Vec<String>> {
    backend.has_groups().then(|| user_groups(username))
}
