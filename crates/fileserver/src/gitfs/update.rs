//! gitfs's updates: the background updater, `fileserver.update`'s fetches (a few remotes at
//! once), each remote's refs and trees reloaded into a new [`State`], and Salt's
//! `remote_map.txt`.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant, SystemTime};

use super::tree::Tree;
use super::{Inner, PARALLEL_FETCHES, RemoteState, State, UpdateReport, git, libgit};

impl Inner {
    /// The updater thread: serve the cache as it is, fetch all, then each remote when due.
    pub(super) fn run_updater(&self, stop: &mpsc::Receiver<()>) {
        let all: Vec<usize> = (0..self.remotes.len()).collect();
        self.update(&all, false);
        self.update(&all, true);
        let mut last: Vec<Instant> = vec![Instant::now(); self.remotes.len()];
        loop {
            let now = Instant::now();
            let due: Vec<usize> = all
                .iter()
                .copied()
                .filter(|&i| now.duration_since(last[i]) >= self.remotes[i].update_interval)
                .collect();
            if !due.is_empty() {
                self.update(&due, true);
                let done = Instant::now();
                due.iter().for_each(|&i| last[i] = done);
                continue;
            }
            let wait = all
                .iter()
                .map(|&i| {
                    (last[i] + self.remotes[i].update_interval).saturating_duration_since(now)
                })
                .min()
                .unwrap_or(Duration::from_secs(3600))
                .max(Duration::from_millis(100));
            match stop.recv_timeout(wait) {
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                _ => return,
            }
        }
    }

    /// Fetches (when `fetch`) the remotes `picked`, reloads their refs and trees, and
    /// publishes the new state.
    pub(super) fn update(&self, picked: &[usize], fetch: bool) -> UpdateReport {
        let _one = self.updating.lock().unwrap_or_else(|e| e.into_inner());
        let old = self.state();
        let mut remotes: Vec<RemoteState> = (0..self.remotes.len())
            .map(|i| old.remotes.get(i).cloned().unwrap_or_default())
            .collect();
        // A few threads take the remotes one by one (no batch waits for its slowest).
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results: Mutex<Vec<(usize, RemoteState)>> = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..picked.len().min(PARALLEL_FETCHES) {
                s.spawn(|| {
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&i) = picked.get(k) else {
                            return;
                        };
                        let st = self.refresh(i, &remotes[i], fetch);
                        results
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((i, st));
                    }
                });
            }
        });
        let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut report = UpdateReport::default();
        for (i, st) in results {
            if st.refs != remotes[i].refs {
                report.changed = true;
            }
            if let Some(e) = &st.error {
                report.errors.push(e.clone());
            }
            remotes[i] = st;
        }
        let mut envs = BTreeSet::new();
        for (r, st) in self.remotes.iter().zip(&remotes) {
            envs.extend(r.envs(&st.refs));
        }
        *self.state.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(State {
            remotes,
            envs,
            ..State::default()
        });
        if fetch {
            self.write_remote_map();
        }
        report
    }

    /// One remote: fetch (when `fetch`), then read its refs and trees; on failure the
    /// previous state is kept with the error.
    fn refresh(&self, i: usize, prev: &RemoteState, fetch: bool) -> RemoteState {
        let r = &self.remotes[i];
        let fail = |what: String| {
            let when = prev.fetched.map_or_else(
                || "none yet".to_owned(),
                |t| {
                    let secs = t
                        .duration_since(SystemTime::UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs());
                    format!("the last good fetch at {secs} (unix time)")
                },
            );
            let msg = format!("gitfs remote '{}': {what}; serving {when}", r.id);
            tracing::error!("{msg}");
            RemoteState {
                error: Some(msg),
                ..prev.clone()
            }
        };
        if let Some(why) = &r.refused {
            return fail(why.clone());
        }
        if !r.repo_dir.join("HEAD").exists() && !fetch {
            return prev.clone();
        }
        if fetch {
            if let Err(e) = git::init(&r.repo_dir, r) {
                return fail(format!("cannot initialize the cache: {e}"));
            }
            let lock = match git::take_lock(&r.work_dir, &r.id, &self.machine_id, self.global_lock)
            {
                Ok(git::Lock::Taken(p)) => p,
                Ok(git::Lock::Busy(msg)) => {
                    tracing::warn!("{msg}");
                    return prev.clone();
                }
                Err(e) => return fail(format!("cannot set the update lock: {e}")),
            };
            tracing::debug!("Fetching gitfs remote '{}'", r.id);
            let fetched = git::fetch(&r.repo_dir, r);
            let _ = std::fs::remove_file(&lock);
            if let Err(e) = fetched {
                return fail(format!("fetch failed: {e}"));
            }
        }
        let refs = match libgit::refs(&r.repo_dir) {
            Ok(refs) => refs,
            Err(e) => return fail(format!("cannot read refs: {e}")),
        };
        let mut trees = HashMap::new();
        for commit in refs.branches.values().chain(refs.tags.values()) {
            if trees.contains_key(commit) {
                continue;
            }
            let tree = match prev.trees.get(commit) {
                Some(t) => t.clone(),
                None => match Tree::load(&r.repo_dir, commit) {
                    Ok(t) => Arc::new(t),
                    Err(e) => return fail(format!("cannot read tree {commit}: {e}")),
                },
            };
            trees.insert(commit.clone(), tree);
        }
        RemoteState {
            refs,
            trees,
            error: None,
            fetched: if fetch {
                Some(SystemTime::now())
            } else {
                prev.fetched
            },
        }
    }

    /// `<cachedir>/gitfs/remote_map.txt`, as Salt writes it.
    fn write_remote_map(&self) {
        let mut text = format!(
            "# gitfs_remote map as of {}\n",
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        );
        for r in &self.remotes {
            text.push_str(&format!("{} = {}\n", r.basehash, r.id));
        }
        if let Err(e) = std::fs::create_dir_all(&self.cache_root)
            .and_then(|()| std::fs::write(self.cache_root.join("remote_map.txt"), text))
        {
            tracing::debug!("gitfs: cannot write remote_map.txt: {e}");
        }
    }
}
