//! The key store proper: [`KeyStore`] over a Salt `pki_dir`.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

mod bulk;
mod deferred;
pub use deferred::DeferredDone;
mod mmap_ops;
mod moves;
mod put;
mod query;

use crate::error::{KeyStoreError, Result};
use crate::fsutil;
use crate::id::validate_id;
use crate::mmap::{Geometry, MmapKeys};
use crate::pem::{KeyValidator, PemArmorValidator};

/// Mode of key files we write. Salt writes minion keys with the master's umask, which is
/// 022 for a normal service, giving 0644; we set 0644 explicitly so the result does not
/// depend on the caller's umask. Public keys are not secret; the pki_dir itself is 0700.
pub const KEY_FILE_MODE: u32 = 0o644;

/// Mode Salt gives `pki_dir`; 0750 is tolerated.
pub const PKI_DIR_MODE: u32 = 0o700;

/// Mode of the key directories we create (Salt creates them with umask 022).
const KEY_DIR_MODE: u32 = 0o755;

/// Temp files older than this are left-overs of a crash and removed at open.
const STALE_TMP_AGE: Duration = Duration::from_secs(3600);

/// Name of the directory of one-shot autosign stubs.
pub const AUTOSIGN_DIR: &str = "minions_autosign";

/// The state of a minion key: which directory of `pki_dir` holds it.
///
/// Ordered as `salt-key -L` prints the headings' directories
/// (`minions`, `minions_pre`, `minions_rejected`, `minions_denied`).
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub enum KeyState {
    /// `minions/`: the minion may authenticate.
    Accepted,
    /// `minions_pre/`: waiting for an operator ("Unaccepted Keys").
    Pending,
    /// `minions_rejected/`: refused; the master answers auth with `False`.
    Rejected,
    /// `minions_denied/`: a *different* key was presented for an id that already had one.
    /// It records the impostor key and can coexist with the id's accepted or pending key.
    Denied,
}

impl KeyState {
    /// All states, in Salt's listing order.
    pub const ALL: [Self; 4] = [Self::Accepted, Self::Pending, Self::Rejected, Self::Denied];

    /// The three mutually exclusive states (a key is in at most one of them).
    pub const EXCLUSIVE: [Self; 3] = [Self::Accepted, Self::Pending, Self::Rejected];

    /// Directory name under `pki_dir` (`minions`, `minions_pre`, ...).
    pub fn dir_name(self) -> &'static str {
        match self {
            Self::Accepted => "minions",
            Self::Pending => "minions_pre",
            Self::Rejected => "minions_rejected",
            Self::Denied => "minions_denied",
        }
    }

    /// The state whose directory is `name`.
    pub fn from_dir_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.dir_name() == name)
    }

    /// Parse a `salt-key -l STATUS` word the way Salt does (by prefix): `acc*`,
    /// `pre*`/`un*`, `rej*`, `den*`. (`all` is not a state; the caller handles it.)
    pub fn parse_status(status: &str) -> Option<Self> {
        if status.starts_with("acc") {
            Some(Self::Accepted)
        } else if status.starts_with("pre") || status.starts_with("un") {
            Some(Self::Pending)
        } else if status.starts_with("rej") {
            Some(Self::Rejected)
        } else if status.starts_with("den") {
            Some(Self::Denied)
        } else {
            None
        }
    }

    pub(crate) fn idx(self) -> usize {
        match self {
            Self::Accepted => 0,
            Self::Pending => 1,
            Self::Rejected => 2,
            Self::Denied => 3,
        }
    }
}

impl fmt::Display for KeyState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Accepted => "accepted",
            Self::Pending => "pending",
            Self::Rejected => "rejected",
            Self::Denied => "denied",
        })
    }
}

/// Extra source states for [`KeyStore::accept`] (`salt-key --include-rejected/--include-denied`).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct AcceptFrom {
    /// Also accept keys found in `minions_rejected/`.
    pub include_rejected: bool,
    /// Also accept keys found in `minions_denied/` (replacing an accepted key of that id).
    pub include_denied: bool,
}

/// Extra source states for [`KeyStore::reject`] (`salt-key --include-accepted/--include-denied`).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct RejectFrom {
    /// Also reject keys found in `minions/`.
    pub include_accepted: bool,
    /// Also reject keys found in `minions_denied/`.
    pub include_denied: bool,
}

