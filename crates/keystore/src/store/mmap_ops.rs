//! [`KeyStore`] over Salt 3008's `mmap_key` index files (`keys.cache_driver: mmap_key`):
//! the same operations as the one-file-per-key layout, each a batch of index updates
//! ([`crate::mmap`]).

use super::{KeyState, KeyStore, Report};
use crate::error::{KeyStoreError, Result};
use crate::mmap::MmapKeys;

impl KeyStore {
    /// Caller holds `ops`. One read of the index gives every state.
    pub(super) fn mmap_refresh(&self, m: &MmapKeys, states: &[KeyState]) -> Result<()> {
        let mut lists = m.list_sorted()?;
        let mut index = self.write_index();
        for &state in states {
            let v = std::mem::take(&mut lists[state.idx()]);
            // Sorted already: the set is built in one pass.
            index.reset(
                state,
                v.into_iter().filter(|id| !id.starts_with('.')).collect(),
            );
        }
        Ok(())
    }

    /// [`state`](Self::state): one record and one denied look-up.
    pub(super) fn mmap_state(m: &MmapKeys, id: &str) -> Result<Option<KeyState>> {
        if let Some((state, _)) = m.get(id)? {
            return Ok(Some(state));
        }
        Ok(m.get_denied(id)?.map(|_| KeyState::Denied))
    }

    /// [`states_of`](Self::states_of).
    pub(super) fn mmap_states_of(m: &MmapKeys, id: &str) -> Result<Vec<KeyState>> {
        let mut out: Vec<KeyState> = m.get(id)?.map(|(s, _)| s).into_iter().collect();
        if m.get_denied(id)?.is_some() {
            out.push(KeyState::Denied);
        }
        out.sort_by_key(|s| s.idx());
        Ok(out)
    }

    /// `move_many` on the index: caller holds `ops`, ids are valid.
    pub(super) fn mmap_move<S: AsRef<str>>(
        &self,
        m: &MmapKeys,
        ids: &[S],
        sources: &[KeyState],
        target: KeyState,
        validate: bool,
    ) -> Result<Report> {
        let ids: Vec<&str> = ids.iter().map(AsRef::as_ref).collect();
        ids.iter().try_for_each(|id| m.check_id(id))?;
        let check = |pem: &str| {
            if validate {
                self.validator.validate(pem)
            } else {
                Ok(())
            }
        };
        let moved = m.move_many(&ids, sources, target, &check)?;
        let mut report = Report::default();
        for (id, src, reason) in moved.refused {
            report.errors.push(KeyStoreError::InvalidKey {
                path: self.path(src, &id),
                reason,
            });
        }
        report.changed = moved.changed;
        self.apply_index(&report.changed, Some(target));
        Ok(report)
    }

    /// `remove_pairs` on the index: caller holds `ops`.
    pub(super) fn mmap_remove(&self, m: &MmapKeys, pairs: &[(String, KeyState)]) -> Report {
        let mut report = Report::default();
        match m.remove(pairs) {
            Ok(done) => report.changed = done,
            Err(e) => report.errors.push(e),
        }
        self.apply_index(&report.changed, None);
        report
    }

    /// `put` on the index: caller holds `ops`, the id and key are valid.
    pub(super) fn mmap_put(
        &self,
        m: &MmapKeys,
        target: KeyState,
        id: &str,
        pem: &str,
    ) -> Result<()> {
        m.check_id(id)?;
        let previous = m.get(id)?.map(|(s, _)| s);
        if target == KeyState::Pending
            && let Some(state) = previous.filter(|&s| s != KeyState::Pending)
        {
            return Err(KeyStoreError::Conflict {
                id: id.to_owned(),
                state,
            });
        }
        m.put(target, id, pem)?;
        let mut index = self.write_index();
        if target != KeyState::Denied
            && let Some(prev) = previous
        {
            index.sets[prev.idx()].remove(id);
        }
        index.insert(target, id);
        Ok(())
    }
}
