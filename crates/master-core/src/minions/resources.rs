//! The master's registry of Salt Resources (3008): which minion manages which resource, and
//! each resource's grains, as minions report them with `_register_resources` (Salt's
//! `ResourceRegistry` and `resource_grains` cache bank, `salt/utils/resource_registry.py`).
//!
//! A resource is named by its SRN `<type>:<id>` and has one managing minion at a time (the
//! last to register it). A minion's registration replaces its whole set: resources it no
//! longer declares are removed with their grains (a `saltutil.refresh_pillar` that changes
//! its `resources:` pillar sends a new registration).
//!
//! Salt keeps its registry in an mmap file under `cachedir`; ours is one msgpack file,
//! `cachedir/resources/registry.p`, rewritten atomically on each change and read at start,
//! so the registry survives a restart as Salt's does.
//!
//! Where we are stricter than Salt (a minion's data is peer input): a resource id must be a
//! valid minion id (it names the job cache directory of its returns) and may not be the id
//! of an accepted minion (its returns would be filed as that minion's); such entries are
//! skipped and logged. The registry holds at most [`MAX_RESOURCES`] resources.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use rmpv::Value;
use salt_proto::{decode, encode};

/// Most resources the registry holds (all minions together); more are refused and logged.
pub(crate) const MAX_RESOURCES: usize = 100_000;

/// One registered resource.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    /// The managing minion.
    pub minion: String,
    /// The resource type (`dummy`).
    pub rtype: String,
    /// The bare resource id (`dummy-01`).
    pub id: String,
    /// Its grains as the minion sent them (kept with `minion_data_cache` only).
    pub grains: Option<Value>,
}

impl Entry {
    /// The SRN key `<type>:<id>`.
    pub(crate) fn srn(&self) -> String {
        format!("{}:{}", self.rtype, self.id)
    }

    /// The resource as `salt-matcher` sees it.
    pub(crate) fn as_matcher(&self) -> salt_matcher::Resource<'_> {
        salt_matcher::Resource {
            rtype: &self.rtype,
            id: &self.id,
            grains: self.grains.as_ref(),
        }
    }
}

/// The registry (shared by the request workers and the publisher).
#[derive(Debug)]
pub(crate) struct Resources {
    path: PathBuf,
    by_srn: RwLock<BTreeMap<String, Entry>>,
}