/// What a bulk operation did.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Report {
    /// `(id, state it left)` for every file moved or removed, in processing order. An id
    /// appears once per source file (accepting with `include_rejected` can move two).
    pub changed: Vec<(String, KeyState)>,
    /// Per-key failures; those keys were left as they were. Also a failed directory fsync.
    pub errors: Vec<KeyStoreError>,
}

impl Report {
    /// Whether a key left `state`. For example, a delete or reject that touched
    /// [`KeyState::Accepted`] should trigger an AES rotation (`write_dropfile`) — though
    /// `salt-key` writes the dropfile on every delete/reject when `rotate_aes_key` is set.
    pub fn touched(&self, state: KeyState) -> bool {
        self.changed.iter().any(|(_, s)| *s == state)
    }

    /// The ids changed, deduplicated, in processing order.
    pub fn ids(&self) -> Vec<&str> {
        let mut seen = BTreeSet::new();
        self.changed
            .iter()
            .map(|(id, _)| id.as_str())
            .filter(|id| seen.insert(*id))
            .collect()
    }
}

/// Options for [`KeyStore`] opening.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    fix_permissions: bool,
    validator: Arc<dyn KeyValidator>,
    durable: bool,
    mmap_key: Option<Geometry>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self {
            fix_permissions: true,
            validator: Arc::new(PemArmorValidator),
            durable: true,
            mmap_key: None,
        }
    }
}

impl OpenOptions {
    /// Defaults: fix `pki_dir` permissions like Salt, [`PemArmorValidator`].
    pub fn new() -> Self {
        Self::default()
    }

    /// When true (default, Salt's behaviour) a `pki_dir` whose mode is neither 0700 nor
    /// 0750 is chmod-ed to 0700; an error is returned only if that fails and the directory
    /// is accessible by others. When false such a directory is refused outright.
    pub fn fix_permissions(mut self, fix: bool) -> Self {
        self.fix_permissions = fix;
        self
    }

    /// When true (default), key files written by `put_*` are fsync-ed, and so are the
    /// directories they land in: a change survives power loss. When false, writes stay
    /// atomic (temp file + rename: a killed process never leaves a partial or doubled key)
    /// but are not flushed — Salt's own behaviour, and what the master uses for the keys
    /// minions present at sign-in, which the next sign-in writes again if a power cut
    /// loses them (see docs/decisions.md). Bulk moves (`salt-key`) always end with one
    /// directory fsync per batch.
    pub fn durable(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }

    /// Keep the minion keys in Salt 3008's `mmap_key` index files (`keys.cache_driver:
    /// mmap_key`, [`crate::MmapGeometry`]) instead of one file per key: state changes are
    /// index updates, listing reads one index. `None` (default): Salt's `localfs_key`
    /// layout.
    pub fn mmap_key(mut self, geometry: Option<Geometry>) -> Self {
        self.mmap_key = geometry;
        self
    }

    /// Use `validator` to vet keys before writing or accepting them.
    pub fn validator(mut self, validator: impl KeyValidator + 'static) -> Self {
        self.validator = Arc::new(validator);
        self
    }

    /// Open (creating what is missing) the key store at `pki_dir`.
    pub fn open(self, pki_dir: impl AsRef<Path>) -> Result<KeyStore> {
        KeyStore::open_with(pki_dir.as_ref(), self)
    }
}

/// The minion keys of a master: Salt's `pki_dir` layout, shared by the master and
/// `salt-key`.
///
/// Methods take `&self`; a `KeyStore` is `Send + Sync` and meant to be shared (`Arc`).
/// Mutations within one process are serialised; between processes, every change is a
/// single atomic rename or unlink, so a master and `salt-key` working on the same directory
/// never see a torn state.
///
/// # Freshness
///
/// [`state`](Self::state), [`states_of`](Self::states_of) and
/// [`read_key`](Self::read_key) always ask the file system. Listing and matching
/// ([`list`](Self::list), [`list_all`](Self::list_all), [`matching`](Self::matching)) use
/// the in-memory index: it reflects the directory as read at open or by the last
/// [`refresh`](Self::refresh), plus every change made through this `KeyStore`. The
/// `*_matching` and `*_all` mutations refresh the directories they read first.
pub struct KeyStore {
    pki_dir: PathBuf,
    validator: Arc<dyn KeyValidator>,
    durable: bool,
    /// `keys.cache_driver: mmap_key`: the keys live in Salt 3008's index files.
    pub(crate) mmap: Option<MmapKeys>,
    index: RwLock<Index>,
    /// Serialises mutations (and refreshes) within the process so the index follows the
    /// file system exactly.
    ops: Mutex<()>,
}

