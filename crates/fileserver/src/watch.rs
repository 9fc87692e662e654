//! Change notification for the roots (`notify`: inotify on Linux): any event under a
//! watched root marks the indexes dirty; they are rebuilt on the next request.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use notify::{RecursiveMode, Watcher};

/// The watcher and the environments it fully covers.
pub(crate) struct Watch {
    _watcher: Option<notify::RecommendedWatcher>,
    covered: HashSet<String>,
}

impl Watch {
    /// Watches every existing root of every named environment (not `__env__`). An
    /// environment with a root that cannot be watched is re-listed after
    /// [`crate::LIST_CACHE_TIME`] instead.
    pub(crate) fn start(roots: &BTreeMap<String, Vec<PathBuf>>, dirty: Arc<AtomicBool>) -> Self {
        let handler = move |res: notify::Result<notify::Event>| {
            if res.is_ok_and(|e| !e.kind.is_access()) {
                dirty.store(true, Ordering::Release);
            }
        };
        // No inotify instance (nor its thread) for a master without any root on disk.
        if !roots
            .iter()
            .filter(|(env, _)| env.as_str() != "__env__")
            .flat_map(|(_, dirs)| dirs)
            .any(|d| d.is_dir())
        {
            return Self {
                _watcher: None,
                covered: HashSet::new(),
            };
        }
        let mut watcher = match notify::recommended_watcher(handler) {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!("file server: cannot watch file_roots ({e}); re-listing every 20 s");
                return Self {
                    _watcher: None,
                    covered: HashSet::new(),
                };
            }
        };
        let mut covered = HashSet::new();
        for (env, dirs) in roots {
            if env == "__env__" {
                continue;
            }
            let mut all = true;
            for dir in dirs {
                if let Err(e) = watcher.watch(dir, RecursiveMode::Recursive) {
                    tracing::debug!("file server: not watching {}: {e}", dir.display());
                    all = false;
                }
            }
            if all {
                covered.insert(env.clone());
            }
        }
        Self {
            _watcher: Some(watcher),
            covered,
        }
    }

    /// Whether every root of `env` is watched.
    pub(crate) fn covers(&self, env: &str) -> bool {
        self.covered.contains(env)
    }
}
