//! [`KeyChanges`]: where key changes go. A single master changes its `pki_dir` files (the
//! [`KeyStore`] itself); a master group (docs/group.md) changes its database first, which
//! then mirrors the change into every master's `pki_dir`.

use crate::error::Result;
use crate::store::{AcceptFrom, KeyState, KeyStore, RejectFrom, Report};

/// The key changes the master (sign-ins) and `salt-key` make. Reads stay on the local
/// [`KeyStore`]: with every driver it holds all keys, so a sign-in never waits on a
/// remote store.
pub trait KeyChanges: Send + Sync {
    /// The driver's name in Salt's words (`localfs_key`, `postgres`).
    fn driver(&self) -> &'static str;
    /// Whether a bulk change should come as one call rather than in batches: true where
    /// each call costs a pass over the whole store whatever its size (Salt 3008's
    /// `mmap_key` index: one heap append, one index update and one fsync of each per
    /// call), false where each key costs its own file operation (batches then only set
    /// the progress granularity).
    fn one_batch(&self) -> bool {
        false
    }
    /// Record `pem` as `id`'s key in `state` (see [`KeyStore::put_pending`] and siblings).
    fn put(&self, state: KeyState, id: &str, pem: &str) -> Result<()>;
    /// [`KeyStore::accept_many_prevalidated`]: the caller validated the key files.
    fn accept_many(&self, ids: &[String], from: AcceptFrom) -> Result<Report>;
    /// [`KeyStore::reject_many`].
    fn reject_many(&self, ids: &[String], from: RejectFrom) -> Result<Report>;
    /// [`KeyStore::delete_many`].
    fn delete_many(&self, ids: &[String]) -> Result<Report>;
}

impl KeyChanges for KeyStore {
    fn driver(&self) -> &'static str {
        if self.mmap.is_some() {
            "mmap_key"
        } else {
            "localfs_key"
        }
    }

    fn one_batch(&self) -> bool {
        self.mmap.is_some()
    }

    fn put(&self, state: KeyState, id: &str, pem: &str) -> Result<()> {
        match state {
            KeyState::Accepted => self.put_accepted(id, pem),
            KeyState::Pending => self.put_pending(id, pem),
            KeyState::Rejected => self.put_rejected(id, pem),
            KeyState::Denied => self.put_denied(id, pem),
        }
    }

    fn accept_many(&self, ids: &[String], from: AcceptFrom) -> Result<Report> {
        self.accept_many_prevalidated(ids, from)
    }

    fn reject_many(&self, ids: &[String], from: RejectFrom) -> Result<Report> {
        KeyStore::reject_many(self, ids, from)
    }

    fn delete_many(&self, ids: &[String]) -> Result<Report> {
        KeyStore::delete_many(self, ids)
    }
}