impl fmt::Debug for KeyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyStore")
            .field("pki_dir", &self.pki_dir)
            .field("mmap_key", &self.mmap.is_some())
            .field("validator", &self.validator)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Index {
    sets: [BTreeSet<String>; 4],
    /// Keys listed here whose files are not written yet (a group member's first copy of
    /// the database, written in the background: [`KeyStore::put_new_many_deferred`]).
    unwritten: HashMap<(KeyState, String), String>,
}

impl Index {
    /// List `id` in `state`. An id starting with `.` is never listed: its key file is a
    /// dotfile, which every listing skips (as Salt's), so the index agrees with a reopen.
    fn insert(&mut self, state: KeyState, id: &str) {
        if !id.starts_with('.') {
            self.sets[state.idx()].insert(id.to_owned());
        }
    }

    /// Replace the listing of `state` with a fresh read of its directory, keeping the
    /// keys whose files are still to be written.
    fn reset(&mut self, state: KeyState, mut set: BTreeSet<String>) {
        set.extend(
            self.unwritten
                .keys()
                .filter(|(s, _)| *s == state)
                .map(|(_, id)| id.clone()),
        );
        self.sets[state.idx()] = set;
    }
}

impl KeyStore {
    /// Open the key store at `pki_dir` with default [`OpenOptions`]: create missing
    /// directories, check (and fix, like Salt) the mode of `pki_dir`, read every key
    /// directory once, remove stale temp files left by a crash.
    pub fn open(pki_dir: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(pki_dir.as_ref(), OpenOptions::default())
    }

    fn open_with(pki_dir: &Path, opts: OpenOptions) -> Result<Self> {
        prepare_pki_dir(pki_dir, opts.fix_permissions)?;
        for name in KeyState::ALL
            .iter()
            .map(|s| s.dir_name())
            .chain([AUTOSIGN_DIR])
        {
            ensure_dir(&pki_dir.join(name))?;
        }
        let mmap = opts
            .mmap_key
            .map(|geo| MmapKeys::new(pki_dir, geo))
            .transpose()?;
        let store = Self {
            pki_dir: pki_dir.to_owned(),
            validator: opts.validator,
            durable: opts.durable,
            mmap,
            index: RwLock::default(),
            ops: Mutex::new(()),
        };
        if store.mmap.is_some() {
            {
                let _ops = store.lock_ops();
                store.refresh_states(&KeyState::ALL)?;
            }
            fsutil::sweep_tmp(&pki_dir.join(AUTOSIGN_DIR), STALE_TMP_AGE)?;
            return Ok(store);
        }
        // One directory read per key directory fills the index and finds the temp files
        // left by a crash (ours are dotfiles, never in the index), swept when stale.
        {
            let _ops = store.lock_ops();
            for state in KeyState::ALL {
                let dir = store.state_dir(state);
                let (set, tmps) = read_state_dir(&dir)?;
                fsutil::sweep_tmp_names(&dir, &tmps, STALE_TMP_AGE);
                store.write_index().reset(state, set);
            }
        }
        fsutil::sweep_tmp(&pki_dir.join(AUTOSIGN_DIR), STALE_TMP_AGE)?;
        Ok(store)
    }

    /// The `pki_dir` this store works on.
    pub fn pki_dir(&self) -> &Path {
        &self.pki_dir
    }

    /// Directory of `state`.
    pub fn state_dir(&self, state: KeyState) -> PathBuf {
        self.pki_dir.join(state.dir_name())
    }

