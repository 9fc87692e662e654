//! Where jobs and returns are kept: the [`JobStore`] trait both drivers implement, and its
//! error.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rmpv::Value;

use super::clean::CleanReport;
use super::waiters::Waiters;

/// The group's presence: (minion, the master holding it, whether that master is alive).
pub(crate) type Presence = Vec<(String, String, bool)>;

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

/// `f` on each of `items`, all of them tried: the first error, if any.
pub(crate) fn each_tried<T>(
    items: impl IntoIterator<Item = T>,
    mut f: impl FnMut(T) -> Result<(), JobError>,
) -> Result<(), JobError> {
    let mut first = Ok(());
    for item in items {
        if let Err(e) = f(item)
            && first.is_ok()
        {
            first = Err(e);
        }
    }
    first
}

/// Where jobs and returns are kept (Salt's `master_job_cache` returner functions).
pub trait JobStore: Send + Sync + std::fmt::Debug {
    /// `local_cache` or `pgjsonb`.
    fn driver(&self) -> &'static str;
    /// Whether other masters read this store (a master group's database): a `salt` command's
    /// wait then ends only once its returns are written, so `jobs.*` on any master sees them.
    fn read_by_other_masters(&self) -> bool {
        false
    }
    /// Salt's `save_load`.
    fn save_load(&self, jid: &str, load: &Value) -> Result<(), JobError>;
    /// Salt's `prep_jid` for a jid the master made for a minion's own job (`jid: req`):
    /// the job's place, marked `nocache` when its returns are not to be kept (files only).
    fn prep_jid(&self, jid: &str, nocache: bool) -> Result<(), JobError> {
        let _ = (jid, nocache);
        Ok(())
    }
    /// Salt's `save_minions`: the minions a job targets (`.minions.p`; other drivers keep
    /// nothing).
    fn save_minions(&self, jid: &str, minions: &[String]) -> Result<(), JobError> {
        let _ = (jid, minions);
        Ok(())
    }
    /// Salt's `returner`: one minion's return load (stored once per `(jid, id)`).
    fn save_return(&self, jid: &str, id: &str, load: &Value) -> Result<(), JobError>;
    /// Several returns of one job (the return sink's batches): each as [`save_return`]
    /// would; all are tried, the first error is returned.
    ///
    /// [`save_return`]: JobStore::save_return
    fn save_returns(&self, jid: &str, returns: &[(String, Value)]) -> Result<(), JobError> {
        each_tried(returns, |(id, load)| self.save_return(jid, id, load))
    }
    /// [`save_returns`] with each load as msgpack (the return sink keeps them so): decoded
    /// for stores that need the value; the file store writes the bytes as they are.
    ///
    /// [`save_returns`]: JobStore::save_returns
    fn save_encoded_returns(
        &self,
        jid: &str,
        returns: &[(String, Vec<u8>)],
    ) -> Result<(), JobError> {
        each_tried(returns, |(id, bytes)| {
            let load = salt_proto::decode(bytes).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("return of {id}: {e}"),
                )
            })?;
            self.save_return(jid, id, &load)
        })
    }
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
