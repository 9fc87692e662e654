//! `salt-key` in a master group (`keys.cache_driver: postgres`, docs/group.md): the
//! local mirror is brought up to date from the database first, changes go to the
//! database, which every master then applies.

use std::ops::Deref;
use std::sync::Arc;

use salt_config::MasterConfig;
use salt_keystore::{KeyChanges, KeyStore, KeyStoreError};
use salt_pgstore::{Group, Settings};

use crate::error::{Error, Result};

/// The key store `salt-key` reads (the local files, a group's mirror) and, with a group,
/// the group's database for changes.
pub(crate) struct Opened {
    pub(crate) store: Arc<KeyStore>,
    pub(crate) group: Option<Group>,
}

impl Deref for Opened {
    type Target = KeyStore;

    fn deref(&self) -> &KeyStore {
        &self.store
    }
}

impl Opened {
    /// Where changes go. With a group whose database is down: a clear error, before
    /// anything is asked or changed.
    pub(crate) fn changes(&self) -> Result<&dyn KeyChanges> {
        match &self.group {
            None => Ok(self.store.as_ref()),
            Some(g) if g.is_up() => Ok(g),
            Some(_) => Err(Error::Store(KeyStoreError::Backend {
                driver: "postgres",
                message: "the group database is unreachable: key changes are refused until \
                          it returns (the masters keep serving the keys they know)"
                    .to_owned(),
            })),
        }
    }
}

/// With `keys.cache_driver: postgres`: connect and bring the mirror up to date. The
/// database down is not an error for reading: the mirror is shown, with a warning.
pub(crate) fn open(
    cfg: &MasterConfig,
    store: &Arc<KeyStore>,
    rotate: bool,
) -> Result<Option<Group>> {
    let Some(c) = cfg.cluster_id.as_ref().filter(|c| c.keys_in_postgres()) else {
        return Ok(None);
    };
    let settings = Settings::from_config(c, &format!("salt-key@{}", cfg.id), rotate);
    let group = Group::new(settings, store.clone())
        .map_err(|e| Error::Config(format!("group {}: {e}", c.cluster_id)))?;
    if let Err(e) = group.sync() {
        eprintln!(
            "[WARNING ] group {}: {e}; showing this master's copy of the keys",
            c.cluster_id
        );
    } else {
        store.refresh().map_err(Error::Store)?;
    }
    Ok(Some(group))
}
