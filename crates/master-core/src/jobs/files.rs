//! The job cache's default driver: the files of `{cachedir}/jobs` in Salt's `local_cache`
//! layout ([`super::local_cache`]: hashed job directories, `jid`, `.load.p`, `.minions.p`,
//! `<minion>/return.p` and `out.p`), so Python's `salt-run jobs.*` and Salt's master read and
//! write the same history as ours. A file is never half-written, and a SIGKILL at any point
//! leaves nothing behind that outlives the next start (`tests/tests/durability_jobs.rs` kills
//! the master while returns stream in):
//!
//! * normally it is written as an unnamed file in its directory (Linux `O_TMPFILE`) and linked
//!   under its name once complete (`linkat` through `/proc/self/fd`): a kill before the link
//!   leaves no file at all, the kernel frees the inode;
//! * where that is not possible (a file system without `O_TMPFILE`, no `/proc`, or the name
//!   exists already: the job load written again) it is written to
//!   `{cachedir}/jobs/.tmp/<pid>.<n>` and renamed into place. A kill in between leaves that
//!   file; keeping them all in one directory lets the next start remove those of dead
//!   processes by reading that one directory instead of walking every job.
//!
//! A job directory is made the same way, as `.tmp/<pid>.<n>` holding its `jid` file and then
//! renamed into place, so the job-cache sweep, which removes a job directory without a `jid`
//! file at once as Salt's `clean_old_jobs` does, never sees one being stored.
//!
//! Returns are not fsynced; the job load and its `jid` file are, within a second, in batches
//! (`flush.rs`).
//!
//! A minion's first return for a job is the one kept, as in Salt's `local_cache.returner`:
//! its directory exists already for a second one (a retry after a timeout, two minions with
//! one id, a replay), which is dropped and logged (debug when it is the same return, a
//! warning when it differs, in Salt's words). A job with a `nocache` file keeps no returns.

use std::collections::{BTreeMap, HashSet};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use rmpv::Value;

use salt_pki::HashType;

use super::clean::CleanReport;
use super::jid::safe_jid;
use super::local_cache::{self as lc, jid_dir};
use super::store::{JobError, JobStore};

/// The files of `{cachedir}/jobs`.
#[derive(Debug)]
pub struct FileJobs {
    dir: PathBuf,
    tmp: PathBuf,
    hash: HashType,
}

/// The job cache's directory of temporary files, under `{cachedir}/jobs` (a dot name is never a
/// jid, see [`safe_jid`]).
pub(crate) const TMP_DIR: &str = ".tmp";

/// Sequence number of temporary files within this process.
static SEQ: AtomicU64 = AtomicU64::new(0);

impl FileJobs {
    /// Jobs live in `dir` (`{cachedir}/jobs`). Temporary files a killed master left in
    /// `dir/.tmp` (those whose process is gone, or that carry this process's pid: nothing has
    /// been written yet) are removed now; this reads that directory only, so it costs nothing
    /// however many jobs are cached. Meant to be called once per process and cache directory.
    /// Job directories are named by sha256 of the jid (Salt's default `hash_type`).
    pub fn new(dir: PathBuf) -> Self {
        Self::with_hash_type(dir, HashType::Sha256)
    }

