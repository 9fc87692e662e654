//! Queries of [`KeyStore`]: states, listings, key texts and fingerprints.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::PathBuf;

use super::{KeyState, KeyStore, read_state_dir, salt_sort};
use crate::error::{KeyStoreError, Result};
use crate::fsutil;
use crate::glob::GlobList;
use crate::id::validate_id;
use salt_pki::{self as pem, HashType as FingerprintHash};

impl KeyStore {
    // === queries ===

    /// Re-read every key directory (one `readdir` each) into the index.
    pub fn refresh(&self) -> Result<()> {
        let _ops = self.lock_ops();
        self.refresh_states(&KeyState::ALL)
    }

    /// Caller holds `ops`.
    pub(super) fn refresh_states(&self, states: &[KeyState]) -> Result<()> {
        if let Some(m) = &self.mmap {
            return self.mmap_refresh(m, states);
        }
        for &state in states {
            let (set, _) = read_state_dir(&self.state_dir(state))?;
            self.write_index().reset(state, set);
        }
        Ok(())
    }

    /// The state the master acts on for `id`, asking the file system (a few `stat`s, never
    /// stale). Precedence follows Salt's auth decision order: rejected, then accepted, then
    /// pending; `Denied` only when the id has nothing but a denied key.
    pub fn state(&self, id: &str) -> Result<Option<KeyState>> {
        validate_id(id)?;
        if let Some(m) = &self.mmap {
            return Self::mmap_state(m, id);
        }
        for state in [
            KeyState::Rejected,
            KeyState::Accepted,
            KeyState::Pending,
            KeyState::Denied,
        ] {
            if self.exists(state, id)? {
                return Ok(Some(state));
            }
        }
        Ok(None)
    }

    /// Every state holding a key for `id` (in [`KeyState::ALL`] order), from the file
    /// system. `Denied` can coexist with `Accepted` or `Pending`, as in Salt.
    pub fn states_of(&self, id: &str) -> Result<Vec<KeyState>> {
        validate_id(id)?;
        if let Some(m) = &self.mmap {
            return Self::mmap_states_of(m, id);
        }
        let mut out = Vec::new();
        for state in KeyState::ALL {
            if self.exists(state, id)? {
                out.push(state);
            }
        }
        Ok(out)
    }

    pub(super) fn exists(&self, state: KeyState, id: &str) -> Result<bool> {
        if let Some(m) = &self.mmap {
            return Ok(m.read(state, id)?.is_some());
        }
        if self.unwritten_key(state, id).is_some() {
            return Ok(true);
        }
        let path = self.path(state, id);
        match fs::symlink_metadata(&path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(KeyStoreError::io("stat", path, e)),
        }
    }

    /// Ids in `state`, from the index, in `salt-key`'s order (case-insensitive, ties by
    /// bytes).
    pub fn list(&self, state: KeyState) -> Vec<String> {
        let mut v: Vec<String> = self.read_index().sets[state.idx()]
            .iter()
            .cloned()
            .collect();
        salt_sort(&mut v);
        v
    }

    /// Every state with its ids (all four states present, possibly empty), from the index.
    pub fn list_all(&self) -> BTreeMap<KeyState, Vec<String>> {
        KeyState::ALL
            .into_iter()
            .map(|s| (s, self.list(s)))
            .collect()
    }

    /// Ids in `states` matching the GLOB list `globs` (`salt-key` syntax: comma-separated
    /// `fnmatch` patterns), from the index. Only states with a match appear, like Salt's
    /// `name_match`.
    pub fn matching(
        &self,
        globs: &str,
        states: &[KeyState],
    ) -> Result<BTreeMap<KeyState, Vec<String>>> {
        let glob = GlobList::new(globs)?;
        Ok(self.matching_glob(&glob, states))
    }

