//! Jobs: a decrypted publish load → targeting decision → function call → `_return` load.
//!
//! Pure except for [`run`], which awaits the execution module. The driver owns a
//! [`JidQueue`] to drop re-published jobs (Salt's `minion_jid_queue_hwm`, 100).

use std::collections::VecDeque;

use rmpv::Value;

use crate::matcher::{MatchContext, map_lookup, matches};
use crate::modules::{self, ExecContext};

/// Salt's default `minion_jid_queue_hwm`.
pub const JID_QUEUE_HWM: usize = 100;

/// Why a publish load was not turned into a job.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// The load is not a map.
    #[error("publish load is not a map")]
    NotAMap,
    /// One of `tgt`, `jid`, `fun`, `arg` is missing (Salt ignores such loads).
    #[error("publish load lacks {0}")]
    Missing(&'static str),
    /// A field has the wrong type.
    #[error("publish load field {0} has the wrong type")]
    BadField(&'static str),
}

/// A job the master published, with the fields the minion acts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Job id (string as sent).
    pub jid: String,
    /// Function name.
    pub fun: String,
    /// The `arg` list as published (echoed back as `fun_args`).
    pub arg: Vec<Value>,
    /// Target expression.
    pub tgt: Value,
    /// Target type (`glob` when absent).
    pub tgt_type: Option<String>,
    /// Grain delimiter when not `:`.
    pub delimiter: Option<String>,
    /// Publishing user.
    pub user: Option<Value>,
    /// `master_id`, echoed back.
    pub master_id: Option<Value>,
    /// `metadata`, echoed back when a map.
    pub metadata: Option<Value>,
    /// The whole load, for `__pub_*` kwargs.
    pub load: Value,
}

