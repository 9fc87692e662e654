//! A group member's first copy of the database without waiting on the file system
//! (docs/group.md): the keys are listed and served from memory at once, and their files
//! are written in the background, a batch at a time under the store's operation lock.
//! Until its file is written, a key lives in the index's `unwritten` map: every query
//! ([`KeyStore::state`], [`KeyStore::read_key`], listings) answers from it, and any change
//! of the id first writes its file (or, for a delete, just forgets it), so a change never
//! races the background writer.

use std::path::PathBuf;
use std::sync::Arc;

use super::bulk::write_files;
use super::{KeyState, KeyStore};
use crate::error::{KeyStoreError, Result};
use crate::id::validate_id;

/// Files written per batch (the operation lock is held meanwhile, a few tens of ms).
const BATCH: usize = 256;

/// Called once the background writer is done: how many files it wrote, or why it stopped.
pub type DeferredDone = Box<dyn FnOnce(Result<usize>) + Send>;

impl KeyStore {
    /// Like [`put_new_many`](Self::put_new_many), but only the index learns the keys now:
    /// they are served from memory at once and their files written by a background thread,
    /// which calls `done` at the end (after one `syncfs` for a durable store). A writer that
    /// fails stops and leaves the rest in memory (still served); `done` gets the error.
    /// Returns how many keys were listed.
    pub fn put_new_many_deferred(
        self: &Arc<Self>,
        items: Vec<(KeyState, String, String)>,
        done: DeferredDone,
    ) -> Result<usize> {
        for (state, id, pem) in &items {
            validate_id(id)?;
            if let Err(reason) = self.validator.validate(pem) {
                return Err(KeyStoreError::InvalidKey {
                    path: self.path(*state, id),
                    reason,
                });
            }
        }
        let n = items.len();
        {
            let _ops = self.lock_ops();
            let mut index = self.write_index();
            for (state, id, pem) in items {
                index.insert(state, &id);
                index.unwritten.insert((state, id), pem);
            }
        }
        let store = Arc::clone(self);
        std::thread::Builder::new()
            .name("keystore-copy".into())
            .spawn(move || done(store.write_unwritten()))
            .map_err(|e| KeyStoreError::io("start the key-copy thread", &self.pki_dir, e))?;
        Ok(n)
    }

    /// How many keys are listed whose files are not written yet.
    pub fn unwritten(&self) -> usize {
        self.read_index().unwritten.len()
    }

    /// The text of a key not written yet.
    pub(super) fn unwritten_key(&self, state: KeyState, id: &str) -> Option<String> {
        let index = self.read_index();
        if index.unwritten.is_empty() {
            return None;
        }
        index.unwritten.get(&(state, id.to_owned())).cloned()
    }

    /// Write now the files of `ids` still unwritten (the caller holds the operation lock
    /// and is about to change them).
    pub(super) fn materialize<S: AsRef<str>>(&self, ids: &[S]) -> Result<()> {
        let mut files: Vec<(PathBuf, String, (KeyState, String))> = Vec::new();
        {
            let index = self.read_index();
            if index.unwritten.is_empty() {
                return Ok(());
            }
            for id in ids {
                for state in KeyState::ALL {
                    let key = (state, id.as_ref().to_owned());
                    if let Some(pem) = index.unwritten.get(&key) {
                        files.push((self.path(state, id.as_ref()), pem.clone(), key));
                    }
                }
            }
        }
        if files.is_empty() {
            return Ok(());
        }
        let refs: Vec<(PathBuf, &[u8])> = files
            .iter()
            .map(|(p, pem, _)| (p.clone(), pem.as_bytes()))
            .collect();
        write_files(&refs)?;
        let mut index = self.write_index();
        for (_, _, key) in files {
            index.unwritten.remove(&key);
        }
        Ok(())
    }

    /// Forget the unwritten key `(state, id)` (a delete); whether there was one.
    pub(super) fn forget_unwritten(&self, state: KeyState, id: &str) -> bool {
        let mut index = self.write_index();
        !index.unwritten.is_empty() && index.unwritten.remove(&(state, id.to_owned())).is_some()
    }

    fn write_unwritten(&self) -> Result<usize> {
        let mut written = 0;
        loop {
            let ops = self.lock_ops();
            let batch: Vec<((KeyState, String), String)> = self
                .read_index()
                .unwritten
                .iter()
                .take(BATCH)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if batch.is_empty() {
                let mut index = self.write_index();
                index.unwritten.shrink_to_fit();
                break;
            }
            let files: Vec<(PathBuf, &[u8])> = batch
                .iter()
                .map(|((state, id), pem)| (self.path(*state, id), pem.as_bytes()))
                .collect();
            write_files(&files)?;
            let mut index = self.write_index();
            for (key, _) in &batch {
                index.unwritten.remove(key);
            }
            written += batch.len();
            drop(index);
            drop(ops);
        }
        if self.durable {
            self.sync_fs()?;
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AcceptFrom;
    use crate::store::bulk::tests::PEM;

    #[test]
    fn deferred_keys_are_served_at_once_changed_safely_and_written() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(KeyStore::open(dir.path()).unwrap());
        let mut items: Vec<(KeyState, String, String)> = (0..2000)
            .map(|i| (KeyState::Accepted, format!("m{i}"), PEM.to_owned()))
            .collect();
        items.push((KeyState::Pending, "p1".into(), PEM.to_owned()));
        items.push((KeyState::Pending, "p2".into(), PEM.to_owned()));
        let (tx, rx) = std::sync::mpsc::channel();
        let n = store
            .put_new_many_deferred(
                items,
                Box::new(move |r| {
                    let _ = tx.send(r.map_err(|e| e.to_string()));
                }),
            )
            .unwrap();
        assert_eq!(n, 2002);
        // Served from memory (or the files already written), whichever.
        assert_eq!(store.list(KeyState::Accepted).len(), 2000);
        assert_eq!(store.state("m7").unwrap(), Some(KeyState::Accepted));
        assert_eq!(
            store.read_key(KeyState::Pending, "p1").unwrap().as_deref(),
            Some(PEM)
        );
        // Changes while the writer runs: an accept moves the key, a delete removes it.
        assert_eq!(
            store.accept("p1", AcceptFrom::default()).unwrap(),
            vec![KeyState::Pending]
        );
        assert_eq!(store.delete("p2").unwrap(), vec![KeyState::Pending]);
        let written = rx
            .recv_timeout(std::time::Duration::from_secs(50))
            .unwrap()
            .unwrap();
        assert!(written <= 2002, "{written}");
        assert_eq!(store.unwritten(), 0);
        // Every file is there (a reopen reads the same), p2 is gone, p1 accepted.
        let again = KeyStore::open(dir.path()).unwrap();
        assert_eq!(again.list(KeyState::Accepted).len(), 2001);
        assert_eq!(again.state("p1").unwrap(), Some(KeyState::Accepted));
        assert_eq!(again.state("p2").unwrap(), None);
        assert!(again.list(KeyState::Pending).is_empty());
        // A bad key is refused before anything is listed.
        let bad = vec![(KeyState::Accepted, "x".to_owned(), "nope".to_owned())];
        assert!(store.put_new_many_deferred(bad, Box::new(|_| {})).is_err());
        assert_eq!(store.state("x").unwrap(), None);
    }
}