    /// [`matching`](Self::matching) with a precompiled glob list.
    pub fn matching_glob(
        &self,
        glob: &GlobList,
        states: &[KeyState],
    ) -> BTreeMap<KeyState, Vec<String>> {
        let index = self.read_index();
        let mut out = BTreeMap::new();
        for &state in states {
            let mut v: Vec<String> = index.sets[state.idx()]
                .iter()
                .filter(|id| glob.is_match(id))
                .cloned()
                .collect();
            if !v.is_empty() {
                salt_sort(&mut v);
                out.insert(state, v);
            }
        }
        out
    }

    /// The key text of `id` in `state`, as stored; `None` if there is none (including a
    /// key that vanished while being read). Errors name the file (unreadable, not UTF-8,
    /// oversized).
    pub fn read_key(&self, state: KeyState, id: &str) -> Result<Option<String>> {
        validate_id(id)?;
        if let Some(pem) = self.unwritten_key(state, id) {
            return Ok(Some(pem));
        }
        if let Some(m) = &self.mmap {
            return m.read(state, id);
        }
        fsutil::read_key_file(&self.path(state, id))
    }

    /// Whether `id` has a key in `state`: one `stat` of its file, or with `mmap_key` one
    /// index lookup.
    pub fn has_key(&self, state: KeyState, id: &str) -> Result<bool> {
        if self.mmap.is_some() {
            return Ok(self.read_key(state, id)?.is_some());
        }
        Ok(self.key_path(state, id)?.exists())
    }

    /// Whether the keys live in Salt 3008's `mmap_key` index files (no file per key).
    pub fn is_mmap(&self) -> bool {
        self.mmap.is_some()
    }

    /// Whether the stored key of `id` in `state` equals `pem` the way Salt's master
    /// compares them (`clean_key` of both). `None` when there is no such key.
    pub fn key_matches(&self, state: KeyState, id: &str, pem: &str) -> Result<Option<bool>> {
        Ok(self
            .read_key(state, id)?
            .map(|stored| pem::clean_key(&stored) == pem::clean_key(pem)))
    }

    /// Salt's `pem_finger` of the key of `id` in `state` (`None` if absent).
    pub fn fingerprint(
        &self,
        state: KeyState,
        id: &str,
        hash: FingerprintHash,
    ) -> Result<Option<String>> {
        Ok(self
            .read_key(state, id)?
            .map(|k| pem::pem_finger(k.as_bytes(), hash)))
    }

    /// Fingerprints of every key in `states` (index order as [`list`](Self::list)); keys
    /// that vanish meanwhile are skipped. `salt-key -F` (minus the local keys).
    pub fn fingerprints(
        &self,
        states: &[KeyState],
        hash: FingerprintHash,
    ) -> Result<BTreeMap<KeyState, Vec<(String, String)>>> {
        let mut out = BTreeMap::new();
        for &state in states {
            let mut v = Vec::new();
            for id in self.list(state) {
                if let Some(f) = self
                    .read_key(state, &id)?
                    .map(|k| pem::pem_finger(k.as_bytes(), hash))
                {
                    v.push((id, f));
                }
            }
            out.insert(state, v);
        }
        Ok(out)
    }

