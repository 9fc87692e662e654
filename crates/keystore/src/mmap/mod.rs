//! Salt 3008's `keys.cache_driver: mmap_key` store (`salt/cache/mmap_key.py`), read and
//! written in its own file format so that a Salt 3008.5 master or `salt-key` and ours can
//! work on the same `pki_dir` (see docs/decisions.md, "Keys at 100k: Salt 3008's
//! mmap_key format").
//!
//! Two banks, each a [`table`] (index + heap + roster) in `pki_dir`:
//!
//! * `.mmap_keys.idx`: the `keys` bank, one record per minion id: `[state][pub]`, state
//!   `0x01` accepted, `0x02` pending, `0x03` rejected;
//! * `.mmap_denied.idx`: the `denied_keys` bank, the raw denied public key.
//!
//! (Salt's third bank, `.mmap_master.idx`, holds the master's own key pair; ours stays in
//! `master.pem` / `master.pub`.)

pub(crate) mod table;

use std::path::Path;

pub use table::Geometry;
use table::{Op, Table};

use crate::error::{KeyStoreError, Result};
use crate::store::KeyState;

const KEYS_INDEX: &str = ".mmap_keys.idx";
const DENIED_INDEX: &str = ".mmap_denied.idx";

/// The two key banks of one `pki_dir`.
#[derive(Debug)]
pub(crate) struct MmapKeys {
    keys: Table,
    denied: Table,
    key_size: usize,
}

fn state_byte(state: KeyState) -> Option<u8> {
    match state {
        KeyState::Accepted => Some(1),
        KeyState::Pending => Some(2),
        KeyState::Rejected => Some(3),
        KeyState::Denied => None,
    }
}

fn byte_state(b: u8) -> Option<KeyState> {
    match b {
        1 => Some(KeyState::Accepted),
        2 => Some(KeyState::Pending),
        3 => Some(KeyState::Rejected),
        _ => None,
    }
}

/// A `keys` record: its state and key text (Salt decodes the text leniently).
fn decode(raw: &[u8]) -> Option<(KeyState, String)> {
    // Salt's `_decode_key_entry`: at least one byte of key after the state.
    if raw.len() < 2 {
        return None;
    }
    let state = byte_state(raw[0])?;
    // (`from_utf8` first: the lossy path walks the text chunk by chunk, 8% of a bulk
    // accept's profile at 100k keys)
    let text = match std::str::from_utf8(&raw[1..]) {
        Ok(t) => t.to_owned(),
        Err(_) => String::from_utf8_lossy(&raw[1..]).into_owned(),
    };
    Some((state, text))
}

/// Salt's `denied_keys` value: the text with trailing NULs stripped.
fn decode_denied(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw)
        .trim_end_matches('\0')
        .to_owned()
}

impl MmapKeys {
    pub(crate) fn new(pki_dir: &Path, geo: Geometry) -> Result<Self> {
        geo.check().map_err(|message| KeyStoreError::Backend {
            driver: "mmap_key",
            message,
        })?;
        Ok(Self {
            keys: Table::new(pki_dir.join(KEYS_INDEX), geo),
            denied: Table::new(pki_dir.join(DENIED_INDEX), geo),
            key_size: geo.key_size,
        })
    }

    /// The files whose modification time changes with every change of a key, by either
    /// Salt's writer or ours: each bank's index (deletes) and heap (puts).
    pub(crate) fn watch_paths(&self) -> Vec<std::path::PathBuf> {
        [&self.keys, &self.denied]
            .into_iter()
            .flat_map(|t| [t.path().to_owned(), t.heap_path()])
            .collect()
    }

    /// Refuse an id the index cannot hold whole (Salt silently truncates it, which makes
    /// two ids sharing their first `key_size` bytes collide).
    pub(crate) fn check_id(&self, id: &str) -> Result<()> {
        if id.len() > self.key_size || id.as_bytes().contains(&0) {
            return Err(KeyStoreError::InvalidId {
                id: id.to_owned(),
                reason: "longer than mmap_key_id_size bytes, the longest id the mmap_key \
                         index holds (Salt would truncate it)",
            });
        }
        Ok(())
    }