    /// [`new`](Self::new) with the master's `hash_type`. Jobs of salt-rs's old layout
    /// (`jobs/<jid>/`) are moved into Salt's now, and that is logged.
    pub fn with_hash_type(dir: PathBuf, hash: HashType) -> Self {
        let jobs = FileJobs {
            tmp: dir.join(TMP_DIR),
            dir,
            hash,
        };
        match sweep_stale_temps(&jobs.tmp) {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                "Removed {n} temporary file(s) left in {} by a process that is gone",
                jobs.tmp.display()
            ),
            Err(e) => tracing::warn!("Job cache: cannot sweep {}: {e}", jobs.tmp.display()),
        }
        match lc::migrate_old_layout(&jobs.dir, hash) {
            Ok(0) => {}
            Ok(n) => tracing::warn!(
                "Job cache: moved {n} job(s) from salt-rs's old layout ({}/<jid>/) into Salt's \
                 local_cache layout ({}/<{hash}(jid)[:2]>/<rest>/), which Salt's master and \
                 `salt-run jobs.*` read",
                jobs.dir.display(),
                jobs.dir.display(),
                hash = hash.as_str(),
            ),
            Err(e) => tracing::error!(
                "Job cache: cannot move the jobs of salt-rs's old layout in {} into Salt's \
                 local_cache layout: {e}",
                jobs.dir.display()
            ),
        }
        jobs
    }

    /// The directory of `jid` (Salt's `salt.utils.jid.jid_dir`).
    pub fn job_dir(&self, jid: &str) -> PathBuf {
        jid_dir(&self.dir, jid, self.hash)
    }

    /// Save the job load.
    pub fn store_job(&self, jid: &str, load: &Value) -> Result<(), JobError> {
        if !safe_jid(jid) {
            return Err(JobError::BadJid(jid.to_owned()));
        }
        // Salt's `prep_jid`: the `jid` file, whose mtime is the job's age.
        let (dir, fresh) = self.create_job_dir(jid)?;
        let jid_file = dir.join(lc::JID);
        let load_file = dir.join(lc::LOAD_P);
        self.write(&load_file, &salt_proto::encode(load))?;
        // Flushed by the next tick's batch, not by this publish (`flush.rs`): the files,
        // their directory and, for a new job, the new directories' entries.
        let mut dirs = vec![dir.clone()];
        if fresh {
            dirs.extend(dir.parent().map(Path::to_path_buf));
            dirs.push(self.dir.clone());
        }
        super::flush::later(&[jid_file, load_file], &dirs);
        Ok(())
    }

    /// Salt's `prep_jid(passed_jid=jid, nocache)`: the job's directory with its `jid` file
    /// (and `nocache`), not flushed (a minion's own job, `jid: req`).
    pub fn prep_jid(&self, jid: &str, nocache: bool) -> Result<(), JobError> {
        if !safe_jid(jid) {
            return Err(JobError::BadJid(jid.to_owned()));
        }
        let (dir, _) = self.create_job_dir(jid)?;
        if nocache {
            self.write(&dir.join(lc::NOCACHE), b"")?;
        }
        Ok(())
    }

    /// Salt's `save_minions`: the minions `jid` targets, in `.minions.p`, merged with those
    /// already there and sorted, as Salt 3008 does (the slices of a batch share its jid).
    pub fn store_minions(&self, jid: &str, minions: &[String]) -> Result<(), JobError> {
        if !safe_jid(jid) {
            return Err(JobError::BadJid(jid.to_owned()));
        }
        let dir = self.job_dir(jid);
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(lc::MINIONS_P);
        let mut all: std::collections::BTreeSet<String> = minions.iter().cloned().collect();
        if let Ok(Ok(Value::Array(old))) = std::fs::read(&path).map(|b| salt_proto::decode(&b)) {
            all.extend(old.iter().filter_map(|v| v.as_str().map(str::to_owned)));
        }
        let minions: Vec<String> = all.into_iter().collect();
        let list = Value::Array(minions.iter().map(|m| Value::from(m.as_str())).collect());
        self.write(&path, &salt_proto::encode(&list))?;
        Ok(())
    }

    /// Save a minion's return (id already validated).
    pub fn store_return(&self, jid: &str, id: &str, load: &Value) -> Result<(), JobError> {
        self.store_encoded_return(jid, id, &salt_proto::encode(load))
    }

    /// [`store_return`](Self::store_return) of a load already encoded as msgpack. A second
    /// return of `id` for `jid` is not stored (see the module docs), nor any return of a job
    /// marked `nocache`.
    fn store_encoded_return(&self, jid: &str, id: &str, load: &[u8]) -> Result<(), JobError> {
        if !safe_jid(jid) {
            return Err(JobError::BadJid(jid.to_owned()));
        }
        let job = self.job_dir(jid);
        if job.join(lc::NOCACHE).exists() {
            return Ok(());
        }
        let dir = job.join(id);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(&job)?;
                std::fs::create_dir(&dir)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                log_duplicate_return(&dir, jid, id, load);
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        }
        let load = salt_proto::decode(load).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("return of {id}: {e}"),
            )
        })?;
        let (kept, out) = lc::split_return(&load);
        // `out.p` first: a reader never sees a `return.p` without its `out`.
        if let Some(out) = out {
            self.write(&dir.join(lc::OUT_P), &salt_proto::encode(&out))?;
        }
        self.write(&dir.join(lc::RETURN_P), &salt_proto::encode(&kept))?;
        Ok(())
    }

    /// The directory of `jid` with its `jid` file, and whether it was made now. A new one is
    /// made as `.tmp/<pid>.<n>` with the `jid` file in it and renamed into place, so a job
    /// directory never exists without its `jid` file (the sweep removes such a directory as a
    /// corrupted entry, as Salt does). One that exists already (returns that came before the
    /// job, a second store) gets the `jid` file written if it lacks one. Nothing is flushed
    /// here (see `flush.rs`).
    fn create_job_dir(&self, jid: &str) -> std::io::Result<(PathBuf, bool)> {
        let dir = self.job_dir(jid);
        let jid_file = dir.join(lc::JID);
        if !dir.is_dir() {
            let tmp = self.create_temp_dir()?;
            let made = create_private(&tmp.join(lc::JID))
                .and_then(|mut f| {
                    f.write_all(jid.as_bytes())?;
                    self.rename_into_place(&tmp, &dir)
                })
                .inspect_err(|_| {
                    let _ = std::fs::remove_dir_all(&tmp);
                })?;
            if made {
                return Ok((dir, true));
            }
        }
        if !jid_file.is_file() {
            self.write(&jid_file, jid.as_bytes())?;
        }
        Ok((dir, false))
    }

    /// Rename the directory `tmp` to `dir`, making `dir`'s parent if needed (the sweep removes
    /// an old empty one). `false` (and `tmp` removed) if `dir` exists already: made by another
    /// writer meanwhile.
    fn rename_into_place(&self, tmp: &Path, dir: &Path) -> std::io::Result<bool> {
        let mut tries = 0;
        loop {
            match std::fs::rename(tmp, dir) {
                Ok(()) => return Ok(true),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < 3 => {
                    if let Some(top) = dir.parent() {
                        std::fs::create_dir_all(top)?;
                    }
                }
                Err(_) if dir.is_dir() => {
                    std::fs::remove_dir_all(tmp)?;
                    return Ok(false);
                }
                Err(e) => return Err(e),
            }
            tries += 1;
        }
    }

    /// A new temporary directory `.tmp/<pid>.<n>` (see [`Self::create_temp`]).
    fn create_temp_dir(&self) -> std::io::Result<PathBuf> {
        self.create_in_tmp(|p| std::fs::create_dir(p))
            .map(|(p, ())| p)
    }

    /// A new temporary file `.tmp/<pid>.<n>`, opened for writing (mode 0600).
    fn create_temp(&self) -> std::io::Result<(PathBuf, std::fs::File)> {
        self.create_in_tmp(create_private)
    }

    /// `make` a new entry `.tmp/<pid>.<n>` (`.tmp` created if it is missing). The name exists
    /// already only if a process that had this pid before left it (a master in a container
    /// often has the same pid every start): then the next number is tried.
    fn create_in_tmp<T>(
        &self,
        make: impl Fn(&Path) -> std::io::Result<T>,
    ) -> std::io::Result<(PathBuf, T)> {
        let mut tries = 0;
        loop {
            let tmp = self.tmp.join(format!(
                "{}.{}",
                std::process::id(),
                SEQ.fetch_add(1, Ordering::Relaxed)
            ));
            match make(&tmp) {
                Ok(made) => return Ok((tmp, made)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries == 0 => {
                    std::fs::DirBuilder::new()
                        .recursive(true)
                        .mode(0o700)
                        .create(&self.tmp)?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 1000 => {}
                Err(e) => return Err(e),
            }
            tries += 1;
        }
    }

    /// Write `path` (mode 0600) so that it is never half-written: an unnamed file linked once
    /// complete, else a temporary file in `.tmp` and a rename (see the module docs). Nothing is
    /// flushed here: the job load and its `jid` file are flushed in batches (`flush.rs`), and
    /// returns are not flushed at all: two disk flushes (file and directory) each would make
    /// 10,000 minions answering one job cost 20,000 flushes, and Salt's local job cache does
    /// not flush either. A crash may lose the newest returns, never corrupt one.
    fn write(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        // Not linked (the name exists, no O_TMPFILE or no /proc): through a named temporary
        // file.
        if let Ok(Some(_)) = salt_keystore::create_linked(path, data, 0o600, false) {
            return Ok(());
        }
        let (tmp, mut f) = self.create_temp()?;
        let written = f.write_all(data).and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        Ok(())
    }
}

/// Salt's `_log_duplicate_return`: the cached return of `id` (in its directory `cached`)
/// against the one dropped, compared by their `return`, `retcode`, `success` and `out`.
fn log_duplicate_return(cached: &Path, jid: &str, id: &str, new: &[u8]) {
    let record = |v: &Value| -> Vec<(String, Value)> {
        ["return", "retcode", "success", "out"]
            .iter()
            .filter_map(|k| Some(((*k).to_owned(), salt_compat::map_get(v, k)?.clone())))
            .collect()
    };
    let new = salt_proto::decode(new).unwrap_or(Value::Nil);
    let old = std::fs::read(cached.join(lc::RETURN_P))
        .map_err(|e| ("read", e.to_string()))
        .and_then(|b| salt_proto::decode(&b).map_err(|e| ("deserialized", e.to_string())));
    let old = match old {
        Ok(mut v) => {
            if let (Value::Map(m), Some(out)) = (&mut v, lc::read_mp(&cached.join(lc::OUT_P)))
                && !m.iter().any(|(k, _)| k.as_str() == Some("out"))
            {
                m.push((Value::from("out"), out));
            }
            v
        }
        Err((what, e)) => {
            tracing::warn!(
                "Duplicate return from minion {id} for jid {jid}; cached return could not be \
                 {what} for comparison ({e})."
            );
            return;
        }
    };
    if record(&old) == record(&new) {
        tracing::debug!(
            "Duplicate return from minion {id} for jid {jid}; payload matches the cached \
             return, ignoring (likely a retry after a master timeout or a syndic re-forward)."
        );
        return;
    }
    // Python's repr of the scalars these fields hold.
    let field = |v: &Value, k: &str| match salt_compat::map_get(v, k) {
        None | Some(Value::Nil) => "None".to_owned(),
        Some(Value::Boolean(b)) => if *b { "True" } else { "False" }.to_owned(),
        Some(Value::Integer(i)) => i.to_string(),
        Some(Value::String(s)) => salt_compat::py_str_repr(s.as_str().unwrap_or("")),
        Some(other) => other.to_string(),
    };
    tracing::warn!(
        "Duplicate return from minion {id} for jid {jid} with a *differing* payload; ignoring \
         the second return. This may indicate two minions sharing the same id, a misconfigured \
         returner, or in rare cases a replay attempt. Cached retcode={} success={}; new \
         retcode={} success={}.",
        field(&old, "retcode"),
        field(&old, "success"),
        field(&new, "retcode"),
        field(&new, "success"),
    );
}

impl JobStore for FileJobs {
    fn driver(&self) -> &'static str {
        "local_cache"
    }

    fn save_load(&self, jid: &str, load: &Value) -> Result<(), JobError> {
        self.store_job(jid, load)
    }

    fn save_return(&self, jid: &str, id: &str, load: &Value) -> Result<(), JobError> {
        self.store_return(jid, id, load)
    }

    fn save_minions(&self, jid: &str, minions: &[String]) -> Result<(), JobError> {
        self.store_minions(jid, minions)
    }

    fn prep_jid(&self, jid: &str, nocache: bool) -> Result<(), JobError> {
        FileJobs::prep_jid(self, jid, nocache)
    }

    fn save_encoded_returns(
        &self,
        jid: &str,
        returns: &[(String, Vec<u8>)],
    ) -> Result<(), JobError> {
        super::store::each_tried(returns, |(id, load)| {
            self.store_encoded_return(jid, id, load)
        })
    }

    fn load(&self, jid: &str) -> Result<Option<Value>, JobError> {
        if !safe_jid(jid) {
            return Ok(None);
        }
        Ok(lc::read_load(&self.job_dir(jid)))
    }

    fn returns(&self, jid: &str) -> Result<Vec<(String, Value)>, JobError> {
        let mut out = BTreeMap::new();
        if !safe_jid(jid) {
            return Ok(vec![]);
        }
        let Ok(rd) = std::fs::read_dir(self.job_dir(jid)) else {
            return Ok(vec![]);
        };
        for e in rd.flatten() {
            let Ok(id) = e.file_name().into_string() else {
                continue;
            };
            if id.starts_with('.') {
                continue;
            }
            if let Some(ret) = lc::read_return(&e.path()) {
                out.insert(id, ret);
            }
        }
        Ok(out.into_iter().collect())
    }

    fn jobs(&self) -> Result<Vec<(String, Value)>, JobError> {
        // Returns of a job another master published have no load here: not listed.
        Ok(lc::walk_loads(&self.dir)
            .into_iter()
            .map(|(jid, _, load)| (jid, load))
            .collect())
    }

    fn clean(
        &self,
        keep: Duration,
        now: SystemTime,
        waited: &HashSet<String>,
    ) -> Result<CleanReport, JobError> {
        Ok(super::clean::clean_old_jobs(&self.dir, keep, now, waited)?)
    }
}

