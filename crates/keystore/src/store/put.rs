//! Writing keys into [`KeyStore`] (the master's first sight of a minion, auto-accept,
//! denied keys) and the autosign stubs.

use std::fs;
use std::io;
use std::time::{Duration, SystemTime};

use super::{AUTOSIGN_DIR, KEY_FILE_MODE, KeyState, KeyStore};
use crate::error::{KeyStoreError, Result};
use crate::fsutil::{self, crash_point};
use crate::id::validate_id;

impl KeyStore {
    /// Write `pem` as the pending key of a new minion (the master, on first auth).
    /// Replaces an existing pending key. Refused with [`KeyStoreError::Conflict`] when the
    /// id is accepted or rejected: the master must compare keys and deny instead.
    pub fn put_pending(&self, id: &str, pem: &str) -> Result<()> {
        self.put(KeyState::Pending, id, pem)
    }

    /// Make `pem` the accepted key of `id` (auto-accept, `open_mode`, autosign). A pending
    /// or rejected key of the id is moved, never copied: the new text is first written to
    /// an invisible temp file, then the old file is renamed into `minions/`, then the temp
    /// file replaces it; so the id is in exactly one state at every instant (a crash
    /// between the two renames leaves it accepted with its previous text, which for the
    /// master's autosign path is the same key). An existing accepted key is replaced.
    /// Denied keys are left alone.
    pub fn put_accepted(&self, id: &str, pem: &str) -> Result<()> {
        self.put(KeyState::Accepted, id, pem)
    }

    /// Make `pem` the rejected key of `id` (`autoreject_file`); moves any pending or
    /// accepted key the same way as [`put_accepted`](Self::put_accepted).
    pub fn put_rejected(&self, id: &str, pem: &str) -> Result<()> {
        self.put(KeyState::Rejected, id, pem)
    }

    /// Record `pem` as the denied key of `id` (a different key presented for a known id).
    /// Coexists with the id's other key; replaces a previous denied key.
    pub fn put_denied(&self, id: &str, pem: &str) -> Result<()> {
        self.put(KeyState::Denied, id, pem)
    }

