//! State changes of [`KeyStore`]: accept, reject, delete (one rename or unlink per file).

use std::collections::BTreeSet;
use std::io;
use std::path::PathBuf;

use super::{AcceptFrom, KeyState, KeyStore, RejectFrom, Report, salt_sort};
use crate::error::{KeyStoreError, Result};
use crate::fsutil::{self, crash_point};
use crate::glob::GlobList;
use crate::id::validate_id;
use std::fs;

impl KeyStore {
    // === transitions ===

    /// Accept `id`: move its pending key (and, per `from`, its rejected/denied key) to
    /// `minions/`, after checking each is a public key (as `salt-key -a`). Returns the
    /// states it left; empty when there was nothing to accept. A key that is not PEM is an
    /// error naming the file, and nothing moves.
    pub fn accept(&self, id: &str, from: AcceptFrom) -> Result<Vec<KeyState>> {
        single(self.accept_many(&[id], from)?)
    }

    /// [`accept`](Self::accept) for many ids in one pass (renames, then one fsync per
    /// directory). Invalid ids fail the whole call before anything changes.
    pub fn accept_many<S: AsRef<str>>(&self, ids: &[S], from: AcceptFrom) -> Result<Report> {
        let sources = accept_sources(from);
        self.move_many(ids, &sources, KeyState::Accepted, true)
    }

    /// [`accept_many`](Self::accept_many) for a caller that has just validated every key
    /// file itself (salt-key parses each as an RSA public key first, refusing the whole
    /// operation on a bad one): the moves skip the store's own armour check, which would
    /// read every file a second time (a third of the syscalls of a bulk accept). Crash
    /// safety and concurrency are unchanged: each key is still moved by one rename.
    pub fn accept_many_prevalidated<S: AsRef<str>>(
        &self,
        ids: &[S],
        from: AcceptFrom,
    ) -> Result<Report> {
        let sources = accept_sources(from);
        self.move_many(ids, &sources, KeyState::Accepted, false)
    }

    /// Accept the pending keys matching `globs` (and rejected/denied ones per `from`),
    /// after re-reading those directories: `salt-key -a GLOB`.
    pub fn accept_matching(&self, globs: &str, from: AcceptFrom) -> Result<Report> {
        let sources = accept_sources(from);
        let ids = self.fresh_matches(globs, &sources)?;
        self.move_many(&ids, &sources, KeyState::Accepted, true)
    }

    /// Accept every pending key (`salt-key -A`). Like Salt's `accept_all`, keys are moved
    /// without validation.
    pub fn accept_all(&self) -> Result<Report> {
        let ids = self.fresh_list(KeyState::Pending)?;
        self.move_many(&ids, &[KeyState::Pending], KeyState::Accepted, false)
    }

    /// Reject `id`: move its pending key (and, per `from`, accepted/denied keys) to
    /// `minions_rejected/`. Returns the states it left. The caller (`salt-key`) writes the
    /// AES dropfile afterwards when `rotate_aes_key` is on.
    pub fn reject(&self, id: &str, from: RejectFrom) -> Result<Vec<KeyState>> {
        single(self.reject_many(&[id], from)?)
    }

    /// [`reject`](Self::reject) for many ids in one pass.
    pub fn reject_many<S: AsRef<str>>(&self, ids: &[S], from: RejectFrom) -> Result<Report> {
        let sources = reject_sources(from);
        self.move_many(ids, &sources, KeyState::Rejected, false)
    }

    /// `salt-key -r GLOB`.
    pub fn reject_matching(&self, globs: &str, from: RejectFrom) -> Result<Report> {
        let sources = reject_sources(from);
        let ids = self.fresh_matches(globs, &sources)?;
        self.move_many(&ids, &sources, KeyState::Rejected, false)
    }

    /// Reject every pending key (`salt-key -R`).
    pub fn reject_all(&self) -> Result<Report> {
        let ids = self.fresh_list(KeyState::Pending)?;
        self.move_many(&ids, &[KeyState::Pending], KeyState::Rejected, false)
    }

    /// Delete every key file of `id` (accepted first, then pending, rejected, denied).
    /// Returns the states it was removed from. The autosign stub is left alone, as Salt.
    pub fn delete(&self, id: &str) -> Result<Vec<KeyState>> {
        single(self.delete_many(&[id])?)
    }

