//! The minion data cache (`minion_data_cache`, Salt's `cache: localfs`):
//! `{cachedir}/minions/<id>/data.p` holds `{"grains": ..., "pillar": ...}` (written on each
//! `_pillar`), `mine.p` the minion's mine; both msgpack as `salt.payload.dumps` writes them.
//! The grains and pillar of `data.p` are also held in memory for targeting ([`index`]).
//!
//! [`index`]: super::index

use std::path::{Path, PathBuf};

use rmpv::Value;
use salt_proto::{decode, encode};

use super::index::{self, View};

/// The `minions` bank of the cache.
#[derive(Clone, Debug)]
pub(crate) struct MinionCache {
    dir: PathBuf,
}

impl MinionCache {
    /// The cache under `cachedir`.
    pub(crate) fn new(cachedir: &Path) -> Self {
        MinionCache {
            dir: cachedir.join("minions"),
        }
    }

    fn file(&self, id: &str, key: &str) -> Option<PathBuf> {
        salt_proto::auth_master::valid_id(id).then(|| self.dir.join(id).join(format!("{key}.p")))
    }

    /// Store `value` under `minions/<id>/<key>.p` (atomically).
    pub(crate) fn store(&self, id: &str, key: &str, value: &Value) -> Result<(), String> {
        let path = self
            .file(id, key)
            .ok_or_else(|| format!("invalid minion id {id:?}"))?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        salt_pki::files::atomic_write(&path, &encode(value), 0o600).map_err(|e| e.to_string())?;
        if key == "data" {
            index::for_dir(&self.dir).put(id, Some(value));
        }
        Ok(())
    }

    /// The value under `minions/<id>/<key>.p`, if readable.
    pub(crate) fn fetch(&self, id: &str, key: &str) -> Option<Value> {
        let bytes = std::fs::read(self.file(id, key)?).ok()?;
        decode(&bytes).ok()
    }

    /// Remove `minions/<id>/<key>.p`; true when it is gone.
    pub(crate) fn flush(&self, id: &str, key: &str) -> bool {
        if key == "data" && self.file(id, key).is_some() {
            index::for_dir(&self.dir).put(id, None);
        }
        match self.file(id, key) {
            Some(p) => match std::fs::remove_file(p) {
                Ok(()) => true,
                Err(e) => e.kind() == std::io::ErrorKind::NotFound,
            },
            None => false,
        }
    }

    /// Cached grains and pillar of `id` (`(None, None)` when nothing is cached).
    pub(crate) fn facts(&self, id: &str) -> (Option<Value>, Option<Value>) {
        match self.fetch(id, "data") {
            Some(d) => (
                salt_compat::map_get(&d, "grains").cloned(),
                salt_compat::map_get(&d, "pillar").cloned(),
            ),
            None => (None, None),
        }
    }

    /// `f` over the cached grains and pillar of every minion, from the in-memory index (the
    /// same answers as [`facts`](Self::facts) for each id).
    pub(crate) fn with_facts<R>(&self, f: impl FnOnce(&View<'_>) -> R) -> R {
        index::for_dir(&self.dir).with_view(f)
    }
}
