//! salt-fileserver: the master's file server (`roots`, and `gitfs` in [`gitfs`]; several
//! backends are combined in `fileserver_backend` order as Salt's `Fileserver` does, see
//! `backends.rs`) and the options it hands to minions.
//!
//! A Python minion's fileclient and HighState ask the master for files and options with
//! these AES commands (Salt's `salt/fileserver/__init__.py`, `salt/fileserver/roots.py`,
//! `AESFuncs` in `salt/master.py`); [`FileServer::handle`] answers each with Salt's reply
//! shapes:
//!
//! | command | reply |
//! |---|---|
//! | `_file_envs` | list of environments |
//! | `_file_list`, `_file_list_emptydirs`, `_dir_list` | sorted list, filtered by `prefix` |
//! | `_symlink_list` | `{path: link text}` |
//! | `_file_find` | `{path, rel, stat, back}` or `{path: "", rel: ""}` |
//! | `_file_hash` | `{hash_type, hsum}` or `""` |
//! | `_file_hash_and_stat` | `[{hash_type, hsum}, stat]` or `["", None]` |
//! | `_serve_file` | `{data, dest[, gzip]}`: `file_buffer_size` bytes from `loc` |
//! | `_master_opts` | the options HighState reads |
//! | `_master_tops` | `master_tops: {ext_nodes: ...}`'s `{env: [classes]}`, else `{}` |
//! | `_file_recv` | `True`/`False` (`cp.push`, with `file_recv: True`) |
//!
//! Listings come from an in-memory [`index::EnvIndex`] per environment, dropped when a
//! watched root changes; hashes are computed once per file version (inode, size, mtime);
//! `_serve_file` reads with `pread` from a cached open handle, or for a small file (up to
//! [`inline::SMALL`]) from its contents kept in memory per version. Hostile paths (absolute,
//! `..`, NUL, over-long, symlinks leaving the root without `fileserver_followsymlinks`) get
//! the "not found" shape and a log line; nothing outside `file_roots` is read.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod backends;
pub mod gitfs;
pub mod index;
pub mod inline;
mod opts;
pub mod paths;
mod recv;
mod serve;
mod tops;
mod watch;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use regex::Regex;
use salt_config::FileServerConfig;
use salt_keystore::GlobList;
use salt_proto::Value;
use salt_proto::msg::{FileLoad, ListKind};

use crate::index::{EnvIndex, WalkOpts};
use crate::inline::Budget;

/// How long a listing of an unwatched environment is reused (Salt's
/// `fileserver_list_cache_time` default).
pub const LIST_CACHE_TIME: Duration = Duration::from_secs(20);

/// Most environments whose index is kept (`__env__` makes the set open-ended).
const MAX_INDEXES: usize = 256;

/// The AES commands served here (read by [`salt_proto::msg::FileLoad`]).
pub use salt_proto::msg::FILE_COMMANDS as COMMANDS;

/// `file_ignore_regex` and `file_ignore_glob`, compiled.
#[derive(Debug, Default)]
pub struct Ignore {
    regex: Vec<Regex>,
    globs: Vec<GlobList>,
}

impl Ignore {
    /// Compiles the patterns; a bad one is logged and skipped, as Salt does.
    pub fn new(regex: &[String], globs: &[String]) -> Self {
        let regex = regex
            .iter()
            .filter_map(|r| match Regex::new(r) {
                Ok(re) => Some(re),
                Err(e) => {
                    tracing::warn!("Unable to parse file_ignore_regex. Skipping: {r} ({e})");
                    None
                }
            })
            .collect();
        let globs = globs
            .iter()
            .filter_map(|g| GlobList::single(g).ok())
            .collect();
        Self { regex, globs }
    }

    /// `salt.fileserver.is_file_ignored`.
    pub fn matches(&self, name: &str) -> bool {
        self.regex.iter().any(|r| r.is_match(name)) || self.globs.iter().any(|g| g.is_match(name))
    }
}

/// The `roots` file server.
pub struct FileServer {
    cfg: FileServerConfig,
    hash_type: salt_pki::HashType,
    cachedir: PathBuf,
    ignore: Ignore,
    indexes: RwLock<HashMap<String, Arc<EnvIndex>>>,
    /// Set by the watcher when any watched root changes.
    dirty: Arc<AtomicBool>,
    watch: watch::Watch,
    hashes: Mutex<HashMap<PathBuf, serve::CachedHash>>,
    handles: Mutex<HashMap<PathBuf, serve::Handle>>,
    small: Mutex<serve::SmallFiles>,
    log_last: Mutex<HashMap<&'static str, Instant>>,
    /// The backends, in `fileserver_backend` order.
    order: Vec<backends::Backend>,
    /// The gitfs backend, when configured.
    gitfs: Option<gitfs::GitFs>,
}