    /// [`delete`](Self::delete) for many ids in one pass.
    pub fn delete_many<S: AsRef<str>>(&self, ids: &[S]) -> Result<Report> {
        validate_ids(ids)?;
        let pairs: Vec<(String, KeyState)> = ids
            .iter()
            .flat_map(|id| KeyState::ALL.map(|s| (id.as_ref().to_owned(), s)))
            .collect();
        Ok(self.remove_pairs(pairs))
    }

    /// `salt-key -d GLOB`: delete the keys matching `globs`, in whichever state they
    /// matched (after re-reading every directory).
    pub fn delete_matching(&self, globs: &str) -> Result<Report> {
        let glob = GlobList::new(globs)?;
        {
            let _ops = self.lock_ops();
            self.refresh_states(&KeyState::ALL)?;
        }
        let pairs = self
            .matching_glob(&glob, &KeyState::ALL)
            .into_iter()
            .flat_map(|(s, ids)| ids.into_iter().map(move |id| (id, s)))
            .collect();
        Ok(self.remove_pairs(pairs))
    }

    /// `salt-key -D`: delete every key in every state.
    pub fn delete_all(&self) -> Result<Report> {
        {
            let _ops = self.lock_ops();
            self.refresh_states(&KeyState::ALL)?;
        }
        let pairs = self
            .list_all()
            .into_iter()
            .flat_map(|(s, ids)| ids.into_iter().map(move |id| (id, s)))
            .collect();
        Ok(self.remove_pairs(pairs))
    }

    // === internals ===

    fn fresh_list(&self, state: KeyState) -> Result<Vec<String>> {
        let _ops = self.lock_ops();
        self.refresh_states(&[state])?;
        Ok(self.list(state))
    }

    fn fresh_matches(&self, globs: &str, states: &[KeyState]) -> Result<Vec<String>> {
        let glob = GlobList::new(globs)?;
        {
            let _ops = self.lock_ops();
            self.refresh_states(states)?;
        }
        let mut ids: Vec<String> = self
            .matching_glob(&glob, states)
            .into_values()
            .flatten()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        salt_sort(&mut ids);
        Ok(ids)
    }

    /// Move each id's file from each of `sources` (in order) to `target`: one `renameat`
    /// per file between directories opened once, then one fsync of each directory touched.
    fn move_many<S: AsRef<str>>(
        &self,
        ids: &[S],
        sources: &[KeyState],
        target: KeyState,
        validate: bool,
    ) -> Result<Report> {
        validate_ids(ids)?;
        let _ops = self.lock_ops();
        if let Some(m) = &self.mmap {
            return self.mmap_move(m, ids, sources, target, validate);
        }
        self.materialize(ids)?;
        let mut report = Report::default();
        let target_dir = self.state_dir(target);
        let target_fd = fsutil::open_dir(&target_dir)
            .map_err(|e| KeyStoreError::io("open directory", &target_dir, e))?;
        let mut srcs = Vec::with_capacity(sources.len());
        for &src in sources {
            let dir = self.state_dir(src);
            match fsutil::open_dir(&dir) {
                Ok(fd) => srcs.push((src, dir, fd)),
                // No directory, no key to move from there.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => report
                    .errors
                    .push(KeyStoreError::io("open directory", dir, e)),
            }
        }
        let mut buf = if validate {
            vec![0; fsutil::KEY_BUF_LEN]
        } else {
            Vec::new()
        };
        let mut touched = [false; 4];
        for id in ids {
            let id = id.as_ref();
            for (src, src_dir, src_fd) in &srcs {
                if validate {
                    match fsutil::read_key_at(src_fd, src_dir, id, &mut buf) {
                        Ok(None) => continue,
                        Ok(Some(len)) => {
                            let checked = std::str::from_utf8(&buf[..len])
                                .map_err(|_| "not UTF-8 text".to_owned())
                                .and_then(|text| self.validator.validate(text));
                            if let Err(reason) = checked {
                                report.errors.push(KeyStoreError::InvalidKey {
                                    path: src_dir.join(id),
                                    reason,
                                });
                                continue;
                            }
                        }
                        Err(e) => {
                            report.errors.push(e);
                            continue;
                        }
                    }
                }
                match fsutil::rename_at(src_fd, &target_fd, id) {
                    Ok(()) => {
                        touched[src.idx()] = true;
                        report.changed.push((id.to_owned(), *src));
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        // Not there, or moved by someone else meanwhile.
                    }
                    Err(e) => report
                        .errors
                        .push(KeyStoreError::io("rename", src_dir.join(id), e)),
                }
                crash_point("move_many:after_rename")?;
            }
        }
        self.apply_index(&report.changed, Some(target));
        if !report.changed.is_empty() {
            if let Err(e) = target_fd.sync_all() {
                report
                    .errors
                    .push(KeyStoreError::io("fsync directory", target_dir, e));
            }
            for (src, dir, fd) in srcs {
                if touched[src.idx()]
                    && let Err(e) = fd.sync_all()
                {
                    report
                        .errors
                        .push(KeyStoreError::io("fsync directory", dir, e));
                }
            }
        }
        Ok(report)
    }

