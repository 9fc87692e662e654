//! The `gitfs` file server backend (Salt's `salt/fileserver/gitfs.py` over
//! `salt/utils/gitfs.py`), with the `git` command as provider (Salt 3008's `gitcli`).
//!
//! Each remote is a bare repository under `<cachedir>/gitfs/<hash>/_` (Salt's layout; `<hash>`
//! is the per-remote `name` or the base64 `hash_type` digest of the URL), fetched by a
//! background thread every `update_interval` and by `fileserver.update` — never on the
//! request path. After a fetch the refs and their trees are read into a [`State`] that
//! requests only read: listings, lookups and symlink targets are in memory; blob contents are
//! read once (`git cat-file`) and kept by object id, as are their hashes. A remote whose fetch
//! fails keeps serving the trees of its last good fetch, and the failure is logged and
//! reported by `fileserver.update`.
//!
//! Not done as Salt does: files are not written to `<cachedir>/gitfs/refs/` nor hashes to
//! `<cachedir>/gitfs/hash/` (they are served from memory; `_file_find` still answers the
//! path Salt would), and there is no `envs.p` env cache.

mod git;
mod libgit;
mod pillar;
mod remote;
mod tree;
mod update;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use salt_config::GitfsConfig;

use self::libgit::Refs;
pub use self::pillar::GitPillar;
use self::remote::Remote;
pub(crate) use self::remote::is_hex;
use self::tree::{Blob, Lists, Tree};
use crate::inline::Budget;

/// Most bytes of blob contents kept in memory (the cache is emptied when exceeded).
const MAX_BLOB_BYTES: usize = 256 << 20;
/// Most saltenv listings kept per state.
const MAX_LISTS: usize = 256;
/// Remotes fetched at once.
const PARALLEL_FETCHES: usize = 12;

/// The gitfs backend: its remotes and what their last good fetch holds.
pub struct GitFs {
    inner: Arc<Inner>,
    /// Dropping it stops the background updater.
    _stop: Option<mpsc::Sender<()>>,
}

impl std::fmt::Debug for GitFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitFs")
            .field("remotes", &self.inner.remotes.len())
            .finish_non_exhaustive()
    }
}

struct Inner {
    remotes: Vec<Remote>,
    cache_root: PathBuf,
    hash_type: salt_pki::HashType,
    global_lock: bool,
    machine_id: String,
    state: RwLock<Arc<State>>,
    /// One update at a time (the background one or `fileserver.update`'s).
    updating: Mutex<()>,
    blobs: Mutex<BlobCache>,
    hashes: Mutex<HashMap<String, String>>,
}

#[derive(Default)]
struct BlobCache {
    map: HashMap<String, Arc<[u8]>>,
    bytes: usize,
}

/// What the remotes hold as of the last update.
#[derive(Default)]
struct State {
    remotes: Vec<RemoteState>,
    envs: BTreeSet<String>,
    lists: Mutex<HashMap<String, Arc<Lists>>>,
    shas: Mutex<HashMap<ShaKey, Option<Arc<Tree>>>>,
}

/// A commit asked for by hex prefix, in remote `.0`.
type ShaKey = (usize, String);

/// One remote's refs and their trees, from its last good fetch.
#[derive(Clone, Default)]
struct RemoteState {
    refs: Refs,
    trees: HashMap<String, Arc<Tree>>,
    /// The last fetch's failure, if it failed.
    error: Option<String>,
    /// When the last good fetch finished.
    fetched: Option<SystemTime>,
}

/// A file found in a gitfs saltenv.
#[derive(Clone, Debug)]
pub struct Found {
    remote: usize,
    blob: Blob,
    /// The path asked for (Salt's `rel`).
    pub rel: String,
    /// Salt's cache path for it (`<cachedir>/gitfs/refs/<saltenv>/<rel>`).
    pub dest: PathBuf,
}

impl Found {
    /// Salt's gitfs `stat`: `[mode]`.
    pub fn mode(&self) -> u32 {
        self.blob.mode
    }
}

/// The listing kinds gitfs answers.
#[derive(Clone, Copy, Debug)]
pub enum ListKind {
    /// `_file_list`.
    Files,
    /// `_dir_list`.
    Dirs,
}

/// What `fileserver.update` did.
#[derive(Clone, Debug, Default)]
pub struct UpdateReport {
    /// Whether any remote's refs changed.
    pub changed: bool,
    /// One line per remote that failed (it keeps serving its last good tree).
    pub errors: Vec<String>,
}

