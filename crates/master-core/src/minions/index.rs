//! The grains and pillar of the minion data cache, held in memory so that a grain, pillar
//! or compound target at 100,000 cached minions does not read 100,000 `data.p` files.
//!
//! One index per cache directory in the process (the master's `cachedir/minions`). It is
//! filled at the first target that needs it (one read of every `data.p`, as each target did
//! before; held in the [`compact`](super::compact) form, about 1.8 KiB of memory per cached
//! minion whose `data.p` is ~0.8 KiB, against 6.5 KiB as rmpv values; writes before that are
//! not recorded), then changed by every write and flush of `data.p` through
//! [`MinionCache`](super::data::MinionCache), and re-synced with the directory when the
//! directory's mtime moves: a minion directory created or removed by another process
//! (`salt-key -d` removes `cachedir/minions/<id>` of deleted keys) is seen at the next
//! target. A `data.p` rewritten in place by another process is not seen until the master
//! restarts; in salt-rs only the master writes it (the `_pillar` request).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, SystemTime};

use rmpv::Value;

use super::compact::{Atoms, Entry, Ref};

/// A directory mtime this recent may hide a change made in the same clock tick: the
/// directory is read again at the next use.
const SETTLE: Duration = Duration::from_secs(1);

/// The in-memory index of one `cachedir/minions` directory.
#[derive(Debug)]
pub(crate) struct FactsIndex {
    dir: PathBuf,
    state: RwLock<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Whether the index was filled (at the first target that needs it). Until then writes
    /// are not recorded: a master that never targets by grain or pillar holds nothing.
    loaded: bool,
    /// The directory's mtime when it was last read whole; `None`: read it at the next use.
    stamp: Option<SystemTime>,
    atoms: Atoms,
    map: HashMap<Box<str>, Entry>,
}

impl State {
    /// Record `<id>/data.p` (`None`: removed).
    fn set(&mut self, id: &str, data: Option<&Value>) {
        let new = data.map(|d| {
            self.atoms.entry(
                salt_compat::map_get(d, "grains"),
                salt_compat::map_get(d, "pillar"),
            )
        });
        let old = match new {
            Some(e) => self.map.insert(id.into(), e),
            None => self.map.remove(id),
        };
        if let Some(old) = old {
            self.atoms.release(&old);
        }
    }
}

/// The cached grains and pillar of every minion, while the index is read.
pub(crate) struct View<'a> {
    st: &'a State,
}

impl View<'_> {
    /// `id`'s cached `(grains, pillar)` (`None`: nothing cached).
    pub(crate) fn get(&self, id: &str) -> Option<(Option<Ref<'_>>, Option<Ref<'_>>)> {
        let e = self.st.map.get(id)?;
        Some((self.st.atoms.root(e, 0), self.st.atoms.root(e, 1)))
    }

    /// How many minions and distinct scalars are held (for the benchmark).
    #[cfg(test)]
    pub(crate) fn sizes(&self) -> (usize, usize) {
        (self.st.map.len(), self.st.atoms.len())
    }
}

/// The index of `dir` (`cachedir/minions`), shared by every user in the process.
pub(crate) fn for_dir(dir: &Path) -> Arc<FactsIndex> {
    static ALL: OnceLock<Mutex<HashMap<PathBuf, Arc<FactsIndex>>>> = OnceLock::new();
    let mut all = ALL
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    all.entry(dir.to_owned())
        .or_insert_with(|| {
            Arc::new(FactsIndex {
                dir: dir.to_owned(),
                state: RwLock::default(),
            })
        })
        .clone()
}

impl FactsIndex {
    /// Record what was just written to (`Some`, the whole `data.p`) or removed from
    /// (`None`) `<id>/data.p`.
    pub(crate) fn put(&self, id: &str, data: Option<&Value>) {
        let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
        if st.loaded {
            st.set(id, data);
        }
    }

    /// `f` over the cached facts, after syncing with the directory (writers wait for it).
    pub(crate) fn with_view<R>(&self, f: impl FnOnce(&View<'_>) -> R) -> R {
        self.sync();
        let st = self.state.read().unwrap_or_else(|p| p.into_inner());
        f(&View { st: &st })
    }

    /// Read the directory again if its mtime moved since the last read (or was too recent
    /// to trust): drop the minions whose directory is gone, load the new ones.
    fn sync(&self) {
        let mtime = std::fs::metadata(&self.dir).and_then(|m| m.modified()).ok();
        let fresh = |st: &State| st.stamp.is_some() && st.stamp == mtime;
        if fresh(&self.state.read().unwrap_or_else(|p| p.into_inner())) {
            return;
        }
        let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
        if fresh(&st) {
            return;
        }
        let Some(mtime) = mtime else {
            st.map.clear();
            st.atoms = Atoms::default();
            st.loaded = true;
            st.stamp = None;
            return;
        };
        let names: HashSet<String> = match std::fs::read_dir(&self.dir) {
            Ok(rd) => rd
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| salt_proto::auth_master::valid_id(n))
                .collect(),
            Err(e) => {
                tracing::warn!("minion data cache {}: {e}", self.dir.display());
                st.stamp = None;
                return;
            }
        };
        st.loaded = true;
        let gone: Vec<Box<str>> = st
            .map
            .keys()
            .filter(|id| !names.contains(&***id))
            .cloned()
            .collect();
        for id in gone {
            st.set(&id, None);
        }
        for name in names {
            if st.map.contains_key(name.as_str()) {
                continue;
            }
            let data = std::fs::read(self.dir.join(&name).join("data.p"))
                .ok()
                .and_then(|b| salt_proto::decode(&b).ok());
            if let Some(d) = data {
                st.set(&name, Some(&d));
            }
        }
        let settled = SystemTime::now()
            .duration_since(mtime)
            .is_ok_and(|age| age > SETTLE);
        st.stamp = settled.then_some(mtime);
    }
}