impl Job {
    /// Parse a decrypted publish load (after the serial check).
    pub fn from_load(load: Value) -> Result<Self, JobError> {
        if !load.is_map() {
            return Err(JobError::NotAMap);
        }
        let get = |k: &'static str| map_lookup(&load, k).ok_or(JobError::Missing(k));
        let tgt = get("tgt")?.clone();
        let jid = match get("jid")? {
            Value::String(s) => s.as_str().ok_or(JobError::BadField("jid"))?.to_owned(),
            Value::Integer(i) => i.to_string(),
            _ => return Err(JobError::BadField("jid")),
        };
        let fun = get("fun")?
            .as_str()
            .ok_or(JobError::BadField("fun"))?
            .to_owned();
        let arg = match get("arg")? {
            Value::Array(a) => a.clone(),
            _ => return Err(JobError::BadField("arg")),
        };
        let s = |k: &str| {
            map_lookup(&load, k)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        Ok(Self {
            jid,
            fun,
            arg,
            tgt,
            tgt_type: s("tgt_type"),
            delimiter: s("delimiter"),
            user: map_lookup(&load, "user").cloned(),
            master_id: map_lookup(&load, "master_id").cloned(),
            metadata: map_lookup(&load, "metadata")
                .filter(|m| m.is_map())
                .cloned(),
            load,
        })
    }

    /// Does this job target the minion (with its pillar, once received)?
    pub fn targets(&self, id: &str, grains: &Value, pillar: Option<&Value>) -> bool {
        matches(
            MatchContext { id, grains, pillar },
            &self.tgt,
            self.tgt_type.as_deref(),
            self.delimiter.as_deref(),
        )
    }
}

/// The last [`JID_QUEUE_HWM`] job ids seen, to ignore duplicate publishes.
#[derive(Debug, Default)]
pub struct JidQueue {
    seen: VecDeque<String>,
}

impl JidQueue {
    /// Record `jid`; returns false if it was already seen (the job must be ignored).
    pub fn insert(&mut self, jid: &str) -> bool {
        if self.seen.iter().any(|j| j == jid) {
            return false;
        }
        if self.seen.len() >= JID_QUEUE_HWM {
            self.seen.pop_front();
        }
        self.seen.push_back(jid.to_owned());
        true
    }
}

/// Run the job's function and build the `_return` command map (before the request
/// channel appends `nonce`, `ts`, `tok`, `id`). Key order follows the Python minion.
/// `None` when `saltutil.kill_job`/`term_job` ended the job: nothing is returned, as a killed
/// Python job process returns nothing.
pub async fn run(job: &Job, ctx: &ExecContext) -> Option<Value> {
    tracing::info!(
        "Starting a new job {} with PID {}",
        job.jid,
        std::process::id()
    );
    let mut reg = crate::running::register(&job.jid, &job.load);
    let outcome = tokio::select! {
        o = modules::call(&job.fun, &job.arg, &job.load, ctx) => o,
        Ok(sig) = &mut reg.stopped => {
            tracing::info!("Job {} ended by signal {sig}", job.jid);
            return None;
        }
    };
    drop(reg);
    tracing::info!(
        "Job {} execution finished, success: {}",
        job.jid,
        outcome.success()
    );
    Some(return_load(job, &ctx.id, outcome))
}

/// Build the `_return` load for a finished call.
pub fn return_load(job: &Job, id: &str, outcome: modules::CallOutcome) -> Value {
    let success = outcome.success();
    let mut m: Vec<(Value, Value)> = vec![
        ("cmd".into(), "_return".into()),
        ("id".into(), id.into()),
        ("success".into(), success.into()),
        ("return".into(), outcome.ret),
        ("retcode".into(), outcome.retcode.into()),
    ];
    if let Some(out) = outcome.out {
        m.push(("out".into(), out.into()));
    }
    m.push(("jid".into(), job.jid.clone().into()));
    m.push(("fun".into(), job.fun.clone().into()));
    m.push(("fun_args".into(), Value::Array(job.arg.clone())));
    if let Some(u) = &job.user {
        m.push(("user".into(), u.clone()));
    }
    if let Some(mid) = &job.master_id {
        m.push(("master_id".into(), mid.clone()));
    }
    if let Some(md) = &job.metadata {
        m.push(("metadata".into(), md.clone()));
    }
    Value::Map(m)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn load(fun: &str, tgt: &str) -> Value {
        Value::Map(vec![
            ("fun".into(), fun.into()),
            ("arg".into(), Value::Array(vec![])),
            ("tgt".into(), tgt.into()),
            ("jid".into(), "20261122012345678901".into()),
            ("ret".into(), "".into()),
            ("tgt_type".into(), "glob".into()),
            ("user".into(), "root".into()),
        ])
    }

    #[test]
    fn parse_and_target() {
        let j = Job::from_load(load("test.ping", "m*")).unwrap();
        assert_eq!(j.jid, "20261122012345678901");
        assert!(j.targets("m1", &Value::Map(vec![]), None));
        assert!(!j.targets("x1", &Value::Map(vec![]), None));
        assert_eq!(Job::from_load(Value::from(1)), Err(JobError::NotAMap));
        let mut l = load("test.ping", "*");
        if let Value::Map(m) = &mut l {
            m.retain(|(k, _)| k.as_str() != Some("arg"));
        }
        assert_eq!(Job::from_load(l), Err(JobError::Missing("arg")));
    }

    #[test]
    fn jid_queue_drops_duplicates_and_forgets_old() {
        let mut q = JidQueue::default();
        assert!(q.insert("1"));
        assert!(!q.insert("1"));
        for i in 2..=JID_QUEUE_HWM + 1 {
            assert!(q.insert(&i.to_string()));
        }
        assert!(q.insert("1"), "evicted after hwm");
    }

    #[tokio::test]
    async fn ping_return_load_shape() {
        let j = Job::from_load(load("test.ping", "m1")).unwrap();
        let ctx = ExecContext::new("m1", Arc::new(Value::Map(vec![])));
        let r = run(&j, &ctx).await.unwrap();
        let Value::Map(m) = &r else { panic!() };
        let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str().unwrap()).collect();
        assert_eq!(
            keys,
            [
                "cmd", "id", "success", "return", "retcode", "jid", "fun", "fun_args", "user"
            ]
        );
        assert_eq!(map_lookup(&r, "return"), Some(&Value::Boolean(true)));
        assert_eq!(map_lookup(&r, "retcode"), Some(&Value::from(0)));
        let bad = run(&Job::from_load(load("no.such", "m1")).unwrap(), &ctx)
            .await
            .unwrap();
        assert_eq!(map_lookup(&bad, "success"), Some(&Value::Boolean(false)));
        assert_eq!(map_lookup(&bad, "out"), Some(&Value::from("nested")));
    }
}
