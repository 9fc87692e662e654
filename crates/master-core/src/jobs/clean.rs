//! The bounded job cache: jobs older than `keep_jobs_seconds` are removed, as Salt's
//! `local_cache.clean_old_jobs` does on every maintenance tick, over the same layout
//! (`jobs/<h[:2]>/<h[2:]>/`, see [`super::local_cache`]):
//!
//! * a job's age is the modification time of its `jid` file (mtime, not ctime: a `chown -R` of
//!   the cache after an upgrade changes ctime; salt #68351); an old job's whole directory goes;
//! * a job directory without a `jid` file is a corrupted entry (returns for a job this master
//!   did not publish, or a kill before `prep_jid` wrote it): removed at once, as Salt does
//!   (a job being stored is never such a directory: [`super::files`] makes it with its `jid`
//!   file and renames it into place);
//! * a first-level directory that was empty when listed is removed once its own mtime is
//!   older than `keep_jobs_seconds`.
//!
//! Unlike Salt, jobs a `salt` command is still waiting on are skipped whatever their age, and
//! entries that are not directories (and our `.tmp`) are left alone instead of failing the
//! sweep. The sweep runs on a blocking thread, so it never holds a lock that the request
//! server needs.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::files::TMP_DIR;
use super::local_cache::JID;

/// What one sweep did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CleanReport {
    /// Job directories removed (empty first-level directories included).
    pub removed: usize,
    /// Job directories kept (young enough, or waited on).
    pub kept: usize,
    /// Job directories that could not be read or removed (logged, retried next tick).
    pub failed: usize,
}

fn older(now: SystemTime, t: SystemTime, keep: Duration) -> bool {
    now.duration_since(t).is_ok_and(|age| age > keep)
}

/// Remove every job under `dir` (`{cachedir}/jobs`) older than `keep` at `now`, except those
/// in `waited`. `keep` of zero keeps everything (Salt's `keep_jobs_seconds: 0`).
pub fn clean_old_jobs(
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
    let mut empty_tops = Vec::new();
    for entry in entries {
        let entry = entry?;
        if entry.file_name() == TMP_DIR || !entry.file_type()?.is_dir() {
            continue;
        }
        let top = entry.path();
        let finals: Vec<_> = match std::fs::read_dir(&top) {
            Ok(rd) => rd.flatten().collect(),
            Err(e) => {
                tracing::debug!("Job cache: cannot read {}: {e}", top.display());
                report.failed += 1;
                continue;
            }
        };
        if finals.is_empty() {
            empty_tops.push(top);
            continue;
        }
        for f in finals {
            let path = f.path();
            let jid_file = path.join(JID);
            let stamp = match std::fs::metadata(&jid_file) {
                Ok(m) if m.is_file() => m.modified(),
                // No jid file: a corrupted entry, scrubbed (Salt's words below).
                _ => {
                    match remove(&path) {
                        Ok(()) => report.removed += 1,
                        Err(e) => {
                            tracing::error!("Unable to remove {}: {e}", path.display());
                            report.failed += 1;
                        }
                    }
                    continue;
                }
            };
            let old = match stamp {
                Ok(t) => older(now, t, keep),
                Err(e) => {
                    tracing::debug!("Job cache: cannot read the age of {}: {e}", path.display());
                    report.failed += 1;
                    continue;
                }
            };
            let jid = || std::fs::read_to_string(&jid_file).unwrap_or_default();
            if !old || waited.contains(jid().trim_end()) {
                report.kept += 1;
                continue;
            }
            match remove(&path) {
                Ok(()) => report.removed += 1,
                Err(e) => {
                    tracing::error!("Unable to remove {}: {e}", path.display());
                    report.failed += 1;
                }
            }
        }
    }
    // First-level directories that were empty, once old enough (one made just now is about
    // to get its job).
    for top in empty_tops {
        let old = std::fs::metadata(&top)
            .and_then(|m| m.modified())
            .is_ok_and(|t| older(now, t, keep));
        if old {
            match std::fs::remove_dir(&top) {
                Ok(()) => report.removed += 1,
                // Not empty any more: a job arrived since.
                Err(_) => report.kept += 1,
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
    use crate::jobs::local_cache::jid_dir;
    use salt_pki::HashType;

    fn job(dir: &Path, jid: &str, with_jid_file: bool) {
        let d = jid_dir(dir, jid, HashType::Sha256);
        std::fs::create_dir_all(d.join("m1")).unwrap();
        std::fs::write(d.join("m1/return.p"), b"\xc3").unwrap();
        std::fs::write(d.join(".load.p"), b"\x80").unwrap();
        if with_jid_file {
            std::fs::write(d.join("jid"), jid).unwrap();
        }
    }

    fn exists(dir: &Path, jid: &str) -> bool {
        jid_dir(dir, jid, HashType::Sha256).exists()
    }

    #[test]
    fn old_jobs_go_young_and_waited_ones_stay() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        job(dir, "20250101000000000001", true);
        job(dir, "20250101000000000002", false);
        job(dir, "20250101000000000003", true);
        std::fs::create_dir_all(dir.join(".tmp")).unwrap();
        std::fs::create_dir_all(dir.join("zz")).unwrap();
        let later = SystemTime::now() + Duration::from_secs(100);
        let waited: HashSet<String> = ["20250101000000000003".to_owned()].into();
        let r = clean_old_jobs(dir, Duration::from_secs(10), later, &waited).unwrap();
        assert_eq!(
            r,
            CleanReport {
                removed: 3,
                kept: 1,
                failed: 0
            }
        );
        assert!(!exists(dir, "20250101000000000001"));
        assert!(!exists(dir, "20250101000000000002"));
        assert!(exists(dir, "20250101000000000003"));
        assert!(!dir.join("zz").exists(), "an old empty first level goes");
        assert!(dir.join(".tmp").exists());
        // Nothing with a jid file is old yet at "now"; one without goes at once.
        job(dir, "20250101000000000004", true);
        job(dir, "20250101000000000005", false);
        std::fs::create_dir_all(dir.join("zy")).unwrap();
        let r = clean_old_jobs(
            dir,
            Duration::from_secs(10),
            SystemTime::now(),
            &HashSet::new(),
        )
        .unwrap();
        assert_eq!(r.removed, 1);
        assert_eq!(r.kept, 2);
        assert!(!exists(dir, "20250101000000000005"));
        assert!(dir.join("zy").exists(), "a young empty first level stays");
    }

    #[test]
    fn zero_keeps_everything_and_a_missing_dir_is_fine() {
        let t = tempfile::tempdir().unwrap();
        job(t.path(), "20250101000000000001", false);
        let far = SystemTime::now() + Duration::from_secs(1_000_000);
        let r = clean_old_jobs(t.path(), Duration::ZERO, far, &HashSet::new()).unwrap();
        assert_eq!(r, CleanReport::default());
        assert!(exists(t.path(), "20250101000000000001"));
        let gone = t.path().join("nope");
        assert_eq!(
            clean_old_jobs(&gone, Duration::from_secs(1), far, &HashSet::new()).unwrap(),
            CleanReport::default()
        );
    }
}
