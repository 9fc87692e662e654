//! The local mirror: every master keeps the group's keys in its own `pki_dir`, in Salt's
//! layout, so sign-ins read local files (never the database) and Salt's own tools still
//! see the keys. `.group_seq` records the last change applied; `.group.lock` serialises
//! the processes (a master, `salt-key`) that bring the mirror up to date.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use nix::fcntl::{Flock, FlockArg};
use salt_keystore::{KeyChanges as _, KeyState, KeyStore, KeyStoreError};

use crate::plan::Keys;

/// `pki_dir/.group_seq`: `<cluster_id> <seq>`.
pub(crate) const SEQ_FILE: &str = ".group_seq";
const LOCK_FILE: &str = ".group.lock";

/// Held while a process applies changes to the mirror.
pub(crate) struct MirrorLock {
    _lock: Flock<fs::File>,
}

impl MirrorLock {
    pub(crate) fn acquire(pki_dir: &Path) -> io::Result<Self> {
        let path = pki_dir.join(LOCK_FILE);
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        let lock = Flock::lock(file, FlockArg::LockExclusive)
            .map_err(|(_, e)| io::Error::from_raw_os_error(e as i32))?;
        Ok(Self { _lock: lock })
    }
}

/// The change the mirror holds, if it mirrors `cluster`.
pub(crate) fn read_seq(pki_dir: &Path, cluster: &str) -> Option<i64> {
    let text = fs::read_to_string(pki_dir.join(SEQ_FILE)).ok()?;
    let (c, seq) = text.trim().rsplit_once(' ')?;
    (c == cluster).then(|| seq.parse().ok()).flatten()
}

pub(crate) fn write_seq(pki_dir: &Path, cluster: &str, seq: i64) -> io::Result<()> {
    let path: PathBuf = pki_dir.join(SEQ_FILE);
    let tmp = pki_dir.join(format!("{SEQ_FILE}.tmp"));
    fs::write(&tmp, format!("{cluster} {seq}\n"))?;
    fs::rename(tmp, path)
}

/// Make the files of `id` hold exactly `want`. Returns whether anything changed.
pub(crate) fn apply_id(store: &KeyStore, id: &str, want: &Keys) -> Result<bool, KeyStoreError> {
    let have = store.states_of(id)?;
    let stray = have.iter().any(|s| !want.contains_key(s));
    let mut changed = false;
    if stray {
        store.delete(id)?;
        changed = true;
    }
    // Exclusive state first, then the denied side record.
    let mut order: Vec<(&KeyState, &String)> = want.iter().collect();
    order.sort_by_key(|(s, _)| **s == KeyState::Denied);
    for (state, pem) in order {
        if !stray && have.contains(state) && store.read_key(*state, id)?.as_deref() == Some(pem) {
            continue;
        }
        store.put(*state, id, pem)?;
        changed = true;
    }
    Ok(changed)
}

/// Make the whole mirror equal `all` (after a first start, or a mirror of another group).
/// Ids the local index does not know at all are written straight away (a first start
/// writes every key once, without the per-id checks); with `defer`, they are listed in
/// memory at once and their files written in the background
/// ([`KeyStore::put_new_many_deferred`]).
pub(crate) fn full_sync(
    store: &Arc<KeyStore>,
    all: BTreeMap<String, Keys>,
    defer: bool,
    cluster: &str,
) -> Result<usize, KeyStoreError> {
    store.refresh()?;
    let mut changed = 0;
    let empty = Keys::new();
    let mut local: HashSet<String> = HashSet::new();
    for id in store.list_all().into_values().flatten() {
        if !all.contains_key(&id) && apply_id(store, &id, &empty)? {
            changed += 1;
        }
        local.insert(id);
    }
    // Ids new here: written in bulk (in parallel, one atomic file each).
    let mut new = Vec::new();
    for (id, want) in all {
        if !local.contains(&id) {
            new.extend(want.into_iter().map(|(s, pem)| (s, id.clone(), pem)));
            changed += 1;
        } else if apply_id(store, &id, &want)? {
            changed += 1;
        }
    }
    if defer && !new.is_empty() {
        let started = Instant::now();
        let cluster = cluster.to_owned();
        store.put_new_many_deferred(
            new,
            Box::new(move |r| match r {
                Ok(n) => tracing::info!(
                    "group {cluster}: local key files written ({n} in {:.1} s, served from \
                     memory meanwhile)",
                    started.elapsed().as_secs_f64()
                ),
                Err(e) => tracing::error!(
                    "group {cluster}: writing the local key files stopped: {e}; the keys \
                     not written are served from memory"
                ),
            }),
        )?;
    } else {
        store.put_new_many(&new)?;
    }
    Ok(changed)
}