    /// Every key's id by state (indexed by [`KeyState::idx`]), each list sorted by bytes;
    /// denied ones included (an id may be both denied and in one of the other states).
    /// The banks are read on every CPU, each thread sorting its share; the shares are
    /// then merged by one stable sort, which finds them as sorted runs.
    pub(crate) fn list_sorted(&self) -> Result<[Vec<String>; 4]> {
        type Lists = [Vec<String>; 4];
        let sort = |acc: &mut Lists| acc.iter_mut().for_each(|v| v.sort_unstable());
        let mut runs = self.keys.scan_with(
            |_| Lists::default(),
            |acc, k, v| {
                if let (Ok(id), Some(&b)) = (std::str::from_utf8(k), v.first())
                    && let Some(state) = byte_state(b)
                    && v.len() >= 2
                {
                    acc[state.idx()].push(id.to_owned());
                }
            },
            sort,
        )?;
        runs.extend(self.denied.scan_with(
            |_| Lists::default(),
            |acc, k, _| {
                if let Ok(id) = std::str::from_utf8(k) {
                    acc[KeyState::Denied.idx()].push(id.to_owned());
                }
            },
            sort,
        )?);
        let mut out = Lists::default();
        for run in runs {
            for (list, share) in out.iter_mut().zip(run) {
                list.extend(share);
            }
        }
        out.iter_mut().for_each(|v| v.sort());
        Ok(out)
    }

    /// The `keys` record of `id`.
    pub(crate) fn get(&self, id: &str) -> Result<Option<(KeyState, String)>> {
        Ok(self.keys.get(id.as_bytes())?.as_deref().and_then(decode))
    }

    /// The denied key of `id`.
    pub(crate) fn get_denied(&self, id: &str) -> Result<Option<String>> {
        Ok(self
            .denied
            .get(id.as_bytes())?
            .as_deref()
            .map(decode_denied))
    }

    /// The key text of `id` in `state`.
    pub(crate) fn read(&self, state: KeyState, id: &str) -> Result<Option<String>> {
        if state == KeyState::Denied {
            return self.get_denied(id);
        }
        Ok(self
            .get(id)?
            .and_then(|(s, pem)| (s == state).then_some(pem)))
    }

    /// Store `pem` for `id` in `state` (one record; the id leaves its previous state).
    pub(crate) fn put(&self, state: KeyState, id: &str, pem: &str) -> Result<()> {
        match state_byte(state) {
            Some(b) => {
                let mut v = Vec::with_capacity(pem.len() + 1);
                v.push(b);
                v.extend_from_slice(pem.as_bytes());
                self.keys.write(&[Op::Put(id.as_bytes(), v)])?;
            }
            None => {
                self.denied
                    .write(&[Op::Put(id.as_bytes(), pem.as_bytes().to_vec())])?;
            }
        }
        Ok(())
    }

    /// Store many `(state, id, pem)` at once (one batch per bank; an id at most once per
    /// bank).
    pub(crate) fn put_many(&self, items: &[(KeyState, String, String)]) -> Result<()> {
        let mut ops = Vec::new();
        let mut denied_ops = Vec::new();
        for (state, id, pem) in items {
            match state_byte(*state) {
                Some(b) => {
                    let mut v = Vec::with_capacity(pem.len() + 1);
                    v.push(b);
                    v.extend_from_slice(pem.as_bytes());
                    ops.push(Op::Put(id.as_bytes(), v));
                }
                None => denied_ops.push(Op::Put(id.as_bytes(), pem.as_bytes().to_vec())),
            }
        }
        self.keys.write(&ops)?;
        self.denied.write(&denied_ops)?;
        Ok(())
    }

    /// Change the state of many ids at once: each id whose record is in one of
    /// `sources` gets a new record in `target` (same key text), each id in `Denied` (when
    /// a source) takes its denied key into `target` and leaves the denied bank, as Salt's
    /// `change_state`. `check` vets a key text first (an `Err` skips that id and is
    /// reported). Returns the `(id, source)` pairs changed and the refused ones. One
    /// heap append, one index update and one fsync of each per bank.
    pub(crate) fn move_many(
        &self,
        ids: &[&str],
        sources: &[KeyState],
        target: KeyState,
        check: &dyn Fn(&str) -> std::result::Result<(), String>,
    ) -> Result<Moved> {
        let Some(tb) = state_byte(target) else {
            return Ok(Moved::default());
        };
        let mut moved = Moved::default();
        let mut ops = Vec::new();
        let mut denied_ops = Vec::new();
        let from_denied = sources.contains(&KeyState::Denied);
        let mut seen = std::collections::HashSet::new();
        let ids: Vec<&str> = ids.iter().copied().filter(|id| seen.insert(*id)).collect();
        let records = self.records(&ids)?;
        for (&id, rec) in ids.iter().zip(records) {
            let from_record = rec.filter(|(s, _)| sources.contains(s) && *s != target);
            let from = match from_record {
                Some((s, pem)) => Some((s, pem)),
                None if from_denied => self.get_denied(id)?.map(|p| (KeyState::Denied, p)),
                None => None,
            };
            let Some((src, pem)) = from else { continue };
            if let Err(reason) = check(&pem) {
                moved.refused.push((id.to_owned(), src, reason));
                continue;
            }
            let mut v = Vec::with_capacity(pem.len() + 1);
            v.push(tb);
            v.extend_from_slice(pem.as_bytes());
            ops.push(Op::Put(id.as_bytes(), v));
            if src == KeyState::Denied {
                denied_ops.push(Op::Delete(id.as_bytes()));
            }
            moved.changed.push((id.to_owned(), src));
        }
        self.keys.write(&ops)?;
        self.denied.write(&denied_ops)?;
        Ok(moved)
    }

