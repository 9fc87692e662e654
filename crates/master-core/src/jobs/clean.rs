//! The bounded job cache: jobs older than `keep_jobs_seconds` are removed, as Salt's
//! `local_cache.clean_old_jobs` does on every maintenance tick.
//!
//! A job's age is the modification time of its `.load.p` (Salt uses its `jid` file's mtime, for
//! the same reason: a `chown -R` of the cache after an upgrade changes ctime, not mtime; salt
//! #68351). A job directory without `.load.p` holds returns for a job this master did not
//! publish (a minion that failed over from another master) or was left by a kill before the
//! load was written; it ages by its own mtime, so it is never removed while returns still
//! arrive. Salt scrubs such directories at once; we keep the returns for the usual time.
//!
//! The sweep runs on a blocking thread, reads the `jobs` directory once and stats one file per
//! job, so it never holds a lock that the request server needs. Jobs a `salt` command is still
//! waiting on are skipped whatever their age.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::jid::safe_jid;

/// What one sweep did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CleanReport {
    /// Job directories removed.
    pub removed: usize,
    /// Job directories kept (young enough, or waited on).
    pub kept: usize,
    /// Job directories that could not be read or removed (logged, retried next tick).
    pub failed: usize,
}

/// Remove every job under `dir` (`{cachedir}/jobs`) older than `keep` at `now`, except those
/// in `waited`. `keep` of zero keeps everything (Salt's `keep_jobs_seconds: 0`). Entries whose
/// name is not a jid (`.tmp`, stray files) are left alone.
pub(crate) fn clean_old_jobs(
    dir: &Path,
    keep: Duration,
    now: SystemTime,
    waited: &HashSet<String>,
) -> std::io::Result<CleanReport> {
    let mut report = CleanReport::default();
    if keep.is_zero() {
        return Ok(report);
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(report),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(jid) = name.to_str().filter(|n| safe_jid(n)) else {
            continue;
        };
        if waited.contains(jid) {
            report.kept += 1;
            continue;
        }
        let path = entry.path();
        let stamp = std::fs::metadata(path.join(".load.p"))
            .or_else(|_| std::fs::symlink_metadata(&path))
            .and_then(|m| m.modified());
        let old = match stamp {
            Ok(t) => now.duration_since(t).is_ok_and(|age| age > keep),
            Err(e) => {
                tracing::debug!("Job cache: cannot read the age of job {jid}: {e}");
                report.failed += 1;
                continue;
            }
        };
        if !old {
            report.kept += 1;
            continue;
        }
        match remove(&path) {
            Ok(()) => report.removed += 1,
            Err(e) => {
                tracing::warn!("Job cache: cannot remove old job {jid}: {e}");
                report.failed += 1;
            }
        }
    }
    Ok(report)
}

fn remove(path: &Path) -> std::io::Result<()> {
    if std::fs::symlink_metadata(path)?.is_dir() {
        match std::fs::remove_dir_all(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            r => r,
        }
    } else {
        std::fs::remove_file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(dir: &Path, jid: &str, with_load: bool) {
        let d = dir.join(jid).join("m1");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("return.p"), b"\xc3").unwrap();
        if with_load {
            std::fs::write(dir.join(jid).join(".load.p"), b"\x80").unwrap();
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn old_jobs_go_young_and_waited_ones_stay() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        job(dir, "20250101000000000001", true);
        job(dir, "20250101000000000002", false);
        job(dir, "20250101000000000003", true);
        std::fs::create_dir_all(dir.join(".tmp")).unwrap();
        let later = SystemTime::now() + Duration::from_secs(100);
        let waited: HashSet<String> = ["20250101000000000003".to_owned()].into();
        let r = clean_old_jobs(dir, Duration::from_secs(10), later, &waited).unwrap();
        assert_eq!(
            r,
            CleanReport {
                removed: 2,
                kept: 1,
                failed: 0
            }
        );
        assert_eq!(names(dir), [".tmp", "20250101000000000003"]);
        // Nothing is old yet at "now".
        job(dir, "20250101000000000004", true);
        let r = clean_old_jobs(
            dir,
            Duration::from_secs(10),
            SystemTime::now(),
            &HashSet::new(),
        )
        .unwrap();
        assert_eq!(r.removed, 0);
        assert_eq!(r.kept, 2);
    }

    #[test]
    fn zero_keeps_everything_and_a_missing_dir_is_fine() {
        let t = tempfile::tempdir().unwrap();
        job(t.path(), "20250101000000000001", true);
        let far = SystemTime::now() + Duration::from_secs(1_000_000);
        let r = clean_old_jobs(t.path(), Duration::ZERO, far, &HashSet::new()).unwrap();
        assert_eq!(r, CleanReport::default());
        assert_eq!(names(t.path()).len(), 1);
        let gone = t.path().join("nope");
        assert_eq!(
            clean_old_jobs(&gone, Duration::from_secs(1), far, &HashSet::new()).unwrap(),
            CleanReport::default()
        );
    }
}
