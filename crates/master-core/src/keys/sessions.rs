//! Per-minion session keys (protocol v3, §6.2): `{cachedir}/sessions/<id>`, a Crypticle key
//! string, mode 0600, written atomically (a new one created whole under its name with
//! `O_TMPFILE` + `linkat`, a replaced one tmp + rename) but not fsynced — two disk flushes per
//! new minion capped a sign-in storm at ~150/s per worker here (Salt's session cache does not
//! flush either); a key lost in a crash is replaced at the minion's next sign-in — and
//! regenerated when older than `publish_session`.
//! Survives restarts; cached in memory by file mtime, the file re-checked (one `stat`) at most
//! every [`RECHECK`] per id rather than on every request (a third of the file-system calls of
//! a small file-server request), so a key replaced or removed on disk by another process is
//! noticed within that time.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use salt_pki::Crypticle;

use crate::jobs::write_unsynced;

/// How long a cached key is used without looking at its file again.
pub const RECHECK: Duration = Duration::from_secs(1);

/// A cached key: its file's mtime, when that was last checked, the key.
type Cached = (SystemTime, Instant, Crypticle);

/// Session-key store.
#[derive(Debug)]
pub struct Sessions {
    dir: PathBuf,
    max_age: Duration,
    cache: Mutex<HashMap<String, Cached>>,
}

/// Session-key file problems.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// Reading or writing the file failed.
    #[error("session key for {id}: {source}")]
    Pki {
        /// Minion id.
        id: String,
        /// Cause.
        source: salt_pki::Error,
    },
    /// Writing the file failed.
    #[error("session key for {id}: {source}")]
    Io {
        /// Minion id.
        id: String,
        /// Cause.
        source: std::io::Error,
    },
}

impl Sessions {
    /// Keys live in `dir` (created by the caller) and expire after `max_age`. Temporary files
    /// a killed master left in `dir` are removed first.
    pub fn new(dir: PathBuf, max_age: Duration) -> Self {
        match crate::jobs::sweep_stale_dot_temps(&dir) {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                "Removed {n} temporary session key file(s) left by an earlier run in {}",
                dir.display()
            ),
            Err(e) => tracing::warn!("Could not sweep {}: {e}", dir.display()),
        }
        Sessions {
            dir,
            max_age,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The current key of a (valid) id, if there is a fresh one on disk.
    pub fn existing(&self, id: &str) -> Option<Crypticle> {
        let now = Instant::now();
        {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((mtime, checked, c)) = cache.get(id)
                && now.saturating_duration_since(*checked) < RECHECK
                && !self.expired(*mtime)
            {
                return Some(c.clone());
            }
        }
        let path = self.dir.join(id);
        let mtime = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
        if self.expired(mtime) {
            return None;
        }
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, checked, c)) = cache.get_mut(id).filter(|(t, ..)| *t == mtime) {
            *checked = now;
            return Some(c.clone());
        }
        let text = std::fs::read_to_string(&path).ok()?;
        let c = Crypticle::from_key_string(text.trim()).ok()?;
        cache.insert(id.to_owned(), (mtime, now, c.clone()));
        Some(c)
    }

    /// The key of `id`, created (or replaced, when expired) if needed.
    pub fn get_or_create(&self, id: &str) -> Result<Crypticle, SessionError> {
        if let Some(c) = self.existing(id) {
            return Ok(c);
        }
        let c = Crypticle::generate();
        let path = self.dir.join(id);
        let io_err = |source| SessionError::Io {
            id: id.to_owned(),
            source,
        };
        // A new minion's key is created whole under its name (no temporary name, no
        // rename); an expired one is replaced by a temp file renamed over it.
        let created =
            match salt_keystore::create_linked(&path, c.key_string().as_bytes(), 0o600, false) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
                Err(e) => return Err(io_err(e)),
            };
        let meta = match created {
            Some(f) => f.metadata(),
            None => {
                write_unsynced(&path, c.key_string().as_bytes()).map_err(io_err)?;
                std::fs::metadata(&path)
            }
        };
        let mtime = meta
            .and_then(|m| m.modified())
            .unwrap_or_else(|_| SystemTime::now());
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.insert(id.to_owned(), (mtime, Instant::now(), c.clone()));
        Ok(c)
    }

    fn expired(&self, mtime: SystemTime) -> bool {
        !self.max_age.is_zero()
            && SystemTime::now()
                .duration_since(mtime)
                .is_ok_and(|age| age > self.max_age)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn created_once_then_reused_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let s = Sessions::new(dir.path().to_owned(), Duration::from_secs(86400));
        assert!(s.existing("m1").is_none());
        let a = s.get_or_create("m1").unwrap();
        let b = s.get_or_create("m1").unwrap();
        assert_eq!(a.key_string(), b.key_string());
        let meta = std::fs::metadata(dir.path().join("m1")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        // A fresh store (a restarted master) reads the same key.
        let s2 = Sessions::new(dir.path().to_owned(), Duration::from_secs(86400));
        assert_eq!(s2.existing("m1").unwrap().key_string(), a.key_string());
    }

    #[test]
    fn a_key_replaced_or_removed_on_disk_is_noticed_within_recheck() {
        let dir = tempfile::tempdir().unwrap();
        let s = Sessions::new(dir.path().to_owned(), Duration::from_secs(86400));
        let a = s.get_or_create("m1").unwrap();
        let other = Crypticle::generate();
        std::fs::write(dir.path().join("m1"), other.key_string()).unwrap();
        // The file's mtime may equal the first write's at coarse resolution: set it apart.
        let f = std::fs::File::options()
            .write(true)
            .open(dir.path().join("m1"))
            .unwrap();
        f.set_modified(SystemTime::now() + Duration::from_secs(5))
            .unwrap();
        std::thread::sleep(RECHECK + Duration::from_millis(50));
        assert_eq!(s.existing("m1").unwrap().key_string(), other.key_string());
        assert_ne!(a.key_string(), other.key_string());
        std::fs::remove_file(dir.path().join("m1")).unwrap();
        std::thread::sleep(RECHECK + Duration::from_millis(50));
        assert!(s.existing("m1").is_none());
    }

    #[test]
    fn temporaries_of_dead_processes_are_swept_at_start() {
        let dir = tempfile::tempdir().unwrap();
        // No process has pid 0x7ffffff0 (above pid_max); ours counts as an earlier holder.
        let dead = dir.path().join(".m1.tmp.2147483632.0");
        let ours = dir.path().join(format!(".m2.tmp.{}.3", std::process::id()));
        let live = dir.path().join(".m3.tmp.1.0"); // init is alive
        let key = dir.path().join("m4");
        for p in [&dead, &ours, &live, &key] {
            std::fs::write(p, "x").unwrap();
        }
        let _s = Sessions::new(dir.path().to_owned(), Duration::from_secs(86400));
        assert!(!dead.exists() && !ours.exists());
        assert!(live.exists() && key.exists());
    }
}