    fn put(&self, target: KeyState, id: &str, pem: &str) -> Result<()> {
        validate_id(id)?;
        let target_path = self.path(target, id);
        self.validator
            .validate(pem)
            .map_err(|reason| KeyStoreError::InvalidKey {
                path: target_path.clone(),
                reason,
            })?;
        let _ops = self.lock_ops();
        if let Some(m) = &self.mmap {
            return self.mmap_put(m, target, id, pem);
        }
        self.materialize(&[id])?;
        if target == KeyState::Denied {
            fsutil::atomic_write(&target_path, pem.as_bytes(), KEY_FILE_MODE, self.durable)?;
            self.write_index().insert(target, id);
            return Ok(());
        }
        if target == KeyState::Pending {
            for state in [KeyState::Accepted, KeyState::Rejected] {
                if self.exists(state, id)? {
                    return Err(KeyStoreError::Conflict {
                        id: id.to_owned(),
                        state,
                    });
                }
            }
            fsutil::atomic_write(&target_path, pem.as_bytes(), KEY_FILE_MODE, self.durable)?;
            self.write_index().insert(target, id);
            return Ok(());
        }
        // Accepted or Rejected. 1: the new text, complete and fsync-ed, in a temp file in
        // the target directory (invisible). 2: move the id's file from any other exclusive
        // state into the target (atomic; the id changes state with its old text). 3: put
        // the new text in place (atomic replace). The id is never in two states, even if
        // another process moves it meanwhile (a vanished source is skipped).
        let target_dir = self.state_dir(target);
        if !self.durable && self.put_new_linked(target, id, &target_path, pem)? {
            return Ok(());
        }
        let tmp = fsutil::write_tmp(&target_dir, pem.as_bytes(), KEY_FILE_MODE, self.durable)?;
        crash_point("put:after_tmp")?;
        let mut moved = Vec::new();
        for src in KeyState::EXCLUSIVE.into_iter().filter(|&s| s != target) {
            let src_path = self.path(src, id);
            match fs::rename(&src_path, &target_path) {
                Ok(()) => moved.push(src),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    let _ = fs::remove_file(&tmp);
                    return Err(KeyStoreError::io("rename", src_path, e));
                }
            }
        }
        crash_point("put:after_move")?;
        fsutil::rename_tmp(&tmp, &target_path)?;
        if self.durable {
            fsutil::sync_dir(&target_dir)?;
            for &src in &moved {
                fsutil::sync_dir(&self.state_dir(src))?;
            }
        }
        let mut index = self.write_index();
        for src in moved {
            index.sets[src.idx()].remove(id);
        }
        index.insert(target, id);
        Ok(())
    }

    /// The common case of [`put`](Self::put) into `Accepted` or `Rejected` without
    /// durability (a master's sign-in of a new minion): the id's file in the other
    /// exclusive states is moved first, as in the general way; when there was none and
    /// `target_path` does not exist either, the key is created complete under its name
    /// ([`fsutil::create_linked`]: no temporary name, no rename). `Ok(false)`: not that
    /// case, or the system cannot; the caller takes the general way (which also replaces
    /// the text of a moved key). The id is in one state at every instant either way.
    fn put_new_linked(
        &self,
        target: KeyState,
        id: &str,
        target_path: &std::path::Path,
        pem: &str,
    ) -> Result<bool> {
        for src in KeyState::EXCLUSIVE.into_iter().filter(|&s| s != target) {
            let src_path = self.path(src, id);
            match fs::rename(&src_path, target_path) {
                Ok(()) => {
                    let mut index = self.write_index();
                    index.sets[src.idx()].remove(id);
                    index.insert(target, id);
                    return Ok(false);
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(KeyStoreError::io("rename", src_path, e)),
            }
        }
        match fsutil::create_linked(target_path, pem.as_bytes(), KEY_FILE_MODE, false) {
            Ok(Some(_)) => {
                self.write_index().insert(target, id);
                Ok(true)
            }
            Ok(None) => Ok(false),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(KeyStoreError::io("create", target_path, e)),
        }
    }

    // === autosign stubs ===

    /// Consume the one-shot autosign stub `minions_autosign/<id>`: `true` if it existed and
    /// was younger than `timeout` (Salt's `autosign_timeout`, 120 minutes by default; zero
    /// means no expiry). An expired stub is removed and gives `false`. Removing the stub is
    /// what consumes it, so two concurrent callers cannot both get `true`.
    pub fn consume_autosign_stub(&self, id: &str, timeout: Duration) -> Result<bool> {
        validate_id(id)?;
        let path = self.pki_dir.join(AUTOSIGN_DIR).join(id);
        let meta = match fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(KeyStoreError::io("stat", path, e)),
        };
        let expired = !timeout.is_zero()
            && meta
                .modified()
                .ok()
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age > timeout);
        match fs::remove_file(&path) {
            Ok(()) => Ok(!expired),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(KeyStoreError::io("remove", path, e)),
        }
    }

    /// Create the autosign stub for `id` (empty file), as an operator's `touch` would.
    pub fn put_autosign_stub(&self, id: &str) -> Result<()> {
        validate_id(id)?;
        fsutil::atomic_write(
            &self.pki_dir.join(AUTOSIGN_DIR).join(id),
            b"",
            KEY_FILE_MODE,
            self.durable,
        )
    }

    /// Remove autosign stubs older than `timeout` (Salt does this on every autosign check;
    /// call it from a maintenance loop). Returns how many were removed.
    pub fn purge_expired_autosign(&self, timeout: Duration) -> Result<usize> {
        if timeout.is_zero() {
            return Ok(0);
        }
        let dir = self.pki_dir.join(AUTOSIGN_DIR);
        let rd = fs::read_dir(&dir).map_err(|e| KeyStoreError::io("read directory", &dir, e))?;
        let now = SystemTime::now();
        let mut n = 0;
        for entry in rd.flatten() {
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|age| age > timeout);
            if old
                && entry.file_type().is_ok_and(|t| t.is_file())
                && fs::remove_file(entry.path()).is_ok()
            {
                n += 1;
            }
        }
        Ok(n)
    }

    /// Remove temp files (ours, dot-prefixed) older than `max_age` from every key
    /// directory: the only debris a crash can leave. Done at open with a one-hour age so a
    /// concurrent writer's file is never taken.
    pub fn sweep_temp_files(&self, max_age: Duration) -> Result<usize> {
        let mut n = 0;
        for name in KeyState::ALL
            .iter()
            .map(|s| s.dir_name())
            .chain([AUTOSIGN_DIR])
        {
            n += fsutil::sweep_tmp(&self.pki_dir.join(name), max_age)?;
        }
        Ok(n)
    }
}