impl GitFs {
    /// The backend for `cfg`, caching under `cache_root` (`<cachedir>/gitfs`). Starts the
    /// background updater: it first serves what the cache already holds, then fetches every
    /// remote, then each again every `update_interval`.
    pub fn start(cfg: &GitfsConfig, cache_root: PathBuf, hash_type: salt_pki::HashType) -> Self {
        let remotes: Vec<Remote> = cfg
            .gitfs_remotes
            .iter()
            .map(|r| Remote::new(r, cfg, &cache_root, hash_type))
            .collect();
        let inner = Arc::new(Inner {
            remotes,
            cache_root,
            hash_type,
            global_lock: cfg.gitfs_global_lock,
            machine_id: git::machine_id(),
            state: RwLock::new(Arc::new(State::default())),
            updating: Mutex::new(()),
            blobs: Mutex::default(),
            hashes: Mutex::default(),
        });
        let (tx, rx) = mpsc::channel::<()>();
        let bg = inner.clone();
        let spawned = std::thread::Builder::new()
            .name("gitfs-update".into())
            .spawn(move || bg.run_updater(&rx));
        if let Err(e) = spawned {
            tracing::error!("gitfs: cannot start the updater thread: {e}");
        }
        Self {
            inner,
            _stop: Some(tx),
        }
    }

    /// Fetches the remotes (all, or those whose URL or `name` is in `only`) now and
    /// reports what changed and what failed.
    pub fn update(&self, only: Option<&[String]>) -> UpdateReport {
        let picked: Vec<usize> = (0..self.inner.remotes.len())
            .filter(|&i| {
                let r = &self.inner.remotes[i];
                only.is_none_or(|o| {
                    o.iter()
                        .any(|x| *x == r.id || r.name.as_deref() == Some(x.as_str()))
                })
            })
            .collect();
        self.inner.update(&picked, true)
    }

    /// The saltenvs served (sorted).
    pub fn envs(&self) -> Vec<String> {
        self.inner.state().envs.iter().cloned().collect()
    }

    /// `_file_list` / `_dir_list` of `env` (`None` while the listing cannot be built on
    /// this thread).
    pub fn list(&self, env: &str, kind: ListKind, budget: &Budget) -> Option<Vec<String>> {
        let lists = self.inner.lists(env, budget)?;
        Some(match kind {
            ListKind::Files => lists.files.iter().cloned().collect(),
            ListKind::Dirs => lists.dirs.iter().cloned().collect(),
        })
    }

    /// `_symlink_list` of `env`.
    pub fn symlinks(&self, env: &str, budget: &Budget) -> Option<Vec<(String, String)>> {
        let lists = self.inner.lists(env, budget)?;
        Some(
            lists
                .links
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )
    }

    /// `GitFS.find_file(path, env)` for a normalized relative path.
    pub fn find(&self, path: &str, env: &str, budget: &Budget) -> Option<Found> {
        self.inner.find(path, env, budget)
    }

    /// The hex digest (`hash_type`) of a found file, computed once per blob.
    pub fn hash(&self, f: &Found, budget: &Budget) -> Option<String> {
        if let Some(h) = self.inner.lock_hashes().get(&f.blob.oid) {
            return Some(h.clone());
        }
        let data = self.contents(f, budget)?;
        let hex = hex::encode(self.inner.hash_type.digest(&data));
        let mut map = self.inner.lock_hashes();
        if map.len() >= 200_000 {
            map.clear();
        }
        map.insert(f.blob.oid.clone(), hex.clone());
        Some(hex)
    }

    /// The contents of a found file (read from git once, then from memory).
    pub fn contents(&self, f: &Found, budget: &Budget) -> Option<Arc<[u8]>> {
        self.inner.blob(f.remote, &f.blob.oid, budget)
    }

    /// `cache.clear_git_lock gitfs`: removes the `lock_types` lock files of the remotes
    /// whose URL matches `remote` (a glob); Salt's cleared and error messages.
    pub fn clear_lock(
        &self,
        remote: Option<&str>,
        lock_types: &[String],
    ) -> (Vec<String>, Vec<String>) {
        git::clear_locks(
            "gitfs",
            self.inner.remotes.iter(),
            &self.inner.machine_id,
            remote,
            lock_types,
        )
    }
}

