//! Job cache and return streaming.
//!
//! Layout under `{cachedir}/jobs/<jid>/`: `.load.p` (msgpack of the job load) and
//! `<minion id>/return.p` (msgpack of the return load, `tok`/`nonce` removed). Every file is
//! written to a temporary name and renamed, so a crash or shutdown never leaves a
//! half-written return (returns are not fsynced; the job load is). Returns for a job a `salt` command is waiting on are also sent to
//! it through a channel.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use rmpv::Value;
use tokio::sync::mpsc;

/// A return delivered to a waiting `salt` command: (minion id, return load).
pub type ReturnEvent = (String, Value);

/// Job cache problems.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// The jid is not safe to use as a directory name.
    #[error("invalid jid {0:?}")]
    BadJid(String),
    /// Writing failed.
    #[error("job cache: {0}")]
    Write(#[from] salt_pki::Error),
    /// Creating a directory failed.
    #[error("job cache: {0}")]
    Io(#[from] std::io::Error),
}

/// Job cache and the registry of waiting `salt` commands.
#[derive(Debug)]
pub struct Jobs {
    dir: PathBuf,
    waiters: Mutex<HashMap<String, mpsc::UnboundedSender<ReturnEvent>>>,
}

/// A jid we accept as a directory name: Salt's 20 digits, optionally `_<pid>` or other
/// alphanumerics (no separators, no dots).
pub fn safe_jid(jid: &str) -> bool {
    !jid.is_empty()
        && jid.len() <= 64
        && jid
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl Jobs {
    /// Jobs live in `dir` (`{cachedir}/jobs`).
    pub fn new(dir: PathBuf) -> Self {
        Jobs {
            dir,
            waiters: Mutex::new(HashMap::new()),
        }
    }

    /// Start listening for returns of `jid` (before publishing it, so none is missed).
    pub fn subscribe(&self, jid: &str) -> mpsc::UnboundedReceiver<ReturnEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.waiters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(jid.to_owned(), tx);
        rx
    }

    /// Stop listening for `jid`.
    pub fn unsubscribe(&self, jid: &str) {
        self.waiters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(jid);
    }

    /// Save the job load.
    pub fn store_job(&self, jid: &str, load: &Value) -> Result<(), JobError> {
        if !safe_jid(jid) {
            return Err(JobError::BadJid(jid.to_owned()));
        }
        let dir = self.dir.join(jid);
        std::fs::create_dir_all(&dir)?;
        salt_pki::files::atomic_write(&dir.join(".load.p"), &salt_proto::encode(load), 0o600)?;
        Ok(())
    }

    /// Save a minion's return (id already validated) and hand it to a waiting command.
    pub fn store_return(&self, jid: &str, id: &str, load: &Value) -> Result<(), JobError> {
        if !safe_jid(jid) {
            return Err(JobError::BadJid(jid.to_owned()));
        }
        let dir = self.dir.join(jid).join(id);
        std::fs::create_dir_all(&dir)?;
        write_unsynced(&dir.join("return.p"), &salt_proto::encode(load))?;
        let waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = waiters.get(jid) {
            let _ = tx.send((id.to_owned(), load.clone()));
        }
        Ok(())
    }
}

/// Write `path` (mode 0600) via a temporary file and a rename (never half-written), without
/// fsync: a return is not worth two disk flushes (file and directory) each, and 10,000 minions
/// answering one job would otherwise cost 20,000 flushes. Salt's local job cache does not
/// flush either. A crash may lose the newest returns, never corrupt one.
pub(crate) fn write_unsynced(path: &std::path::Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let tmp = path.with_extension(format!(
        "tmp.{}.{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    if let Err(e) = f.write_all(data).and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_are_stored_and_streamed() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = Jobs::new(dir.path().join("jobs"));
        let mut rx = jobs.subscribe("20250101000000000000");
        let load = Value::Map(vec![(Value::from("return"), Value::Boolean(true))]);
        jobs.store_return("20250101000000000000", "m1", &load)
            .unwrap();
        let (id, got) = rx.try_recv().unwrap();
        assert_eq!(id, "m1");
        assert_eq!(got, load);
        let bytes =
            std::fs::read(dir.path().join("jobs/20250101000000000000/m1/return.p")).unwrap();
        assert_eq!(salt_proto::decode(&bytes).unwrap(), load);
        jobs.unsubscribe("20250101000000000000");
        jobs.store_return("20250101000000000000", "m2", &load)
            .unwrap();
        assert!(rx.try_recv().is_err());
        assert!(matches!(
            jobs.store_return("../x", "m1", &load),
            Err(JobError::BadJid(_))
        ));
    }
}
