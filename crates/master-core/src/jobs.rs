//! The job cache behind a trait ([`JobStore`]) with two drivers, and the registry of the
//! `salt` commands waiting for returns.
//!
//! * [`FileJobs`] (`master_job_cache: local_cache`, the default): the files of
//!   `{cachedir}/jobs`, as before.
//! * [`PgJobs`] (`master_job_cache: pgjsonb`, docs/group.md): the tables of Salt's
//!   `pgjsonb` returner in the group's PostgreSQL; every return stored once per
//!   `(jid, id)`, and the returns other masters store are handed to the commands waiting
//!   here.
//!
//! A waiting command gets each minion's return once, however it arrives (directly, from
//! another master through the database, or both).

mod files;
mod pg;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rmpv::Value;
use tokio::sync::mpsc;

pub(crate) use files::write_unsynced;
pub use files::{FileJobs, TMP_DIR, sweep_stale_dot_temps, sweep_stale_temps};
pub use pg::PgJobs;

use crate::jobs_clean::CleanReport;

/// The group's presence: (minion, the master holding it, whether that master is alive).
pub type Presence = Vec<(String, String, bool)>;

/// A return delivered to a waiting `salt` command: (minion id, return load).
pub type ReturnEvent = (String, Value);

/// Job cache problems.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The jid is not safe to use as a directory name.
    #[error("invalid jid {0:?}")]
    BadJid(String),
    /// Creating a directory or writing a file failed.
    #[error("job cache: {0}")]
    Io(#[from] std::io::Error),
    /// The database driver.
    #[error("job cache (pgjsonb): {0}")]
    Db(String),
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

/// Where jobs and returns are kept (Salt's `master_job_cache` returner functions).
pub trait JobStore: Send + Sync + std::fmt::Debug {
    /// `local_cache` or `pgjsonb`.
    fn driver(&self) -> &'static str;
    /// Salt's `save_load`.
    fn save_load(&self, jid: &str, load: &Value) -> Result<(), JobError>;
    /// Salt's `returner`: one minion's return load (stored once per `(jid, id)`).
    fn save_return(&self, jid: &str, id: &str, load: &Value) -> Result<(), JobError>;
    /// Salt's `get_load`.
    fn load(&self, jid: &str) -> Result<Option<Value>, JobError>;
    /// Salt's `get_jid`: (minion id, return load), by id.
    fn returns(&self, jid: &str) -> Result<Vec<(String, Value)>, JobError>;
    /// Salt's `get_jids`: every job with its load, by jid.
    fn jobs(&self) -> Result<Vec<(String, Value)>, JobError>;
    /// Salt's `clean_old_jobs`: drop what is older than `keep`, never a job in `waited`.
    fn clean(
        &self,
        keep: Duration,
        now: SystemTime,
        waited: &HashSet<String>,
    ) -> Result<CleanReport, JobError>;
    /// Record that this master holds minion `id` now (the group's presence; files: nothing).
    fn seen(&self, id: &str) {
        let _ = id;
    }
    /// This master stops cleanly: clear the presence of the minions it held.
    fn leave(&self) {}
    /// The group's presence: (minion, the master that holds it, whether that master is
    /// alive); `None` without a group database.
    fn presence(&self) -> Result<Option<Presence>, JobError> {
        Ok(None)
    }
    /// Start background work (the database driver: returns stored by other masters go to
    /// `waiters`; spool replay).
    fn start(&self, waiters: Arc<Waiters>) {
        let _ = waiters;
    }
}

struct Waiter {
    tx: mpsc::UnboundedSender<ReturnEvent>,
    had: HashSet<String>,
}

/// The `salt` commands waiting for returns, by jid.
#[derive(Default)]
pub struct Waiters(Mutex<HashMap<String, Waiter>>);

impl std::fmt::Debug for Waiters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiters").finish_non_exhaustive()
    }
}

impl Waiters {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiter>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hand `load` to the command waiting on `jid`, unless it had `id`'s return already.
    pub fn deliver(&self, jid: &str, id: &str, load: &Value) {
        let mut w = self.lock();
        if let Some(waiter) = w.get_mut(jid)
            && waiter.had.insert(id.to_owned())
        {
            let _ = waiter.tx.send((id.to_owned(), load.clone()));
        }
    }

