//! The job cache's PostgreSQL driver (`master_job_cache: pgjsonb`): [`salt_pgstore::JobDb`]
//! with loads and returns as JSON (Salt's `pgjsonb` rows), and the returns other masters
//! store handed to the commands waiting here.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rmpv::Value;
use salt_pgstore::{JobDb, ReturnHooks, ReturnRow, Stored};

use super::clean::CleanReport;
use super::jid::safe_jid;
use super::store::{JobError, JobStore, Presence};
use super::waiters::Waiters;
use salt_compat::json::msgpack_to_json;

/// Salt's `pgjsonb` tables in the group database.
#[derive(Debug)]
pub(crate) struct PgJobs {
    db: Arc<JobDb>,
}

fn db_err(e: salt_pgstore::Error) -> JobError {
    JobError::Db(e.to_string())
}

/// A stored JSON document as Salt's value (`None`: not JSON).
pub(super) fn parse(text: &str) -> Option<Value> {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .map(|j| salt_compat::json::json_to_msgpack(&j))
}

/// Rows of a key and its JSON document as Salt's values; a row that is not JSON is left out.
pub(super) fn parse_rows(rows: Vec<(String, String)>) -> Vec<(String, Value)> {
    rows.into_iter()
        .filter_map(|(k, t)| parse(&t).map(|v| (k, v)))
        .collect()
}

impl PgJobs {
    /// Over `db` (connected or not: writes spool while it is down).
    pub(crate) fn new(db: Arc<JobDb>) -> Self {
        Self { db }
    }
}

struct Hooks(Arc<Waiters>);

impl ReturnHooks for Hooks {
    fn waited(&self) -> Vec<(String, Vec<String>)> {
        self.0.waited()
    }

    fn deliver(&self, jid: &str, id: &str, full_ret: &str) {
        match parse(full_ret) {
            Some(load) => self.0.deliver(jid, id, &load),
            None => tracing::warn!("job cache: unreadable return of {id} for job {jid}"),
        }
    }
}

impl JobStore for PgJobs {
    fn driver(&self) -> &'static str {
        "pgjsonb"
    }

    fn read_by_other_masters(&self) -> bool {
        true
    }

    fn save_load(&self, jid: &str, load: &Value) -> Result<(), JobError> {
        if !safe_jid(jid) {
            return Err(JobError::BadJid(jid.to_owned()));
        }
        let text = msgpack_to_json(load).to_string();
        self.db.save_load(jid, text).map(|_| ()).map_err(db_err)
    }

    fn save_return(&self, jid: &str, id: &str, load: &Value) -> Result<(), JobError> {
        if !safe_jid(jid) {
            return Err(JobError::BadJid(jid.to_owned()));
        }
        let json = msgpack_to_json(load);
        let row = ReturnRow {
            jid: jid.to_owned(),
            id: id.to_owned(),
            fun: json
                .get("fun")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("")
                .to_owned(),
            success: json
                .get("success")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
            full_ret: json.to_string(),
        };
        // A return refreshes the presence: this master holds the minion now.
        self.db.seen(id);
        match self.db.save_return(row).map_err(db_err)? {
            Stored::Db => {}
            Stored::Spooled => tracing::debug!("return of {id} for {jid} spooled"),
        }
        Ok(())
    }

    fn load(&self, jid: &str) -> Result<Option<Value>, JobError> {
        Ok(self.db.load(jid).map_err(db_err)?.and_then(|t| parse(&t)))
    }

    fn returns(&self, jid: &str) -> Result<Vec<(String, Value)>, JobError> {
        Ok(parse_rows(self.db.returns(jid).map_err(db_err)?))
    }

    fn jobs(&self) -> Result<Vec<(String, Value)>, JobError> {
        Ok(parse_rows(self.db.jobs().map_err(db_err)?))
    }

    fn clean(
        &self,
        keep: Duration,
        _now: SystemTime,
        waited: &HashSet<String>,
    ) -> Result<CleanReport, JobError> {
        let removed = self
            .db
            .clean(keep, waited.iter().cloned().collect())
            .map_err(db_err)?;
        Ok(CleanReport {
            removed: usize::try_from(removed).unwrap_or(usize::MAX),
            ..CleanReport::default()
        })
    }

    fn seen(&self, id: &str) {
        self.db.seen(id);
    }

    fn leave(&self) {
        match self.db.leave() {
            Ok(n) => tracing::info!("group: {n} minion(s) no longer held by this master"),
            Err(e) => tracing::warn!("group: presence not cleared at shutdown: {e}"),
        }
    }

    fn presence(&self) -> Result<Option<Presence>, JobError> {
        // Alive: a heartbeat within three periods.
        let rows = self.db.presence(salt_pgstore::BEAT * 3).map_err(db_err)?;
        Ok(Some(
            rows.into_iter()
                .map(|p| (p.minion, p.master, p.master_alive))
                .collect(),
        ))
    }

    fn start(&self, waiters: Arc<Waiters>) {
        self.db.start(Arc::new(Hooks(waiters)));
    }
}
