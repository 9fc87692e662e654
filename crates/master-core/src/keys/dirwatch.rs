//! Re-reading the key directories only when they changed: `salt-key` (another process)
//! accepts, rejects and deletes keys by renaming files in `pki_dir`, which changes the
//! modification time of the directories involved. A publish resolves its target against
//! the accepted keys; instead of listing four directories per publish
//! ([`salt_keystore::KeyStore::refresh`]) it compares their modification times with those
//! seen at the last listing, and lists them again when one differs, or when one is within
//! [`RACY`] of now (a file system's clock ticks coarsely: two changes in one tick leave one
//! time, so a time that recent proves nothing, as git's "racy index"). With
//! `keys.cache_driver: mmap_key` the times compared are those of the index and heap files
//! ([`KeyStore::watch_paths`]).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use salt_keystore::KeyStore;

/// How recent a directory time must be for it to be distrusted.
pub(crate) const RACY: Duration = Duration::from_secs(2);

/// The directory times of the last listing.
#[derive(Debug, Default)]
pub(crate) struct KeyDirWatch {
    seen: Mutex<Option<Vec<Option<SystemTime>>>>,
    /// How many times [`refresh`](Self::refresh) listed the directories again.
    reads: AtomicU64,
}

impl KeyDirWatch {
    /// [`KeyStore::refresh`] when a key directory changed since the last call (or may have).
    pub(crate) fn refresh(&self, store: &KeyStore) -> salt_keystore::Result<()> {
        let now = SystemTime::now();
        let times: Vec<Option<SystemTime>> = store
            .watch_paths()
            .iter()
            .map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
            .collect();
        let racy = times
            .iter()
            .flatten()
            .any(|t| now.duration_since(*t).map_or(true, |age| age < RACY));
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if !racy && seen.as_ref() == Some(&times) {
            return Ok(());
        }
        // Times read before the listing: a change during it shows at the next call.
        store.refresh()?;
        *seen = Some(times);
        self.reads.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// How many times the directories were listed again so far: a consumer that acts on
    /// a change (the maintenance tick forgetting removed minions) compares it with the
    /// count it saw last, whichever caller did the listing.
    pub(crate) fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use salt_keystore::{KeyState, MmapGeometry, OpenOptions};

    #[test]
    fn a_key_moved_by_another_process_is_seen() {
        seen_with(None);
    }

    #[test]
    fn a_key_changed_in_the_mmap_key_store_is_seen() {
        seen_with(Some(MmapGeometry {
            size: 1000,
            ..MmapGeometry::default()
        }));
    }

    fn seen_with(mmap: Option<MmapGeometry>) {
        let dir = tempfile::tempdir().unwrap();
        let open = || OpenOptions::new().mmap_key(mmap).open(dir.path()).unwrap();
        let store = open();
        let watch = KeyDirWatch::default();
        watch.refresh(&store).unwrap();
        assert!(store.list(KeyState::Accepted).is_empty());
        // As salt-key in another process: a file appears in `minions/`.
        let other = open();
        let pem = salt_pki::PrivateKey::generate(2048)
            .unwrap()
            .public_key()
            .to_pem();
        salt_keystore::KeyChanges::put(&other, KeyState::Accepted, "m1", &pem).unwrap();
        watch.refresh(&store).unwrap();
        assert_eq!(store.list(KeyState::Accepted), vec!["m1".to_owned()]);
    }
}
