//! The job cache's default driver: the files of `{cachedir}/jobs` (Salt's `local_cache`).
//!
//! Layout under `{cachedir}/jobs/<jid>/`: `.load.p` (msgpack of the job load) and
//! `<minion id>/return.p` (msgpack of the return load, `tok`/`nonce` removed). A file is never
//! half-written, and a SIGKILL at any point leaves nothing behind that outlives the next
//! start (`tests/tests/durability_jobs.rs` kills the master while returns stream in):
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
//! Returns are not fsynced; the job load is.
//!
//! A minion's first return for a job is the one kept, as in Salt's `local_cache.returner`:
//! its directory exists already for a second one (a retry after a timeout, two minions with
//! one id, a replay), which is dropped and logged (debug when it is the same return, a
//! warning when it differs, in Salt's words).

use std::collections::{BTreeMap, HashSet};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use rmpv::Value;
use salt_pki::files::fsync_dir as sync_dir;

use super::clean::CleanReport;
use super::jid::safe_jid;
use super::store::{JobError, JobStore};

/// The files of `{cachedir}/jobs`.
#[derive(Debug)]
pub(crate) struct FileJobs {
    dir: PathBuf,
    tmp: PathBuf,
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
    pub(crate) fn new(dir: PathBuf) -> Self {
        let jobs = FileJobs {
            tmp: dir.join(TMP_DIR),
            dir,
        };
        match sweep_stale_temps(&jobs.tmp) {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                "Removed {n} temporary file(s) left in {} by a process that is gone",
                jobs.tmp.display()
            ),
            Err(e) => tracing::warn!("Job cache: cannot sweep {}: {e}", jobs.tmp.display()),
        }
        jobs
    }

    /// Save the job load.
    pub(crate) fn store_job(&self, jid: &str, load: &Value) -> Result<(), JobError> {
        if !safe_jid(jid) {
            return Err(JobError::BadJid(jid.to_owned()));
        }
        let dir = self.dir.join(jid);
        std::fs::create_dir_all(&dir)?;
        self.write(&dir.join(".load.p"), &salt_proto::encode(load), true)?;
        // The new jid directory's entry, so the load survives a power cut too.
        sync_dir(&self.dir)?;
        Ok(())
    }

    /// Save a minion's return (id already validated).
    pub(crate) fn store_return(&self, jid: &str, id: &str, load: &Value) -> Result<(), JobError> {
        self.store_encoded_return(jid, id, &salt_proto::encode(load))
    }

    /// [`store_return`](Self::store_return) of a load already encoded as msgpack. A second
    /// return of `id` for `jid` is not stored (see the module docs).
    fn store_encoded_return(&self, jid: &str, id: &str, load: &[u8]) -> Result<(), JobError> {
        if !safe_jid(jid) {
            return Err(JobError::BadJid(jid.to_owned()));
        }
        let job = self.dir.join(jid);
        let dir = job.join(id);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(&job)?;
                std::fs::create_dir(&dir)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                log_duplicate_return(&dir.join("return.p"), jid, id, load);
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        }
        self.write(&dir.join("return.p"), load, false)?;
        Ok(())
    }

    /// A new temporary file `.tmp/<pid>.<n>` (created with the directory if that is missing).
    /// The name exists already only if a process that had this pid before left it (a master
    /// in a container often has the same pid every start): then the next number is tried.
    fn create_temp(&self) -> std::io::Result<(PathBuf, std::fs::File)> {
        let mut tries = 0;
        loop {
            let tmp = self.tmp.join(format!(
                "{}.{}",
                std::process::id(),
                SEQ.fetch_add(1, Ordering::Relaxed)
            ));
            match create_private(&tmp) {
                Ok(f) => return Ok((tmp, f)),
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
    /// complete, else a temporary file in `.tmp` and a rename (see the module docs). `sync`:
    /// flush the file before it gets its name and its directory after (the job load). Returns are not flushed: two disk flushes (file and directory) each would
    /// make 10,000 minions answering one job cost 20,000 flushes, and Salt's local job cache
    /// does not flush either. A crash may lose the newest returns, never corrupt one.
    fn write(&self, path: &Path, data: &[u8], sync: bool) -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        // Not linked (the name exists, no O_TMPFILE or no /proc): through a named temporary
        // file.
        if let Ok(Some(_)) = salt_keystore::create_linked(path, data, 0o600, sync) {
            return if sync { sync_dir(dir) } else { Ok(()) };
        }
        let (tmp, mut f) = self.create_temp()?;
        let written = f
            .write_all(data)
            .and_then(|()| if sync { f.sync_all() } else { Ok(()) })
            .and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        if sync {
            sync_dir(dir)?;
        }
        Ok(())
    }
}

/// Salt's `_log_duplicate_return`: the cached return of `id` (at `cached`) against the one
/// dropped, compared by their `return`, `retcode`, `success` and `out`.
fn log_duplicate_return(cached: &Path, jid: &str, id: &str, new: &[u8]) {
    let record = |v: &Value| -> Vec<(String, Value)> {
        ["return", "retcode", "success", "out"]
            .iter()
            .filter_map(|k| Some(((*k).to_owned(), salt_compat::map_get(v, k)?.clone())))
            .collect()
    };
    let new = salt_proto::decode(new).unwrap_or(Value::Nil);
    let old = std::fs::read(cached)
        .map_err(|e| ("read", e.to_string()))
        .and_then(|b| salt_proto::decode(&b).map_err(|e| ("deserialized", e.to_string())));
    let old = match old {
        Ok(v) => v,
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

fn read_mp(path: &Path) -> Option<Value> {
    let bytes = std::fs::read(path).ok()?;
    salt_proto::decode(&bytes).ok()
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
        Ok(read_mp(&self.dir.join(jid).join(".load.p")))
    }

    fn returns(&self, jid: &str) -> Result<Vec<(String, Value)>, JobError> {
        let mut out = BTreeMap::new();
        if !safe_jid(jid) {
            return Ok(vec![]);
        }
        let Ok(rd) = std::fs::read_dir(self.dir.join(jid)) else {
            return Ok(vec![]);
        };
        for e in rd.flatten() {
            let Ok(id) = e.file_name().into_string() else {
                continue;
            };
            if id.starts_with('.') {
                continue;
            }
            if let Some(load) = read_mp(&e.path().join("return.p")) {
                out.insert(id, load);
            }
        }
        Ok(out.into_iter().collect())
    }

    fn jobs(&self) -> Result<Vec<(String, Value)>, JobError> {
        let mut v: Vec<String> = std::fs::read_dir(&self.dir)
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|n| safe_jid(n))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        // Returns of a job another master published have no load here: not listed.
        Ok(v.into_iter()
            .filter_map(|jid| {
                let load = read_mp(&self.dir.join(&jid).join(".load.p"))?;
                Some((jid, load))
            })
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

/// Removes the files in `tmp` named `<pid>.<n>` whose process is gone or is this one (a
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
        match std::fs::remove_file(entry.path()) {
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
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// Regression (found by `tests/tests/durability_jobs.rs`): a master SIGKILLed between
    /// creating a temporary file and renaming it left the file in the jid directory forever.
    /// Temporary files now live in `jobs/.tmp`, and the next start removes those of dead
    /// processes, keeping live processes' files and names it did not make.
    #[test]
    fn stale_temps_of_dead_processes_are_swept_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("jobs").join(TMP_DIR);
        std::fs::create_dir_all(&tmp).unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let own = std::process::id();
        for name in [
            format!("{dead}.0"),
            format!("{dead}.17"),
            format!("{own}.5"),
            "1.3".to_owned(),
            format!("{dead}.x"),
            "notes".to_owned(),
        ] {
            std::fs::write(tmp.join(name), b"\x81\xa6ret").unwrap();
        }
        // A half-created job (killed before its load was written) does not get in the way.
        std::fs::create_dir_all(dir.path().join("jobs/20250101000000000007/m1")).unwrap();

        let jobs = FileJobs::new(dir.path().join("jobs"));
        let mut want = vec!["1.3".to_owned(), format!("{dead}.x"), "notes".to_owned()];
        want.sort();
        assert_eq!(
            names(&tmp),
            want,
            "dead and own-pid files swept, others kept"
        );
        // Sweeping again removes nothing more; a missing directory is an empty one.
        assert_eq!(sweep_stale_temps(&tmp).unwrap(), 0);
        assert_eq!(sweep_stale_temps(&dir.path().join("nowhere")).unwrap(), 0);

        // Names a previous process with this pid may still have left (written after the
        // sweep here) are skipped, not failed on.
        let next = SEQ.load(Ordering::Relaxed);
        let planted: Vec<String> = (next..next + 50).map(|n| format!("{own}.{n}")).collect();
        for name in &planted {
            std::fs::write(tmp.join(name), b"").unwrap();
        }
        want.extend(planted);
        want.sort();

        // Writing leaves nothing behind in .tmp, and only `.load.p` / `return.p` in the job;
        // the job load written again replaces the first through `.tmp`, past the planted
        // names. m1's half-created directory counts as its return, as in Salt: a return of
        // m1 is dropped.
        let load = Value::Map(vec![(Value::from("fun"), Value::from("test.ping"))]);
        jobs.store_job("20250101000000000007", &Value::Nil).unwrap();
        jobs.store_job("20250101000000000007", &load).unwrap();
        jobs.store_return("20250101000000000007", "m1", &load)
            .unwrap();
        jobs.store_return("20250101000000000007", "m2", &load)
            .unwrap();
        assert_eq!(names(&tmp), want);
        let job = dir.path().join("jobs/20250101000000000007");
        assert_eq!(names(&job), [".load.p", "m1", "m2"]);
        assert!(names(&job.join("m1")).is_empty());
        assert_eq!(names(&job.join("m2")), ["return.p"]);
        for f in [".load.p", "m2/return.p"] {
            let bytes = std::fs::read(job.join(f)).unwrap();
            assert_eq!(salt_proto::decode(&bytes).unwrap(), load, "{f}");
        }
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(job.join("m2/return.p"))
                .unwrap()
                .permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
    }

    /// Normally (where the file system has `O_TMPFILE`) nothing is written outside the job's
    /// directory (an unnamed file, linked once complete); `.tmp` is made when a write needs it
    /// (here: the job load written again) and left empty. A minion's second return for a job
    /// is dropped, the first kept (Salt's `local_cache`). A session key's temporary file is a
    /// dot file next to it, which no minion id names.
    #[test]
    fn named_temporary_files_only_when_needed() {
        let dir = tempfile::tempdir().unwrap();
        let jobs_dir = dir.path().join("jobs");
        std::fs::create_dir_all(&jobs_dir).unwrap();
        let jobs = FileJobs::new(jobs_dir.clone());
        jobs.store_job("20250101000000000008", &Value::Nil).unwrap();
        jobs.store_return("20250101000000000008", "m1", &Value::Boolean(false))
            .unwrap();
        let probe = jobs_dir.join("probe");
        if salt_keystore::create_linked(&probe, b"", 0o600, false).is_ok_and(|f| f.is_some()) {
            std::fs::remove_file(&probe).unwrap();
            assert_eq!(names(&jobs_dir), ["20250101000000000008"]);
        }
        for f in [".load.p", "m1/return.p"] {
            let meta = std::fs::metadata(jobs_dir.join("20250101000000000008").join(f)).unwrap();
            let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions());
            assert_eq!(mode & 0o777, 0o600, "{f}");
        }
        // A second return of m1 (a retry, a replay) is dropped: the first stays.
        jobs.store_return("20250101000000000008", "m1", &Value::Boolean(true))
            .unwrap();
        let bytes = std::fs::read(jobs_dir.join("20250101000000000008/m1/return.p")).unwrap();
        assert_eq!(salt_proto::decode(&bytes).unwrap(), Value::Boolean(false));
        // The job load written again goes through `.tmp` (its name exists).
        jobs.store_job("20250101000000000008", &Value::from(1))
            .unwrap();
        assert_eq!(names(&jobs_dir), [".tmp", "20250101000000000008"]);
        assert!(names(&jobs_dir.join(".tmp")).is_empty());
        let bytes = std::fs::read(jobs_dir.join("20250101000000000008/.load.p")).unwrap();
        assert_eq!(salt_proto::decode(&bytes).unwrap(), Value::from(1));

        let sessions = dir.path().join("sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        write_unsynced(&sessions.join("web.example.com"), b"key").unwrap();
        assert_eq!(names(&sessions), ["web.example.com"]);
    }
}