    /// Read the key file of each `(state, id)` of `keys` and map its bytes with `f`
    /// (`salt-key -F` hashing each key). Each file is opened by its name from its
    /// directory, opened once, into a buffer reused from key to key; with many keys the
    /// work is split over up to as many threads as there are CPUs (8 at most).
    ///
    /// One result per key, in input order: `Ok(None)` for a file that does not exist (or
    /// vanished meanwhile, moved by another process), an error naming the file when it
    /// cannot be read or is larger than 64 KiB. Invalid ids fail the whole call.
    pub fn read_keys<T, F>(&self, keys: &[(KeyState, &str)], f: F) -> Result<Vec<Result<Option<T>>>>
    where
        T: Send,
        F: Fn(&[u8]) -> T + Sync,
    {
        keys.iter().try_for_each(|(_, id)| validate_id(id))?;
        if let Some(m) = &self.mmap {
            let texts = m.read_many(keys)?;
            let f = &f;
            return Ok(salt_compat::par::par_chunks(&texts, 1024, |part| {
                part.iter()
                    .map(|k| Ok(k.as_ref().map(|pem| f(pem.as_bytes()))))
                    .collect::<Vec<_>>()
            })
            .into_iter()
            .flatten()
            .collect());
        }
        let mut dirs: [Option<(PathBuf, fs::File)>; 4] = Default::default();
        for &(state, _) in keys {
            let slot = &mut dirs[state.idx()];
            if slot.is_none() {
                let dir = self.state_dir(state);
                let fd = fsutil::open_dir(&dir)
                    .map_err(|e| KeyStoreError::io("open directory", &dir, e))?;
                *slot = Some((dir, fd));
            }
        }
        let (dirs, f) = (&dirs, &f);
        let run = move |part: &[(KeyState, &str)]| {
            let mut buf = vec![0; fsutil::KEY_BUF_LEN];
            part.iter()
                .map(|&(state, id)| {
                    if let Some(pem) = self.unwritten_key(state, id) {
                        return Ok(Some(f(pem.as_bytes())));
                    }
                    let Some((dir, fd)) = &dirs[state.idx()] else {
                        return Ok(None);
                    };
                    Ok(fsutil::read_key_at(fd, dir, id, &mut buf)?.map(|len| f(&buf[..len])))
                })
                .collect::<Vec<_>>()
        };
        Ok(salt_compat::par::par_chunks(keys, 1024, run)
            .into_iter()
            .flatten()
            .collect())
    }

    /// Read the key file of each `(state, id)` of `keys` (as [`read_keys`](Self::read_keys))
    /// and hand its bytes to `check`: `salt-key -a` parsing every key before accepting any.
    /// Changes nothing. Returns the problems in input order, each with the index of its
    /// item in `keys`: a file that cannot be read or is too large, or whose bytes `check`
    /// refused ([`KeyStoreError::InvalidKey`] naming the file, with `check`'s reason). A
    /// file that does not exist is not a problem: a move skips it too.
    pub fn check_keys<F>(
        &self,
        keys: &[(KeyState, &str)],
        check: F,
    ) -> Result<Vec<(usize, KeyStoreError)>>
    where
        F: Fn(&[u8]) -> std::result::Result<(), String> + Sync,
    {
        Ok(self
            .read_keys(keys, check)?
            .into_iter()
            .enumerate()
            .filter_map(|(i, r)| match r {
                Ok(None | Some(Ok(()))) => None,
                Ok(Some(Err(reason))) => {
                    let (state, id) = keys[i];
                    Some((
                        i,
                        KeyStoreError::InvalidKey {
                            path: self.path(state, id),
                            reason,
                        },
                    ))
                }
                Err(e) => Some((i, e)),
            })
            .collect())
    }

    /// The master's own key files in `pki_dir` (`*.pem`, `*.pub`), `salt-key`'s
    /// "Local Keys", in Salt's order.
    pub fn local_keys(&self) -> Result<Vec<String>> {
        let rd = fs::read_dir(&self.pki_dir)
            .map_err(|e| KeyStoreError::io("read directory", &self.pki_dir, e))?;
        let mut v = Vec::new();
        for entry in rd {
            let entry = entry.map_err(|e| KeyStoreError::io("read directory", &self.pki_dir, e))?;
            if let Some(name) = entry.file_name().to_str()
                && (name.ends_with(".pem") || name.ends_with(".pub"))
            {
                v.push(name.to_owned());
            }
        }
        salt_sort(&mut v);
        Ok(v)
    }

    /// `pem_finger` of the local key file `name` (from [`local_keys`](Self::local_keys)).
    pub fn local_fingerprint(&self, name: &str, hash: FingerprintHash) -> Result<Option<String>> {
        validate_id(name)?;
        let path = self.pki_dir.join(name);
        match fs::read(&path) {
            Ok(data) => Ok(Some(pem::pem_finger(&data, hash))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(KeyStoreError::io("read", path, e)),
        }
    }
}