    /// Remove each `(id, state)` file: one `unlinkat` per file from directories opened
    /// once, then one fsync of each directory touched.
    fn remove_pairs(&self, pairs: Vec<(String, KeyState)>) -> Report {
        let _ops = self.lock_ops();
        if let Some(m) = &self.mmap {
            return self.mmap_remove(m, &pairs);
        }
        let mut report = Report::default();
        let mut dirs: [Option<(PathBuf, fs::File)>; 4] = Default::default();
        let mut touched = [false; 4];
        for (id, state) in pairs {
            if self.forget_unwritten(state, &id) {
                report.changed.push((id, state));
                continue;
            }
            let slot = &mut dirs[state.idx()];
            if slot.is_none() {
                let dir = self.state_dir(state);
                match fsutil::open_dir(&dir) {
                    Ok(fd) => *slot = Some((dir, fd)),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => {
                        report
                            .errors
                            .push(KeyStoreError::io("remove", dir.join(&id), e));
                        continue;
                    }
                }
            }
            let Some((dir, fd)) = slot.as_ref() else {
                continue;
            };
            match fsutil::unlink_at(fd, &id) {
                Ok(()) => {
                    touched[state.idx()] = true;
                    report.changed.push((id, state));
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => report
                    .errors
                    .push(KeyStoreError::io("remove", dir.join(&id), e)),
            }
        }
        self.apply_index(&report.changed, None);
        for state in KeyState::ALL {
            if let (true, Some((dir, fd))) = (touched[state.idx()], &dirs[state.idx()])
                && let Err(e) = fd.sync_all()
            {
                report
                    .errors
                    .push(KeyStoreError::io("fsync directory", dir, e));
            }
        }
        report
    }

    pub(super) fn apply_index(&self, changed: &[(String, KeyState)], to: Option<KeyState>) {
        if changed.is_empty() {
            return;
        }
        let mut index = self.write_index();
        for (id, from) in changed {
            index.sets[from.idx()].remove(id);
            if let Some(to) = to {
                index.insert(to, id);
            }
        }
    }
}

fn accept_sources(from: AcceptFrom) -> Vec<KeyState> {
    let mut v = vec![KeyState::Pending];
    if from.include_rejected {
        v.push(KeyState::Rejected);
    }
    if from.include_denied {
        v.push(KeyState::Denied);
    }
    v
}

fn reject_sources(from: RejectFrom) -> Vec<KeyState> {
    let mut v = vec![KeyState::Pending];
    if from.include_accepted {
        v.push(KeyState::Accepted);
    }
    if from.include_denied {
        v.push(KeyState::Denied);
    }
    v
}

fn validate_ids<S: AsRef<str>>(ids: &[S]) -> Result<()> {
    ids.iter().try_for_each(|id| validate_id(id.as_ref()))
}

/// A single-id report as a result: the first error, else the states left.
fn single(mut report: Report) -> Result<Vec<KeyState>> {
    if !report.errors.is_empty() {
        return Err(report.errors.swap_remove(0));
    }
    Ok(report.changed.into_iter().map(|(_, s)| s).collect())
}