/// A new file (mode 0600, never an existing one) at `path`.
fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// Whether process `pid` exists (a process of another user counts).
fn pid_alive(pid: i32) -> bool {
    use nix::errno::Errno;
    pid > 0
        && !matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(Errno::ESRCH)
        )
}

/// Removes the files (and job directories) in `tmp` named `<pid>.<n>` whose process is gone or is this one (a
/// process that had this pid before: called before this process writes any); files of other
/// live processes and other names are left alone. Returns how many were removed; a missing
/// directory is an empty one.
pub(crate) fn sweep_stale_temps(tmp: &Path) -> std::io::Result<usize> {
    sweep(tmp, |name| name.split_once('.'))
}

/// [`sweep_stale_temps`] for the dot files [`write_unsynced`] leaves next to their target
/// (`.<name>.tmp.<pid>.<n>`, e.g. in `{cachedir}/sessions`) when a kill lands between the
/// write and the rename.
pub(crate) fn sweep_stale_dot_temps(dir: &Path) -> std::io::Result<usize> {
    sweep(dir, |name| {
        let rest = name.strip_prefix('.')?;
        let (_, pid_seq) = rest.rsplit_once(".tmp.")?;
        pid_seq.split_once('.')
    })
}

/// Removes the entries of `dir` for which `parse` gives `(pid, seq)`, `seq` all digits, and
/// `pid` is gone or ours.
fn sweep(dir: &Path, parse: impl Fn(&str) -> Option<(&str, &str)>) -> std::io::Result<usize> {
    let entries = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(&parse)
            .filter(|(_, seq)| !seq.is_empty() && seq.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        if pid_alive(pid) && u32::try_from(pid).ok() != Some(std::process::id()) {
            continue;
        }
        let gone = if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())
        } else {
            std::fs::remove_file(entry.path())
        };
        match gone {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(removed)
}

/// Write `path` (mode 0600) via a temporary file next to it and a rename (never
/// half-written), without fsync (the session keys in `{cachedir}/sessions`). The temporary
/// name is a dot file (`.<name>.tmp.<pid>.<n>`), which no minion id can name, so a file left by
/// a kill is never read as another minion's session key.
pub(crate) fn write_unsynced(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(
        ".{name}.tmp.{}.{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let mut f = create_private(&tmp)?;
    if let Err(e) = f.write_all(data).and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