    /// The `keys` records of `ids`, each thread reading through its own mapping (split
    /// over up to as many threads as there are CPUs, 8 at most, for 1,024 ids and more).
    fn records(&self, ids: &[&str]) -> Result<Vec<Option<(KeyState, String)>>> {
        let run = |part: &[&str]| -> Result<Vec<Option<(KeyState, String)>>> {
            let Some(mut view) = self.keys.view()? else {
                return Ok(vec![None; part.len()]);
            };
            let none = table::Claimed::default();
            part.iter()
                .map(|id| match view.find(id.as_bytes(), &none) {
                    table::Probe::Found(slot) => Ok(view.value(slot)?.and_then(decode)),
                    _ => Ok(None),
                })
                .collect()
        };
        let mut out = Vec::with_capacity(ids.len());
        for part in salt_compat::par::par_chunks(ids, 1024, run) {
            out.extend(part?);
        }
        Ok(out)
    }

    /// Remove each `(id, state)`: the `keys` record when it is in that state, the denied
    /// key for `Denied`. Returns the pairs removed.
    pub(crate) fn remove(&self, pairs: &[(String, KeyState)]) -> Result<Vec<(String, KeyState)>> {
        let mut out = Vec::new();
        let mut ops = Vec::new();
        let mut denied_ops = Vec::new();
        let wanted: Vec<&(String, KeyState)> = pairs
            .iter()
            .filter(|(_, s)| *s != KeyState::Denied)
            .collect();
        let ids: Vec<&str> = wanted.iter().map(|(id, _)| id.as_str()).collect();
        let mut seen = std::collections::HashSet::new();
        for ((id, state), rec) in wanted.iter().zip(self.records(&ids)?) {
            if rec.is_some_and(|(s, _)| s == *state) && seen.insert(id.as_str()) {
                ops.push(Op::Delete(id.as_bytes()));
                out.push((id.clone(), *state));
            }
        }
        let mut seen_denied = std::collections::HashSet::new();
        for (id, _) in pairs.iter().filter(|(_, s)| *s == KeyState::Denied) {
            if seen_denied.insert(id.as_str()) {
                denied_ops.push(Op::Delete(id.as_bytes()));
            }
        }
        self.keys.write(&ops)?;
        let done = self.denied.write(&denied_ops)?;
        for (op, ok) in denied_ops.iter().zip(done) {
            if let (Op::Delete(id), true) = (op, ok) {
                out.push((String::from_utf8_lossy(id).into_owned(), KeyState::Denied));
            }
        }
        Ok(out)
    }

    /// The key texts of `keys` (`(state, id)`), each bank read through one mapping.
    pub(crate) fn read_many(&self, keys: &[(KeyState, &str)]) -> Result<Vec<Option<String>>> {
        let ids: Vec<&str> = keys.iter().map(|(_, id)| *id).collect();
        let records = self.records(&ids)?;
        keys.iter()
            .zip(records)
            .map(|(&(state, id), rec)| {
                if state == KeyState::Denied {
                    return self.get_denied(id);
                }
                Ok(rec.and_then(|(s, pem)| (s == state).then_some(pem)))
            })
            .collect()
    }
}

/// What [`MmapKeys::move_many`] did.
#[derive(Debug, Default)]
pub(crate) struct Moved {
    pub(crate) changed: Vec<(String, KeyState)>,
    pub(crate) refused: Vec<(String, KeyState, String)>,
}

#[cfg(test)]
mod tests;