    /// The paths whose modification time changes whenever another process (`salt-key`)
    /// changes a key: the four state directories, or with `mmap_key` the index and heap
    /// files of its two banks (a listing is stale when one of their times moved).
    pub fn watch_paths(&self) -> Vec<PathBuf> {
        match &self.mmap {
            Some(m) => m.watch_paths(),
            None => KeyState::ALL.iter().map(|s| self.state_dir(*s)).collect(),
        }
    }

    /// Path of the key file of `id` in `state` (the id is validated first).
    pub fn key_path(&self, state: KeyState, id: &str) -> Result<PathBuf> {
        validate_id(id)?;
        Ok(self.path(state, id))
    }

    fn path(&self, state: KeyState, id: &str) -> PathBuf {
        self.pki_dir.join(state.dir_name()).join(id)
    }

    // === internals ===
    fn lock_ops(&self) -> MutexGuard<'_, ()> {
        self.ops.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn read_index(&self) -> RwLockReadGuard<'_, Index> {
        self.index.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write_index(&self) -> RwLockWriteGuard<'_, Index> {
        self.index.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// Salt's `sorted_ignorecase`: by lower-cased text; ties keep byte order (the input comes
/// from a byte-ordered set and the sort is stable).
fn salt_sort(v: &mut [String]) {
    if v.iter().any(|s| s.chars().any(char::is_uppercase)) {
        v.sort_by_cached_key(|s| s.to_lowercase());
    } else {
        v.sort_unstable();
    }
}

/// Key names in `dir`, and the names of our temp files there: dotfiles and non-UTF-8
/// names are not keys (Salt ignores dotfiles; a non-UTF-8 name cannot be a minion id on
/// the wire).
fn read_state_dir(dir: &Path) -> Result<(BTreeSet<String>, Vec<OsString>)> {
    let rd = fs::read_dir(dir).map_err(|e| KeyStoreError::io("read directory", dir, e))?;
    let mut set = BTreeSet::new();
    let mut tmps = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| KeyStoreError::io("read directory", dir, e))?;
        match entry.file_name().into_string() {
            Ok(name) if !name.starts_with('.') => {
                set.insert(name);
            }
            Ok(name) if name.starts_with(fsutil::TMP_PREFIX) => tmps.push(name.into()),
            _ => {}
        }
    }
    Ok((set, tmps))
}

fn prepare_pki_dir(path: &Path, fix: bool) -> Result<()> {
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                fs::create_dir_all(parent)
                    .map_err(|e| KeyStoreError::io("create directory", parent, e))?;
            }
            fs::DirBuilder::new()
                .mode(PKI_DIR_MODE)
                .create(path)
                .or_else(|e| {
                    if e.kind() == io::ErrorKind::AlreadyExists {
                        Ok(())
                    } else {
                        Err(e)
                    }
                })
                .map_err(|e| KeyStoreError::io("create directory", path, e))?;
            fs::metadata(path).map_err(|e| KeyStoreError::io("stat", path, e))?
        }
        Err(e) => return Err(KeyStoreError::io("stat", path, e)),
    };
    if !meta.is_dir() {
        return Err(KeyStoreError::NotADirectory {
            path: path.to_owned(),
        });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode != 0o700 && mode != 0o750 {
        let insecure = |tried| KeyStoreError::InsecurePkiDir {
            path: path.to_owned(),
            mode,
            tried,
        };
        if !fix {
            return Err(insecure(false));
        }
        if fs::set_permissions(path, fs::Permissions::from_mode(PKI_DIR_MODE)).is_err()
            && mode & 0o007 != 0
        {
            return Err(insecure(true));
        }
    }
    // Prove we can list it, so a permission problem is reported here, naming the path.
    fs::read_dir(path).map_err(|e| KeyStoreError::io("read directory", path, e))?;
    Ok(())
}

fn ensure_dir(path: &Path) -> Result<()> {
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(KeyStoreError::NotADirectory {
            path: path.to_owned(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => fs::DirBuilder::new()
            .mode(KEY_DIR_MODE)
            .create(path)
            .or_else(|e| {
                if e.kind() == io::ErrorKind::AlreadyExists {
                    Ok(())
                } else {
                    Err(e)
                }
            })
            .map_err(|e| KeyStoreError::io("create directory", path, e)),
        Err(e) => Err(KeyStoreError::io("stat", path, e)),
    }
}