impl Resources {
    /// The registry stored under `cachedir` (empty when there is none; an unreadable file is
    /// logged and the registry starts empty: minions register again when they reconnect).
    pub(crate) fn open(cachedir: &Path) -> Self {
        let path = cachedir.join("resources").join("registry.p");
        let by_srn = match std::fs::read(&path) {
            Ok(bytes) => match decode(&bytes).ok().and_then(|v| entries_from(&v)) {
                Some(m) => m,
                None => {
                    tracing::warn!(
                        "Resource registry {} does not parse; starting empty",
                        path.display()
                    );
                    BTreeMap::new()
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => {
                tracing::warn!("Resource registry {}: {e}; starting empty", path.display());
                BTreeMap::new()
            }
        };
        Resources {
            path,
            by_srn: RwLock::new(by_srn),
        }
    }

    /// Replace the resources `minion` manages with `resources` (`{type: [id, ...]}`) and
    /// their `grains` (`{"<type>:<id>": {...}}`, `None`: not kept). `is_minion`: whether an
    /// id is an accepted minion's. Returns `(put, deleted)` as Salt logs them.
    pub(crate) fn register(
        &self,
        minion: &str,
        resources: &Value,
        grains: Option<&Value>,
        is_minion: impl Fn(&str) -> bool,
    ) -> Result<(usize, usize), String> {
        let mut wanted = Vec::new();
        for (rtype, ids) in resources.as_map().map(Vec::as_slice).unwrap_or_default() {
            let Some(rtype) = rtype.as_str().filter(|t| !t.is_empty()) else {
                continue;
            };
            for rid in ids.as_array().map(Vec::as_slice).unwrap_or_default() {
                let Some(rid) = rid.as_str() else { continue };
                if !salt_proto::auth_master::valid_id(rid) || is_minion(rid) {
                    tracing::warn!(
                        "Resource {rtype}:{rid:.80} of minion {minion} refused: not a valid id, \
                         or the id of an accepted minion"
                    );
                    continue;
                }
                wanted.push(Entry {
                    minion: minion.to_owned(),
                    rtype: rtype.to_owned(),
                    id: rid.to_owned(),
                    grains: grains
                        .and_then(|g| salt_compat::map_get(g, &format!("{rtype}:{rid}")))
                        .filter(|g| g.is_map())
                        .cloned(),
                });
            }
        }
        let mut map = self.by_srn.write().unwrap_or_else(|e| e.into_inner());
        let before = map.len();
        let new_keys: Vec<String> = wanted.iter().map(Entry::srn).collect();
        map.retain(|srn, e| e.minion != minion || new_keys.contains(srn));
        let deleted = before - map.len();
        let mut put = 0;
        let mut changed = deleted > 0;
        for e in wanted {
            if map.len() >= MAX_RESOURCES && !map.contains_key(&e.srn()) {
                tracing::warn!(
                    "Resource registry full ({MAX_RESOURCES}): {} of {minion} not registered",
                    e.srn()
                );
                continue;
            }
            put += 1;
            if map.get(&e.srn()) != Some(&e) {
                changed = true;
                map.insert(e.srn(), e);
            }
        }
        // Every 3008 minion registers at each sign-in, most with what the registry holds
        // already: the file is rewritten only when something changed.
        if !changed {
            return Ok((put, deleted));
        }
        let bytes = encode(&entries_to(&map));
        drop(map);
        self.save(&bytes)?;
        Ok((put, deleted))
    }

    fn save(&self, bytes: &[u8]) -> Result<(), String> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        salt_pki::files::atomic_write(&self.path, bytes, 0o600)
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }

    /// Every registered resource (sorted by SRN).
    pub(crate) fn all(&self) -> Vec<Entry> {
        let map = self.by_srn.read().unwrap_or_else(|e| e.into_inner());
        map.values().cloned().collect()
    }

    /// Whether `minion` manages a resource with the bare id `rid` (any type).
    pub(crate) fn manages(&self, minion: &str, rid: &str) -> bool {
        let map = self.by_srn.read().unwrap_or_else(|e| e.into_inner());
        map.values().any(|e| e.minion == minion && e.id == rid)
    }

    /// The entry of SRN `<rtype>:<rid>`.
    pub(crate) fn get(&self, rtype: &str, rid: &str) -> Option<Entry> {
        let map = self.by_srn.read().unwrap_or_else(|e| e.into_inner());
        map.get(&format!("{rtype}:{rid}")).cloned()
    }
}

/// The file's form: a list of `[minion, type, id, grains|nil]`.
fn entries_to(map: &BTreeMap<String, Entry>) -> Value {
    Value::Array(
        map.values()
            .map(|e| {
                Value::Array(vec![
                    Value::from(e.minion.as_str()),
                    Value::from(e.rtype.as_str()),
                    Value::from(e.id.as_str()),
                    e.grains.clone().unwrap_or(Value::Nil),
                ])
            })
            .collect(),
    )
}

fn entries_from(v: &Value) -> Option<BTreeMap<String, Entry>> {
    let mut out = BTreeMap::new();
    for item in v.as_array()? {
        let f = item.as_array()?;
        let text = |i: usize| f.get(i).and_then(Value::as_str).map(str::to_owned);
        let e = Entry {
            minion: text(0)?,
            rtype: text(1)?,
            id: text(2)?,
            grains: f.get(3).filter(|g| g.is_map()).cloned(),
        };
        out.insert(e.srn(), e);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(pairs: &[(&str, &[&str])]) -> Value {
        Value::Map(
            pairs
                .iter()
                .map(|(t, ids)| {
                    (
                        Value::from(*t),
                        Value::Array(ids.iter().map(|i| Value::from(*i)).collect()),
                    )
                })
                .collect(),
        )
    }

    #[test]
    fn register_replace_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let r = Resources::open(dir.path());
        let grains = Value::Map(vec![(
            Value::from("dummy:d1"),
            Value::Map(vec![(Value::from("os"), Value::from("Dummy"))]),
        )]);
        let none = |_: &str| false;
        let two = res(&[("dummy", &["d1", "d2"])]);
        assert_eq!(r.register("m1", &two, Some(&grains), none).unwrap(), (2, 0));
        assert!(r.manages("m1", "d2"));
        assert!(r.get("dummy", "d1").unwrap().grains.is_some());
        // The registry survives a restart.
        let again = Resources::open(dir.path());
        assert_eq!(again.all(), r.all());
        // The same registration again: nothing to write (the file is left as it is).
        let stamp = std::fs::metadata(dir.path().join("resources/registry.p"))
            .unwrap()
            .modified()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(r.register("m1", &two, Some(&grains), none).unwrap(), (2, 0));
        let after = std::fs::metadata(dir.path().join("resources/registry.p"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(stamp, after);
        // A new registration replaces the set: d2 removed.
        let one = res(&[("dummy", &["d1"])]);
        assert_eq!(r.register("m1", &one, None, none).unwrap(), (1, 1));
        assert!(!r.manages("m1", "d2"));
        assert_eq!(Resources::open(dir.path()).all().len(), 1);
        // Another minion's registration leaves m1's alone; an accepted minion's id is refused.
        let other = res(&[("ssh", &["web-01", "m1", "bad/id"])]);
        assert_eq!(
            r.register("m2", &other, None, |id| id == "m1").unwrap(),
            (1, 0)
        );
        assert_eq!(r.all().len(), 2);
        // Garbage is nothing registered, not an error.
        assert_eq!(
            r.register("m2", &Value::from(3), None, none).unwrap(),
            (0, 1)
        );
        std::fs::write(dir.path().join("resources/registry.p"), b"\xc1").unwrap();
        assert!(Resources::open(dir.path()).all().is_empty());
    }
}
