//! `master_job_cache: postgres`: Salt's `postgres` returner tables
//! ([`salt_pgstore::PgReturner`]), rows written as Salt's returner writes them (JSON text by
//! `salt.utils.json.dumps`: [`salt_render::py_json`]).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rmpv::Value;
use salt_pgstore::{PgReturn, PgReturner};
use salt_render::{JsonOpts, py_json};

use super::clean::CleanReport;
use super::jid::safe_jid;
use super::pg::{parse, parse_rows};
use super::store::{JobError, JobStore};

/// Salt's `postgres` returner as the job cache.
#[derive(Debug)]
pub struct PostgresJobs {
    db: Arc<PgReturner>,
}

impl PostgresJobs {
    /// Over `db`.
    pub fn new(db: Arc<PgReturner>) -> Self {
        Self { db }
    }
}

fn db_err(e: salt_pgstore::Error) -> JobError {
    JobError::Db(format!("postgres returner: {e}"))
}

fn get<'a>(load: &'a Value, key: &str) -> Option<&'a Value> {
    load.as_map()?
        .iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map(|(_, v)| v)
}

/// `salt.utils.json.dumps(v)`: the JSON text of Salt's `postgres` returner rows.
pub fn salt_json(v: &Value) -> String {
    py_json(v, JsonOpts::SALT)
}

/// The `salt_returns` row of a return load, as Salt's `postgres.returner` makes it.
pub fn return_row(jid: &str, id: &str, load: &Value) -> PgReturn {
    PgReturn {
        fun: get(load, "fun")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        jid: jid.to_owned(),
        ret: salt_json(get(load, "return").unwrap_or(&Value::Nil)),
        id: id.to_owned(),
        // `ret.get("success", False)`: a bool; anything else is what Python's truth says
        // psycopg2 would refuse, so only `true` counts.
        success: get(load, "success").and_then(Value::as_bool) == Some(true),
        full_ret: salt_json(load),
    }
}

impl JobStore for PostgresJobs {
    fn driver(&self) -> &'static str {
        "postgres"
    }

    fn save_load(&self, jid: &str, load: &Value) -> Result<(), JobError> {
        if !safe_jid(jid) {
            return Err(JobError::BadJid(jid.to_owned()));
        }
        self.db.save_load(jid, salt_json(load)).map_err(db_err)
    }

    fn save_return(&self, jid: &str, id: &str, load: &Value) -> Result<(), JobError> {
        if !safe_jid(jid) {
            return Err(JobError::BadJid(jid.to_owned()));
        }
        self.db
            .save_return(return_row(jid, id, load))
            .map_err(db_err)
    }

    fn load(&self, jid: &str) -> Result<Option<Value>, JobError> {
        Ok(self.db.load(jid).map_err(db_err)?.and_then(|t| parse(&t)))
    }

    fn returns(&self, jid: &str) -> Result<Vec<(String, Value)>, JobError> {
        // Salt's `get_jid` keeps the last row of a minion.
        let mut out: Vec<(String, Value)> = Vec::new();
        for (id, text) in self.db.returns(jid).map_err(db_err)? {
            let Some(v) = parse(&text) else { continue };
            match out.last_mut() {
                Some((last, slot)) if *last == id => *slot = v,
                _ => out.push((id, v)),
            }
        }
        Ok(out)
    }

    fn jobs(&self) -> Result<Vec<(String, Value)>, JobError> {
        Ok(parse_rows(self.db.jobs().map_err(db_err)?))
    }

    /// Salt's `postgres` returner has no `clean_old_jobs`: its rows stay (`keep_jobs` does
    /// not apply, as in Salt).
    fn clean(
        &self,
        _keep: Duration,
        _now: SystemTime,
        _waited: &HashSet<String>,
    ) -> Result<CleanReport, JobError> {
        Ok(CleanReport::default())
    }
}