impl std::fmt::Debug for FileServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileServer")
            .field("file_roots", &self.cfg.file_roots)
            .finish_non_exhaustive()
    }
}

impl FileServer {
    /// A file server for `cfg`; `hash_type` is the master's, `cachedir` receives `cp.push`
    /// files. Starts watching the roots that exist (changes drop the affected listings).
    pub fn new(cfg: FileServerConfig, hash_type: salt_config::HashType, cachedir: PathBuf) -> Self {
        let hash_type = hash_type.as_str().parse().unwrap_or_default();
        let ignore = Ignore::new(&cfg.file_ignore_regex, &cfg.file_ignore_glob);
        let dirty = Arc::new(AtomicBool::new(false));
        let order: Vec<backends::Backend> = cfg
            .fileserver_backend
            .iter()
            .filter_map(|b| match b.as_str() {
                "roots" => Some(backends::Backend::Roots),
                "gitfs" => Some(backends::Backend::Gitfs),
                _ => None,
            })
            .collect();
        let roots_on = order.contains(&backends::Backend::Roots);
        let watch = if roots_on {
            watch::Watch::start(&cfg.file_roots, dirty.clone())
        } else {
            watch::Watch::start(&Default::default(), dirty.clone())
        };
        let gitfs = order
            .contains(&backends::Backend::Gitfs)
            .then(|| gitfs::GitFs::start(&cfg.gitfs, cachedir.join("gitfs"), hash_type));
        Self {
            cfg,
            hash_type,
            cachedir,
            ignore,
            indexes: RwLock::new(HashMap::new()),
            dirty,
            watch,
            hashes: Mutex::new(HashMap::new()),
            handles: Mutex::new(HashMap::new()),
            small: Mutex::default(),
            log_last: Mutex::new(HashMap::new()),
            order,
            gitfs,
        }
    }

    /// Whether `cmd` is one of [`COMMANDS`].
    pub fn serves(cmd: &str) -> bool {
        COMMANDS.contains(&cmd)
    }

    /// Answers one AES command from minion `id`; `None` if `cmd` is not a file-server
    /// command. Never panics on peer input.
    pub fn handle(&self, cmd: &str, load: &Value, id: &str) -> Option<Value> {
        Some(self.answer(FileLoad::read(cmd, load)?, id, &Budget::unlimited()))
    }

    /// Answers one typed file-server request from minion `id` within `budget`. Never panics
    /// on peer input.
    pub fn answer(&self, req: FileLoad<'_>, id: &str, budget: &Budget) -> Value {
        if self.order != [backends::Backend::Roots] {
            return self.answer_backends(req, id, budget);
        }
        match req {
            FileLoad::Envs => Value::Array(self.envs().into_iter().map(Value::from).collect()),
            FileLoad::List {
                kind,
                saltenv,
                prefix,
            } => self.list(saltenv.as_deref(), prefix, kind, budget),
            FileLoad::Symlinks { saltenv, prefix } => {
                self.symlinks(saltenv.as_deref(), prefix, budget)
            }
            FileLoad::Find(f) => self.file_find(&f, budget),
            FileLoad::Hash(f) => self.file_hash(&f, budget),
            FileLoad::HashAndStat(f) => self.file_hash_and_stat(&f, budget),
            FileLoad::Serve(s) => self.serve_file(&s, budget),
            FileLoad::MasterOpts { env_only } => {
                opts::master_opts(&self.cfg, &self.envs(), env_only)
            }
            FileLoad::MasterTops => self.master_tops(id),
            FileLoad::Recv(r) => Value::Boolean(self.file_recv(&r, id)),
        }
    }

    /// `_master_tops` for minion `id`: `master_tops: {ext_nodes: ...}`'s answer, else `{}`.
    pub fn master_tops(&self, id: &str) -> Value {
        match &self.cfg.master_tops {
            Some(cmd) => tops::ext_nodes(cmd, id),
            None => Value::Map(vec![]),
        }
    }

    /// The gitfs backend, when `fileserver_backend` lists it.
    pub fn gitfs(&self) -> Option<&gitfs::GitFs> {
        self.gitfs.as_ref()
    }

    /// Whether `fileserver_backend` lists `roots`.
    pub fn roots_enabled(&self) -> bool {
        self.order.contains(&backends::Backend::Roots)
    }

    /// Drops every listing and cached hash of `roots` (Salt's `fileserver.update`).
    pub fn update(&self) {
        self.indexes
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.hashes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.handles
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        *self.small.lock().unwrap_or_else(|e| e.into_inner()) = Default::default();
    }