impl Inner {
    fn state(&self) -> Arc<State> {
        self.state.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn lock_hashes(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.hashes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `GitProvider.get_tree(env)` of remote `i` in `st`.
    fn tree(&self, st: &State, i: usize, env: &str, budget: &Budget) -> Option<Arc<Tree>> {
        let r = &self.remotes[i];
        if !r.exposed(env) {
            return None;
        }
        let wanted = r.ref_for(env)?;
        let rs = st.remotes.get(i)?;
        let by_types = |name: &str| -> Option<Arc<Tree>> {
            for t in &r.ref_types {
                let commit = match t.as_str() {
                    "branch" => rs.refs.branches.get(name).cloned(),
                    "tag" => rs.refs.tags.get(name).cloned(),
                    _ if is_hex(name) => return self.sha_tree(st, i, name, budget),
                    _ => None,
                };
                if let Some(tree) = commit.and_then(|c| rs.trees.get(&c).cloned()) {
                    return Some(tree);
                }
            }
            None
        };
        by_types(&wanted).or_else(|| {
            (!r.fallback.is_empty())
                .then(|| by_types(&r.fallback))
                .flatten()
        })
    }

    /// The tree of a commit named by a hex prefix (looked up once per state).
    fn sha_tree(&self, st: &State, i: usize, sha: &str, budget: &Budget) -> Option<Arc<Tree>> {
        let key = (i, sha.to_owned());
        if let Some(t) = st.shas.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return t.clone();
        }
        if budget.decline() {
            return None;
        }
        let r = &self.remotes[i];
        let tree = git::resolve_commit(&r.repo_dir, sha).and_then(|c| {
            st.remotes[i]
                .trees
                .get(&c)
                .cloned()
                .or_else(|| Tree::load(&r.repo_dir, &c).ok().map(Arc::new))
        });
        let mut shas = st.shas.lock().unwrap_or_else(|e| e.into_inner());
        if shas.len() >= MAX_LISTS {
            shas.clear();
        }
        shas.insert(key, tree.clone());
        tree
    }

    /// Whether remote `i` takes part for `env` (Salt's check before listing or finding).
    fn serves(&self, st: &State, i: usize, env: &str) -> bool {
        is_hex(env) || st.envs.contains(env) || !self.remotes[i].fallback.is_empty()
    }

    /// `GitFS._file_lists` for `env`, built once per state.
    fn lists(&self, env: &str, budget: &Budget) -> Option<Arc<Lists>> {
        let st = self.state();
        if let Some(l) = st.lists.lock().unwrap_or_else(|e| e.into_inner()).get(env) {
            return Some(l.clone());
        }
        if budget.decline() {
            return None;
        }
        let mut out = Lists::default();
        for i in 0..self.remotes.len() {
            if !self.serves(&st, i, env) {
                continue;
            }
            if let Some(tree) = self.tree(&st, i, env, budget) {
                let r = &self.remotes[i];
                tree.lists(&r.root_for(env), &r.mountpoint_for(env), &mut out);
            }
        }
        let out = Arc::new(out);
        let mut map = st.lists.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_LISTS {
            map.clear();
        }
        map.insert(env.to_owned(), out.clone());
        Some(out)
    }

    fn find(&self, path: &str, env: &str, budget: &Budget) -> Option<Found> {
        let st = self.state();
        for (i, r) in self.remotes.iter().enumerate() {
            let mp = r.mountpoint_for(env);
            let rest = if mp.is_empty() {
                path
            } else {
                match path.strip_prefix(&mp).and_then(|p| p.strip_prefix('/')) {
                    Some(rest) => rest,
                    None => continue,
                }
            };
            if !self.serves(&st, i, env) {
                continue;
            }
            let rest = rest.trim_start_matches('/');
            let root = r.root_for(env);
            let repo_path = if root.is_empty() {
                rest.to_owned()
            } else {
                format!("{root}/{rest}")
            };
            let Some(tree) = self.tree(&st, i, env, budget) else {
                continue;
            };
            if let Some(blob) = tree.find(&repo_path) {
                return Some(Found {
                    remote: i,
                    blob: blob.clone(),
                    rel: path.to_owned(),
                    dest: self.cache_root.join("refs").join(env).join(path),
                });
            }
        }
        None
    }

    /// A blob's contents: from memory, else read from remote `i`'s repository (not under
    /// the socket-thread guard).
    fn blob(&self, i: usize, oid: &str, budget: &Budget) -> Option<Arc<[u8]>> {
        if let Some(b) = self
            .blobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map
            .get(oid)
        {
            return Some(b.clone());
        }
        if budget.decline() {
            return None;
        }
        let data: Arc<[u8]> = match libgit::read_blob(&self.remotes.get(i)?.repo_dir, oid) {
            Ok(d) => d.into(),
            Err(e) => {
                tracing::error!("gitfs: cannot read blob {oid}: {e}");
                return None;
            }
        };
        let mut cache = self.blobs.lock().unwrap_or_else(|e| e.into_inner());
        if cache.bytes + data.len() > MAX_BLOB_BYTES {
            *cache = BlobCache::default();
        }
        cache.bytes += data.len();
        if let Some(old) = cache.map.insert(oid.to_owned(), data.clone()) {
            cache.bytes -= old.len();
        }
        Some(data)
    }
}
