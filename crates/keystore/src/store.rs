//! The key store proper: [`KeyStore`] over a Salt `pki_dir`.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, SystemTime};

mod bulk;

use crate::error::{KeyStoreError, Result};
use crate::fsutil::{self, crash_point};
use crate::glob::GlobList;
use crate::id::validate_id;
use crate::pem::{KeyValidator, PemArmorValidator};
use salt_pki::{self as pem, HashType as FingerprintHash};

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

    fn idx(self) -> usize {
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
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self {
            fix_permissions: true,
            validator: Arc::new(PemArmorValidator),
            durable: true,
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
    index: RwLock<Index>,
    /// Serialises mutations (and refreshes) within the process so the index follows the
    /// file system exactly.
    ops: Mutex<()>,
}

impl fmt::Debug for KeyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyStore")
            .field("pki_dir", &self.pki_dir)
            .field("validator", &self.validator)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Index {
    sets: [BTreeSet<String>; 4],
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
        let store = Self {
            pki_dir: pki_dir.to_owned(),
            validator: opts.validator,
            durable: opts.durable,
            index: RwLock::default(),
            ops: Mutex::new(()),
        };
        // One directory read per key directory fills the index and finds the temp files
        // left by a crash (ours are dotfiles, never in the index), swept when stale.
        {
            let _ops = store.lock_ops();
            for state in KeyState::ALL {
                let dir = store.state_dir(state);
                let (set, tmps) = read_state_dir(&dir)?;
                fsutil::sweep_tmp_names(&dir, &tmps, STALE_TMP_AGE);
                store.write_index().sets[state.idx()] = set;
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

    /// Path of the key file of `id` in `state` (the id is validated first).
    pub fn key_path(&self, state: KeyState, id: &str) -> Result<PathBuf> {
        validate_id(id)?;
        Ok(self.path(state, id))
    }

    fn path(&self, state: KeyState, id: &str) -> PathBuf {
        self.pki_dir.join(state.dir_name()).join(id)
    }

    // === queries ===

    /// Re-read every key directory (one `readdir` each) into the index.
    pub fn refresh(&self) -> Result<()> {
        let _ops = self.lock_ops();
        self.refresh_states(&KeyState::ALL)
    }

    /// Caller holds `ops`.
    fn refresh_states(&self, states: &[KeyState]) -> Result<()> {
        for &state in states {
            let (set, _) = read_state_dir(&self.state_dir(state))?;
            self.write_index().sets[state.idx()] = set;
        }
        Ok(())
    }

    /// The state the master acts on for `id`, asking the file system (a few `stat`s, never
    /// stale). Precedence follows Salt's auth decision order: rejected, then accepted, then
    /// pending; `Denied` only when the id has nothing but a denied key.
    pub fn state(&self, id: &str) -> Result<Option<KeyState>> {
        validate_id(id)?;
        for state in [
            KeyState::Rejected,
            KeyState::Accepted,
            KeyState::Pending,
            KeyState::Denied,
        ] {
            if self.exists(state, id)? {
                return Ok(Some(state));
            }
        }
        Ok(None)
    }

    /// Every state holding a key for `id` (in [`KeyState::ALL`] order), from the file
    /// system. `Denied` can coexist with `Accepted` or `Pending`, as in Salt.
    pub fn states_of(&self, id: &str) -> Result<Vec<KeyState>> {
        validate_id(id)?;
        let mut out = Vec::new();
        for state in KeyState::ALL {
            if self.exists(state, id)? {
                out.push(state);
            }
        }
        Ok(out)
    }

    fn exists(&self, state: KeyState, id: &str) -> Result<bool> {
        let path = self.path(state, id);
        match fs::symlink_metadata(&path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(KeyStoreError::io("stat", path, e)),
        }
    }

    /// Ids in `state`, from the index, in `salt-key`'s order (case-insensitive, ties by
    /// bytes).
    pub fn list(&self, state: KeyState) -> Vec<String> {
        let mut v: Vec<String> = self.read_index().sets[state.idx()]
            .iter()
            .cloned()
            .collect();
        salt_sort(&mut v);
        v
    }

    /// Every state with its ids (all four states present, possibly empty), from the index.
    pub fn list_all(&self) -> BTreeMap<KeyState, Vec<String>> {
        KeyState::ALL
            .into_iter()
            .map(|s| (s, self.list(s)))
            .collect()
    }

    /// Ids in `states` matching the GLOB list `globs` (`salt-key` syntax: comma-separated
    /// `fnmatch` patterns), from the index. Only states with a match appear, like Salt's
    /// `name_match`.
    pub fn matching(
        &self,
        globs: &str,
        states: &[KeyState],
    ) -> Result<BTreeMap<KeyState, Vec<String>>> {
        let glob = GlobList::new(globs)?;
        Ok(self.matching_glob(&glob, states))
    }

    /// [`matching`](Self::matching) with a precompiled glob list.
    pub fn matching_glob(
        &self,
        glob: &GlobList,
        states: &[KeyState],
    ) -> BTreeMap<KeyState, Vec<String>> {
        let index = self.read_index();
        let mut out = BTreeMap::new();
        for &state in states {
            let mut v: Vec<String> = index.sets[state.idx()]
                .iter()
                .filter(|id| glob.is_match(id))
                .cloned()
                .collect();
            if !v.is_empty() {
                salt_sort(&mut v);
                out.insert(state, v);
            }
        }
        out
    }

    /// The key text of `id` in `state`, as stored; `None` if there is none (including a
    /// key that vanished while being read). Errors name the file (unreadable, not UTF-8,
    /// oversized).
    pub fn read_key(&self, state: KeyState, id: &str) -> Result<Option<String>> {
        validate_id(id)?;
        fsutil::read_key_file(&self.path(state, id))
    }

    /// Whether the stored key of `id` in `state` equals `pem` the way Salt's master
    /// compares them (`clean_key` of both). `None` when there is no such key.
    pub fn key_matches(&self, state: KeyState, id: &str, pem: &str) -> Result<Option<bool>> {
        Ok(self
            .read_key(state, id)?
            .map(|stored| pem::clean_key(&stored) == pem::clean_key(pem)))
    }

    /// Salt's `pem_finger` of the key of `id` in `state` (`None` if absent).
    pub fn fingerprint(
        &self,
        state: KeyState,
        id: &str,
        hash: FingerprintHash,
    ) -> Result<Option<String>> {
        Ok(self
            .read_key(state, id)?
            .map(|k| pem::pem_finger(k.as_bytes(), hash)))
    }

    /// Fingerprints of every key in `states` (index order as [`list`](Self::list)); keys
    /// that vanish meanwhile are skipped. `salt-key -F` (minus the local keys).
    pub fn fingerprints(
        &self,
        states: &[KeyState],
        hash: FingerprintHash,
    ) -> Result<BTreeMap<KeyState, Vec<(String, String)>>> {
        let mut out = BTreeMap::new();
        for &state in states {
            let mut v = Vec::new();
            for id in self.list(state) {
                if let Some(f) = fsutil::read_key_file(&self.path(state, &id))?
                    .map(|k| pem::pem_finger(k.as_bytes(), hash))
                {
                    v.push((id, f));
                }
            }
            out.insert(state, v);
        }
        Ok(out)
    }

    /// Read the key file of each `(state, id)` of `keys` and map its bytes with `f`
    /// (`salt-key -F` hashing each key). Each file is opened by its name from its
    /// directory, opened once, into a buffer reused from key to key; with many keys the
    /// work is split over up to as many threads as there are CPUs (8 at most).
    ///
    /// One result per key, in input order: `Ok(None)` for a file that does not exist (or
    /// vanished meanwhile, moved by another process), an error naming the file when it
    /// cannot be read or is larger than 64 KiB. Invalid ids fail the whole call.
    pub fn read_keys<T, F>(&self, keys: &[(KeyState, &str)], f: F) -> Result<Vec<Result<Option<T>>>>
    where
        T: Send,
        F: Fn(&[u8]) -> T + Sync,
    {
        keys.iter().try_for_each(|(_, id)| validate_id(id))?;
        let mut dirs: [Option<(PathBuf, fs::File)>; 4] = Default::default();
        for &(state, _) in keys {
            let slot = &mut dirs[state.idx()];
            if slot.is_none() {
                let dir = self.state_dir(state);
                let fd = fsutil::open_dir(&dir)
                    .map_err(|e| KeyStoreError::io("open directory", &dir, e))?;
                *slot = Some((dir, fd));
            }
        }
        let (dirs, f) = (&dirs, &f);
        let run = move |part: &[(KeyState, &str)]| {
            let mut buf = vec![0; fsutil::KEY_BUF_LEN];
            part.iter()
                .map(|&(state, id)| {
                    let Some((dir, fd)) = &dirs[state.idx()] else {
                        return Ok(None);
                    };
                    Ok(fsutil::read_key_at(fd, dir, id, &mut buf)?.map(|len| f(&buf[..len])))
                })
                .collect::<Vec<_>>()
        };
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 8);
        if threads == 1 || keys.len() < 1024 {
            return Ok(run(keys));
        }
        let chunk = keys.len().div_ceil(threads);
        Ok(std::thread::scope(|s| {
            let handles: Vec<_> = keys
                .chunks(chunk)
                .map(|part| s.spawn(move || run(part)))
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        }))
    }

    /// Read the key file of each `(state, id)` of `keys` (as [`read_keys`](Self::read_keys))
    /// and hand its bytes to `check`: `salt-key -a` parsing every key before accepting any.
    /// Changes nothing. Returns the problems in input order, each with the index of its
    /// item in `keys`: a file that cannot be read or is too large, or whose bytes `check`
    /// refused ([`KeyStoreError::InvalidKey`] naming the file, with `check`'s reason). A
    /// file that does not exist is not a problem: a move skips it too.
    pub fn check_keys<F>(
        &self,
        keys: &[(KeyState, &str)],
        check: F,
    ) -> Result<Vec<(usize, KeyStoreError)>>
    where
        F: Fn(&[u8]) -> std::result::Result<(), String> + Sync,
    {
        Ok(self
            .read_keys(keys, check)?
            .into_iter()
            .enumerate()
            .filter_map(|(i, r)| match r {
                Ok(None | Some(Ok(()))) => None,
                Ok(Some(Err(reason))) => {
                    let (state, id) = keys[i];
                    Some((
                        i,
                        KeyStoreError::InvalidKey {
                            path: self.path(state, id),
                            reason,
                        },
                    ))
                }
                Err(e) => Some((i, e)),
            })
            .collect())
    }

    /// The master's own key files in `pki_dir` (`*.pem`, `*.pub`), `salt-key`'s
    /// "Local Keys", in Salt's order.
    pub fn local_keys(&self) -> Result<Vec<String>> {
        let rd = fs::read_dir(&self.pki_dir)
            .map_err(|e| KeyStoreError::io("read directory", &self.pki_dir, e))?;
        let mut v = Vec::new();
        for entry in rd {
            let entry = entry.map_err(|e| KeyStoreError::io("read directory", &self.pki_dir, e))?;
            if let Some(name) = entry.file_name().to_str()
                && (name.ends_with(".pem") || name.ends_with(".pub"))
            {
                v.push(name.to_owned());
            }
        }
        salt_sort(&mut v);
        Ok(v)
    }

    /// `pem_finger` of the local key file `name` (from [`local_keys`](Self::local_keys)).
    pub fn local_fingerprint(&self, name: &str, hash: FingerprintHash) -> Result<Option<String>> {
        validate_id(name)?;
        let path = self.pki_dir.join(name);
        match fs::read(&path) {
            Ok(data) => Ok(Some(pem::pem_finger(&data, hash))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(KeyStoreError::io("read", path, e)),
        }
    }

    // === transitions ===

    /// Accept `id`: move its pending key (and, per `from`, its rejected/denied key) to
    /// `minions/`, after checking each is a public key (as `salt-key -a`). Returns the
    /// states it left; empty when there was nothing to accept. A key that is not PEM is an
    /// error naming the file, and nothing moves.
    pub fn accept(&self, id: &str, from: AcceptFrom) -> Result<Vec<KeyState>> {
        single(self.accept_many(&[id], from)?)
    }

    /// [`accept`](Self::accept) for many ids in one pass (renames, then one fsync per
    /// directory). Invalid ids fail the whole call before anything changes.
    pub fn accept_many<S: AsRef<str>>(&self, ids: &[S], from: AcceptFrom) -> Result<Report> {
        let sources = accept_sources(from);
        self.move_many(ids, &sources, KeyState::Accepted, true)
    }

    /// [`accept_many`](Self::accept_many) for a caller that has just validated every key
    /// file itself (salt-key parses each as an RSA public key first, refusing the whole
    /// operation on a bad one): the moves skip the store's own armour check, which would
    /// read every file a second time (a third of the syscalls of a bulk accept). Crash
    /// safety and concurrency are unchanged: each key is still moved by one rename.
    pub fn accept_many_prevalidated<S: AsRef<str>>(
        &self,
        ids: &[S],
        from: AcceptFrom,
    ) -> Result<Report> {
        let sources = accept_sources(from);
        self.move_many(ids, &sources, KeyState::Accepted, false)
    }

    /// Accept the pending keys matching `globs` (and rejected/denied ones per `from`),
    /// after re-reading those directories: `salt-key -a GLOB`.
    pub fn accept_matching(&self, globs: &str, from: AcceptFrom) -> Result<Report> {
        let sources = accept_sources(from);
        let ids = self.fresh_matches(globs, &sources)?;
        self.move_many(&ids, &sources, KeyState::Accepted, true)
    }

    /// Accept every pending key (`salt-key -A`). Like Salt's `accept_all`, keys are moved
    /// without validation.
    pub fn accept_all(&self) -> Result<Report> {
        let ids = self.fresh_list(KeyState::Pending)?;
        self.move_many(&ids, &[KeyState::Pending], KeyState::Accepted, false)
    }

    /// Reject `id`: move its pending key (and, per `from`, accepted/denied keys) to
    /// `minions_rejected/`. Returns the states it left. The caller (`salt-key`) writes the
    /// AES dropfile afterwards when `rotate_aes_key` is on.
    pub fn reject(&self, id: &str, from: RejectFrom) -> Result<Vec<KeyState>> {
        single(self.reject_many(&[id], from)?)
    }

    /// [`reject`](Self::reject) for many ids in one pass.
    pub fn reject_many<S: AsRef<str>>(&self, ids: &[S], from: RejectFrom) -> Result<Report> {
        let sources = reject_sources(from);
        self.move_many(ids, &sources, KeyState::Rejected, false)
    }

    /// `salt-key -r GLOB`.
    pub fn reject_matching(&self, globs: &str, from: RejectFrom) -> Result<Report> {
        let sources = reject_sources(from);
        let ids = self.fresh_matches(globs, &sources)?;
        self.move_many(&ids, &sources, KeyState::Rejected, false)
    }

    /// Reject every pending key (`salt-key -R`).
    pub fn reject_all(&self) -> Result<Report> {
        let ids = self.fresh_list(KeyState::Pending)?;
        self.move_many(&ids, &[KeyState::Pending], KeyState::Rejected, false)
    }

    /// Delete every key file of `id` (accepted first, then pending, rejected, denied).
    /// Returns the states it was removed from. The autosign stub is left alone, as Salt.
    pub fn delete(&self, id: &str) -> Result<Vec<KeyState>> {
        single(self.delete_many(&[id])?)
    }

    /// [`delete`](Self::delete) for many ids in one pass.
    pub fn delete_many<S: AsRef<str>>(&self, ids: &[S]) -> Result<Report> {
        validate_ids(ids)?;
        let pairs: Vec<(String, KeyState)> = ids
            .iter()
            .flat_map(|id| KeyState::ALL.map(|s| (id.as_ref().to_owned(), s)))
            .collect();
        Ok(self.remove_pairs(pairs))
    }

    /// `salt-key -d GLOB`: delete the keys matching `globs`, in whichever state they
    /// matched (after re-reading every directory).
    pub fn delete_matching(&self, globs: &str) -> Result<Report> {
        let glob = GlobList::new(globs)?;
        {
            let _ops = self.lock_ops();
            self.refresh_states(&KeyState::ALL)?;
        }
        let pairs = self
            .matching_glob(&glob, &KeyState::ALL)
            .into_iter()
            .flat_map(|(s, ids)| ids.into_iter().map(move |id| (id, s)))
            .collect();
        Ok(self.remove_pairs(pairs))
    }

    /// `salt-key -D`: delete every key in every state.
    pub fn delete_all(&self) -> Result<Report> {
        {
            let _ops = self.lock_ops();
            self.refresh_states(&KeyState::ALL)?;
        }
        let pairs = self
            .list_all()
            .into_iter()
            .flat_map(|(s, ids)| ids.into_iter().map(move |id| (id, s)))
            .collect();
        Ok(self.remove_pairs(pairs))
    }

    /// Write `pem` as the pending key of a new minion (the master, on first auth).
    /// Replaces an existing pending key. Refused with [`KeyStoreError::Conflict`] when the
    /// id is accepted or rejected: the master must compare keys and deny instead.
    pub fn put_pending(&self, id: &str, pem: &str) -> Result<()> {
        self.put(KeyState::Pending, id, pem)
    }

    /// Make `pem` the accepted key of `id` (auto-accept, `open_mode`, autosign). A pending
    /// or rejected key of the id is moved, never copied: the new text is first written to
    /// an invisible temp file, then the old file is renamed into `minions/`, then the temp
    /// file replaces it; so the id is in exactly one state at every instant (a crash
    /// between the two renames leaves it accepted with its previous text, which for the
    /// master's autosign path is the same key). An existing accepted key is replaced.
    /// Denied keys are left alone.
    pub fn put_accepted(&self, id: &str, pem: &str) -> Result<()> {
        self.put(KeyState::Accepted, id, pem)
    }

    /// Make `pem` the rejected key of `id` (`autoreject_file`); moves any pending or
    /// accepted key the same way as [`put_accepted`](Self::put_accepted).
    pub fn put_rejected(&self, id: &str, pem: &str) -> Result<()> {
        self.put(KeyState::Rejected, id, pem)
    }

    /// Record `pem` as the denied key of `id` (a different key presented for a known id).
    /// Coexists with the id's other key; replaces a previous denied key.
    pub fn put_denied(&self, id: &str, pem: &str) -> Result<()> {
        self.put(KeyState::Denied, id, pem)
    }

    fn put(&self, target: KeyState, id: &str, pem: &str) -> Result<()> {
        validate_id(id)?;
        let target_path = self.path(target, id);
        self.validator
            .validate(pem)
            .map_err(|reason| KeyStoreError::InvalidKey {
                path: target_path.clone(),
                reason,
            })?;
        let _ops = self.lock_ops();
        if target == KeyState::Denied {
            fsutil::atomic_write(&target_path, pem.as_bytes(), KEY_FILE_MODE, self.durable)?;
            self.write_index().sets[target.idx()].insert(id.to_owned());
            return Ok(());
        }
        if target == KeyState::Pending {
            for state in [KeyState::Accepted, KeyState::Rejected] {
                if self.exists(state, id)? {
                    return Err(KeyStoreError::Conflict {
                        id: id.to_owned(),
                        state,
                    });
                }
            }
            fsutil::atomic_write(&target_path, pem.as_bytes(), KEY_FILE_MODE, self.durable)?;
            self.write_index().sets[target.idx()].insert(id.to_owned());
            return Ok(());
        }
        // Accepted or Rejected. 1: the new text, complete and fsync-ed, in a temp file in
        // the target directory (invisible). 2: move the id's file from any other exclusive
        // state into the target (atomic; the id changes state with its old text). 3: put
        // the new text in place (atomic replace). The id is never in two states, even if
        // another process moves it meanwhile (a vanished source is skipped).
        let target_dir = self.state_dir(target);
        let tmp = fsutil::write_tmp(&target_dir, pem.as_bytes(), KEY_FILE_MODE, self.durable)?;
        crash_point("put:after_tmp")?;
        let mut moved = Vec::new();
        for src in KeyState::EXCLUSIVE.into_iter().filter(|&s| s != target) {
            let src_path = self.path(src, id);
            match fs::rename(&src_path, &target_path) {
                Ok(()) => moved.push(src),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    let _ = fs::remove_file(&tmp);
                    return Err(KeyStoreError::io("rename", src_path, e));
                }
            }
        }
        crash_point("put:after_move")?;
        fsutil::rename_tmp(&tmp, &target_path)?;
        if self.durable {
            fsutil::sync_dir(&target_dir)?;
            for &src in &moved {
                fsutil::sync_dir(&self.state_dir(src))?;
            }
        }
        let mut index = self.write_index();
        for src in moved {
            index.sets[src.idx()].remove(id);
        }
        index.sets[target.idx()].insert(id.to_owned());
        Ok(())
    }

    // === autosign stubs ===

    /// Consume the one-shot autosign stub `minions_autosign/<id>`: `true` if it existed and
    /// was younger than `timeout` (Salt's `autosign_timeout`, 120 minutes by default; zero
    /// means no expiry). An expired stub is removed and gives `false`. Removing the stub is
    /// what consumes it, so two concurrent callers cannot both get `true`.
    pub fn consume_autosign_stub(&self, id: &str, timeout: Duration) -> Result<bool> {
        validate_id(id)?;
        let path = self.pki_dir.join(AUTOSIGN_DIR).join(id);
        let meta = match fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(KeyStoreError::io("stat", path, e)),
        };
        let expired = !timeout.is_zero()
            && meta
                .modified()
                .ok()
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age > timeout);
        match fs::remove_file(&path) {
            Ok(()) => Ok(!expired),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(KeyStoreError::io("remove", path, e)),
        }
    }

    /// Create the autosign stub for `id` (empty file), as an operator's `touch` would.
    pub fn put_autosign_stub(&self, id: &str) -> Result<()> {
        validate_id(id)?;
        fsutil::atomic_write(
            &self.pki_dir.join(AUTOSIGN_DIR).join(id),
            b"",
            KEY_FILE_MODE,
            self.durable,
        )
    }

    /// Remove autosign stubs older than `timeout` (Salt does this on every autosign check;
    /// call it from a maintenance loop). Returns how many were removed.
    pub fn purge_expired_autosign(&self, timeout: Duration) -> Result<usize> {
        if timeout.is_zero() {
            return Ok(0);
        }
        let dir = self.pki_dir.join(AUTOSIGN_DIR);
        let rd = fs::read_dir(&dir).map_err(|e| KeyStoreError::io("read directory", &dir, e))?;
        let now = SystemTime::now();
        let mut n = 0;
        for entry in rd.flatten() {
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|age| age > timeout);
            if old
                && entry.file_type().is_ok_and(|t| t.is_file())
                && fs::remove_file(entry.path()).is_ok()
            {
                n += 1;
            }
        }
        Ok(n)
    }

    /// Remove temp files (ours, dot-prefixed) older than `max_age` from every key
    /// directory: the only debris a crash can leave. Done at open with a one-hour age so a
    /// concurrent writer's file is never taken.
    pub fn sweep_temp_files(&self, max_age: Duration) -> Result<usize> {
        let mut n = 0;
        for name in KeyState::ALL
            .iter()
            .map(|s| s.dir_name())
            .chain([AUTOSIGN_DIR])
        {
            n += fsutil::sweep_tmp(&self.pki_dir.join(name), max_age)?;
        }
        Ok(n)
    }

    // === internals ===

    fn fresh_list(&self, state: KeyState) -> Result<Vec<String>> {
        let _ops = self.lock_ops();
        self.refresh_states(&[state])?;
        Ok(self.list(state))
    }

    fn fresh_matches(&self, globs: &str, states: &[KeyState]) -> Result<Vec<String>> {
        let glob = GlobList::new(globs)?;
        {
            let _ops = self.lock_ops();
            self.refresh_states(states)?;
        }
        let mut ids: Vec<String> = self
            .matching_glob(&glob, states)
            .into_values()
            .flatten()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        salt_sort(&mut ids);
        Ok(ids)
    }

    /// Move each id's file from each of `sources` (in order) to `target`: one `renameat`
    /// per file between directories opened once, then one fsync of each directory touched.
    fn move_many<S: AsRef<str>>(
        &self,
        ids: &[S],
        sources: &[KeyState],
        target: KeyState,
        validate: bool,
    ) -> Result<Report> {
        validate_ids(ids)?;
        let _ops = self.lock_ops();
        let mut report = Report::default();
        let target_dir = self.state_dir(target);
        let target_fd = fsutil::open_dir(&target_dir)
            .map_err(|e| KeyStoreError::io("open directory", &target_dir, e))?;
        let mut srcs = Vec::with_capacity(sources.len());
        for &src in sources {
            let dir = self.state_dir(src);
            match fsutil::open_dir(&dir) {
                Ok(fd) => srcs.push((src, dir, fd)),
                // No directory, no key to move from there.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => report
                    .errors
                    .push(KeyStoreError::io("open directory", dir, e)),
            }
        }
        let mut buf = if validate {
            vec![0; fsutil::KEY_BUF_LEN]
        } else {
            Vec::new()
        };
        let mut touched = [false; 4];
        for id in ids {
            let id = id.as_ref();
            for (src, src_dir, src_fd) in &srcs {
                if validate {
                    match fsutil::read_key_at(src_fd, src_dir, id, &mut buf) {
                        Ok(None) => continue,
                        Ok(Some(len)) => {
                            let checked = std::str::from_utf8(&buf[..len])
                                .map_err(|_| "not UTF-8 text".to_owned())
                                .and_then(|text| self.validator.validate(text));
                            if let Err(reason) = checked {
                                report.errors.push(KeyStoreError::InvalidKey {
                                    path: src_dir.join(id),
                                    reason,
                                });
                                continue;
                            }
                        }
                        Err(e) => {
                            report.errors.push(e);
                            continue;
                        }
                    }
                }
                match fsutil::rename_at(src_fd, &target_fd, id) {
                    Ok(()) => {
                        touched[src.idx()] = true;
                        report.changed.push((id.to_owned(), *src));
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        // Not there, or moved by someone else meanwhile.
                    }
                    Err(e) => report
                        .errors
                        .push(KeyStoreError::io("rename", src_dir.join(id), e)),
                }
                crash_point("move_many:after_rename")?;
            }
        }
        self.apply_index(&report.changed, Some(target));
        if !report.changed.is_empty() {
            if let Err(e) = target_fd.sync_all() {
                report
                    .errors
                    .push(KeyStoreError::io("fsync directory", target_dir, e));
            }
            for (src, dir, fd) in srcs {
                if touched[src.idx()]
                    && let Err(e) = fd.sync_all()
                {
                    report
                        .errors
                        .push(KeyStoreError::io("fsync directory", dir, e));
                }
            }
        }
        Ok(report)
    }

    /// Remove each `(id, state)` file: one `unlinkat` per file from directories opened
    /// once, then one fsync of each directory touched.
    fn remove_pairs(&self, pairs: Vec<(String, KeyState)>) -> Report {
        let _ops = self.lock_ops();
        let mut report = Report::default();
        let mut dirs: [Option<(PathBuf, fs::File)>; 4] = Default::default();
        let mut touched = [false; 4];
        for (id, state) in pairs {
            let slot = &mut dirs[state.idx()];
            if slot.is_none() {
                let dir = self.state_dir(state);
                match fsutil::open_dir(&dir) {
                    Ok(fd) => *slot = Some((dir, fd)),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => {
                        report
                            .errors
                            .push(KeyStoreError::io("remove", dir.join(&id), e));
                        continue;
                    }
                }
            }
            let Some((dir, fd)) = slot.as_ref() else {
                continue;
            };
            match fsutil::unlink_at(fd, &id) {
                Ok(()) => {
                    touched[state.idx()] = true;
                    report.changed.push((id, state));
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => report
                    .errors
                    .push(KeyStoreError::io("remove", dir.join(&id), e)),
            }
        }
        self.apply_index(&report.changed, None);
        for state in KeyState::ALL {
            if let (true, Some((dir, fd))) = (touched[state.idx()], &dirs[state.idx()])
                && let Err(e) = fd.sync_all()
            {
                report
                    .errors
                    .push(KeyStoreError::io("fsync directory", dir, e));
            }
        }
        report
    }

    fn apply_index(&self, changed: &[(String, KeyState)], to: Option<KeyState>) {
        if changed.is_empty() {
            return;
        }
        let mut index = self.write_index();
        for (id, from) in changed {
            index.sets[from.idx()].remove(id);
            if let Some(to) = to {
                index.sets[to.idx()].insert(id.clone());
            }
        }
    }

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

fn accept_sources(from: AcceptFrom) -> Vec<KeyState> {
    let mut v = vec![KeyState::Pending];
    if from.include_rejected {
        v.push(KeyState::Rejected);
    }
    if from.include_denied {
        v.push(KeyState::Denied);
    }
    v
}

fn reject_sources(from: RejectFrom) -> Vec<KeyState> {
    let mut v = vec![KeyState::Pending];
    if from.include_accepted {
        v.push(KeyState::Accepted);
    }
    if from.include_denied {
        v.push(KeyState::Denied);
    }
    v
}

fn validate_ids<S: AsRef<str>>(ids: &[S]) -> Result<()> {
    ids.iter().try_for_each(|id| validate_id(id.as_ref()))
}

/// A single-id report as a result: the first error, else the states left.
fn single(mut report: Report) -> Result<Vec<KeyState>> {
    if !report.errors.is_empty() {
        return Err(report.errors.swap_remove(0));
    }
    Ok(report.changed.into_iter().map(|(_, s)| s).collect())
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