    /// The environments of every backend, sorted (`roots`' `__env__` included when
    /// configured).
    pub fn envs(&self) -> Vec<String> {
        if self.order == [backends::Backend::Roots] {
            return self.roots_envs();
        }
        self.envs_all()
    }

    /// The environments of `file_roots`, sorted.
    fn roots_envs(&self) -> Vec<String> {
        self.cfg.file_roots.keys().cloned().collect()
    }

    /// The roots of `saltenv`: its own, or `__env__`'s with the name substituted.
    fn roots_for(&self, saltenv: &str) -> Option<Vec<PathBuf>> {
        if let Some(roots) = self.cfg.file_roots.get(saltenv) {
            return Some(roots.clone());
        }
        let generic = self.cfg.file_roots.get("__env__")?;
        if !paths::env_name_ok(saltenv) {
            self.log_refusal("env", &format!("environment name {saltenv:?} refused"));
            return None;
        }
        Some(
            generic
                .iter()
                .map(|r| PathBuf::from(r.to_string_lossy().replace("__env__", saltenv)))
                .collect(),
        )
    }

    /// The index of `saltenv`, built when missing or stale.
    fn index(&self, saltenv: &str, budget: &Budget) -> Option<(Arc<EnvIndex>, Vec<PathBuf>)> {
        let roots = self.roots_for(saltenv)?;
        // Rebuilding is a tree walk: never on a socket thread (see `inline`).
        if self.dirty.load(Ordering::Acquire) && budget.decline() {
            return None;
        }
        if self.dirty.swap(false, Ordering::AcqRel) {
            self.update();
        }
        let fresh =
            |i: &EnvIndex| i.watched || i.built.is_some_and(|b| b.elapsed() < LIST_CACHE_TIME);
        if let Some(i) = self
            .indexes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(saltenv)
            .filter(|i| fresh(i))
        {
            return Some((i.clone(), roots));
        }
        if budget.decline() {
            return None;
        }
        let mut built = EnvIndex::build(
            &roots,
            &WalkOpts {
                follow: self.cfg.fileserver_followsymlinks,
                ignore_links: self.cfg.fileserver_ignoresymlinks,
                ignore: &self.ignore,
            },
        );
        built.watched = self.cfg.file_roots.contains_key(saltenv) && self.watch.covers(saltenv);
        let built = Arc::new(built);
        let mut map = self.indexes.write().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_INDEXES {
            map.clear();
        }
        map.insert(saltenv.to_owned(), built.clone());
        Some((built, roots))
    }

    /// `_file_list` and friends: `[]` without `saltenv` or for an unknown environment.
    fn list(&self, saltenv: Option<&str>, prefix: &str, kind: ListKind, budget: &Budget) -> Value {
        let Some(saltenv) = saltenv else {
            return Value::Array(vec![]);
        };
        let Some((index, _)) = self.index(saltenv, budget) else {
            return Value::Array(vec![]);
        };
        let listed = match kind {
            ListKind::Files => &index.files,
            ListKind::EmptyDirs => &index.empty_dirs,
            ListKind::Dirs => &index.dirs,
        };
        Value::Array(
            listed
                .iter()
                .filter(|p| p.starts_with(prefix))
                .map(|p| Value::from(p.as_str()))
                .collect(),
        )
    }

    fn symlinks(&self, saltenv: Option<&str>, prefix: &str, budget: &Budget) -> Value {
        let Some(saltenv) = saltenv else {
            return Value::Map(vec![]);
        };
        let Some((index, _)) = self.index(saltenv, budget) else {
            return Value::Map(vec![]);
        };
        Value::Map(
            index
                .links
                .iter()
                .filter(|(k, _)| k.starts_with(prefix))
                .map(|(k, v)| (Value::from(k.as_str()), Value::from(v.as_str())))
                .collect(),
        )
    }

    /// Logs a refused request at most once a minute per kind.
    fn log_refusal(&self, kind: &'static str, msg: &str) {
        let now = Instant::now();
        let mut last = self.log_last.lock().unwrap_or_else(|e| e.into_inner());
        if last
            .get(kind)
            .is_none_or(|t| now.duration_since(*t) >= Duration::from_secs(60))
        {
            last.insert(kind, now);
            tracing::warn!("file server: {msg}");
        }
    }
}

/// `{"path": "", "rel": ""}`, Salt's "not found".
fn not_found() -> Value {
    Value::Map(vec![
        (Value::from("path"), Value::from("")),
        (Value::from("rel"), Value::from("")),
    ])
}
