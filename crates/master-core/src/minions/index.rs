//! The grains and pillar of the minion data cache, held in memory so that a grain, pillar
//! or compound target at 100,000 cached minions does not read 100,000 `data.p` files.
//!
//! One index per cache directory in the process (the master's `cachedir/minions`). It is
//! filled at the first target that needs it (one read of every `data.p`, as each target did
//! before; about 6.5 KiB of memory per cached minion whose `data.p` is ~0.8 KiB; writes
//! before that are not recorded), then changed by every write and flush of `data.p` through
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

/// A minion's cached `(grains, pillar)`.
pub(crate) type Facts = Arc<(Option<Value>, Option<Value>)>;

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
    map: HashMap<String, Facts>,
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

/// `(grains, pillar)` of a decoded `data.p`.
pub(crate) fn facts_of(data: &Value) -> Facts {
    Arc::new((
        salt_compat::map_get(data, "grains").cloned(),
        salt_compat::map_get(data, "pillar").cloned(),
    ))
}

impl FactsIndex {
    /// Record what was just written to (`Some`) or removed from (`None`) `<id>/data.p`.
    pub(crate) fn put(&self, id: &str, facts: Option<Facts>) {
        let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
        if !st.loaded {
            return;
        }
        match facts {
            Some(f) => st.map.insert(id.to_owned(), f),
            None => st.map.remove(id),
        };
    }

    /// The cached facts of each of `ids` (`None`: nothing cached), after syncing with the
    /// directory.
    pub(crate) fn get_many<'a>(
        &self,
        ids: impl IntoIterator<Item = &'a str>,
    ) -> Vec<Option<Facts>> {
        self.sync();
        let st = self.state.read().unwrap_or_else(|p| p.into_inner());
        ids.into_iter().map(|id| st.map.get(id).cloned()).collect()
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
        st.map.retain(|id, _| names.contains(id));
        for name in names {
            if st.map.contains_key(&name) {
                continue;
            }
            let data = std::fs::read(self.dir.join(&name).join("data.p"))
                .ok()
                .and_then(|b| salt_proto::decode(&b).ok());
            if let Some(d) = data {
                st.map.insert(name, facts_of(&d));
            }
        }
        let settled = SystemTime::now()
            .duration_since(mtime)
            .is_ok_and(|age| age > SETTLE);
        st.stamp = settled.then_some(mtime);
    }
}
