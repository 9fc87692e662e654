//! Many new keys at once (a group member's first copy of the database, docs/group.md):
//! ids that hold no key here yet are written in parallel, each file atomically (temp file
//! and rename, as every write), then the index learns them in one go. A durable store
//! flushes once at the end (`syncfs` of the `pki_dir`'s file system) instead of twice per
//! file.

use std::path::PathBuf;

use super::{KEY_FILE_MODE, KeyState, KeyStore};
use crate::error::{KeyStoreError, Result};
use crate::fsutil;
use crate::id::validate_id;

impl KeyStore {
    /// Write `(state, id, pem)` for ids that have no key file here in any state (the
    /// caller knows: a first copy; another process must not add them meanwhile). An id may
    /// come twice: one exclusive state and `Denied`. Returns how many files were written.
    pub fn put_new_many(&self, items: &[(KeyState, String, String)]) -> Result<usize> {
        let mut files: Vec<(PathBuf, &[u8])> = Vec::with_capacity(items.len());
        for (state, id, pem) in items {
            validate_id(id)?;
            let path = self.path(*state, id);
            if let Err(reason) = self.validator.validate(pem) {
                return Err(KeyStoreError::InvalidKey { path, reason });
            }
            files.push((path, pem.as_bytes()));
        }
        let _ops = self.lock_ops();
        if let Some(m) = &self.mmap {
            items.iter().try_for_each(|(_, id, _)| m.check_id(id))?;
            m.put_many(items)?;
            let mut index = self.write_index();
            for (state, id, _) in items {
                index.insert(*state, id);
            }
            return Ok(items.len());
        }
        write_files(&files)?;
        if self.durable {
            self.sync_fs()?;
        }
        let mut index = self.write_index();
        for (state, id, _) in items {
            index.insert(*state, id);
        }
        Ok(files.len())
    }
}

impl KeyStore {
    /// Flush the `pki_dir`'s file system (one `syncfs`).
    pub(super) fn sync_fs(&self) -> Result<()> {
        let dir = std::fs::File::open(&self.pki_dir)
            .map_err(|e| KeyStoreError::io("open", self.pki_dir.clone(), e))?;
        nix::unistd::syncfs(std::os::fd::AsRawFd::as_raw_fd(&dir))
            .map_err(|e| KeyStoreError::io("syncfs", self.pki_dir.clone(), std::io::Error::from(e)))
    }
}

/// Write each `(path, text)` atomically (not flushed), in parallel.
pub(super) fn write_files(files: &[(PathBuf, &[u8])]) -> Result<()> {
    salt_compat::par::par_chunks(files, 2, |part| {
        part.iter()
            .try_for_each(|(path, pem)| fsutil::atomic_write(path, pem, KEY_FILE_MODE, false))
    })
    .into_iter()
    .collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(crate) use crate::pem::tests::PEM;

    #[test]
    fn new_keys_written_in_bulk_are_listed_and_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = KeyStore::open(dir.path()).unwrap();
        let pem = PEM.to_owned();
        let mut items: Vec<(KeyState, String, String)> = (0..500)
            .map(|i| (KeyState::Accepted, format!("m{i}"), pem.clone()))
            .collect();
        items.push((KeyState::Pending, "p1".into(), pem.clone()));
        items.push((KeyState::Denied, "m1".into(), pem.clone()));
        assert_eq!(store.put_new_many(&items).unwrap(), 502);
        assert_eq!(store.list(KeyState::Accepted).len(), 500);
        assert_eq!(
            store.read_key(KeyState::Pending, "p1").unwrap(),
            Some(pem.clone())
        );
        assert_eq!(
            store.read_key(KeyState::Denied, "m1").unwrap(),
            Some(pem.clone())
        );
        // A fresh open reads the same from the files.
        let again = KeyStore::open(dir.path()).unwrap();
        assert_eq!(again.list(KeyState::Accepted).len(), 500);
        // A bad id or key is refused before anything is written.
        let bad = vec![(KeyState::Accepted, "../x".to_owned(), pem)];
        assert!(store.put_new_many(&bad).is_err());
    }
}

#[cfg(test)]
mod bench {
    use super::*;

    /// `cargo test -p salt-keystore --lib bulk_timing -- --ignored --nocapture`
    #[test]
    #[ignore = "timing"]
    fn bulk_timing() {
        let n: usize = std::env::var("BULK_KEYS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(100_000);
        let dir = tempfile::tempdir().unwrap();
        let store = KeyStore::open(dir.path()).unwrap();
        let pem = tests::PEM.to_owned();
        let items: Vec<(KeyState, String, String)> = (0..n)
            .map(|i| (KeyState::Accepted, format!("minion-{i}"), pem.clone()))
            .collect();
        let t = std::time::Instant::now();
        store.put_new_many(&items).unwrap();
        println!("put_new_many: {n} keys in {:?}", t.elapsed());
    }
}