    /// The waited jids with the minions each has had.
    pub fn waited(&self) -> Vec<(String, Vec<String>)> {
        self.lock()
            .iter()
            .map(|(jid, w)| (jid.clone(), w.had.iter().cloned().collect()))
            .collect()
    }
}

/// The job cache in use and the registry of waiting `salt` commands.
#[derive(Debug)]
pub struct Jobs {
    store: Box<dyn JobStore>,
    waiters: Arc<Waiters>,
    dir: std::path::PathBuf,
}

impl Jobs {
    /// The files driver on `dir` (`{cachedir}/jobs`); see [`FileJobs::new`].
    pub fn new(dir: std::path::PathBuf) -> Self {
        Self::with_store(Box::new(FileJobs::new(dir.clone())), dir)
    }

    /// Over `store` (`dir`: `{cachedir}/jobs`, shown in messages).
    pub fn with_store(store: Box<dyn JobStore>, dir: std::path::PathBuf) -> Self {
        let waiters = Arc::new(Waiters::default());
        store.start(waiters.clone());
        Self {
            store,
            waiters,
            dir,
        }
    }

    /// The driver.
    pub fn store(&self) -> &dyn JobStore {
        self.store.as_ref()
    }

    /// `{cachedir}/jobs`.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// Start listening for returns of `jid` (before publishing it, so none is missed).
    pub fn subscribe(&self, jid: &str) -> mpsc::UnboundedReceiver<ReturnEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.waiters.lock().insert(
            jid.to_owned(),
            Waiter {
                tx,
                had: HashSet::new(),
            },
        );
        rx
    }

    /// The jids a `salt` command is waiting on now (never cleaned, whatever their age).
    pub fn waited(&self) -> HashSet<String> {
        self.waiters.lock().keys().cloned().collect()
    }

    /// Hand a return to a waiting `salt` command without storing it (`job_cache: False`).
    pub fn deliver(&self, jid: &str, id: &str, load: &Value) {
        self.waiters.deliver(jid, id, load);
    }

    /// Stop listening for `jid`.
    pub fn unsubscribe(&self, jid: &str) {
        self.waiters.lock().remove(jid);
    }

    /// Save the job load.
    pub fn store_job(&self, jid: &str, load: &Value) -> Result<(), JobError> {
        self.store.save_load(jid, load)
    }

    /// Save a minion's return (id already validated) and hand it to a waiting command
    /// (even when it could not be stored).
    pub fn store_return(&self, jid: &str, id: &str, load: &Value) -> Result<(), JobError> {
        let r = self.store.save_return(jid, id, load);
        if !matches!(r, Err(JobError::BadJid(_))) {
            self.deliver(jid, id, load);
        }
        r
    }

    /// Salt's `clean_old_jobs` over the driver in use.
    pub fn clean(&self, keep: Duration, now: SystemTime) -> Result<CleanReport, JobError> {
        if keep.is_zero() {
            return Ok(CleanReport::default());
        }
        self.store.clean(keep, now, &self.waited())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_are_stored_and_streamed_once() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = Jobs::new(dir.path().join("jobs"));
        let mut rx = jobs.subscribe("20250101000000000000");
        let load = Value::Map(vec![(Value::from("return"), Value::Boolean(true))]);
        jobs.store_return("20250101000000000000", "m1", &load)
            .unwrap();
        let (id, got) = rx.try_recv().unwrap();
        assert_eq!(id, "m1");
        assert_eq!(got, load);
        // The same return again (another master, a minion resending): not delivered twice.
        jobs.deliver("20250101000000000000", "m1", &load);
        assert!(rx.try_recv().is_err());
        let bytes =
            std::fs::read(dir.path().join("jobs/20250101000000000000/m1/return.p")).unwrap();
        assert_eq!(salt_proto::decode(&bytes).unwrap(), load);
        assert_eq!(
            jobs.store().returns("20250101000000000000").unwrap(),
            vec![("m1".to_owned(), load.clone())]
        );
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
