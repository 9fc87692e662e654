//! Jobs: a decrypted publish load → targeting decision → function call → `_return` load.
//!
//! Pure except for [`run`], which awaits the execution module. The driver owns a
//! [`JidQueue`] to drop re-published jobs (Salt's `minion_jid_queue_hwm`, 100).

use std::collections::VecDeque;

use rmpv::Value;

use salt_proto::ValueExt;
use salt_proto::msg::{JobLoad, OutAt, ReturnLoad};

use crate::matcher::{MatchContext, matches};
use crate::modules::{self, ExecContext};

/// Salt's default `minion_jid_queue_hwm`.
pub const JID_QUEUE_HWM: usize = 100;

/// Why a publish load was not turned into a job.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// A field has the wrong type for a job this minion runs (a multi-function `fun`).
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
    /// Take a publish load read by [`JobLoad`] (after the serial check).
    pub fn from_load(load: JobLoad) -> Result<Self, JobError> {
        let fun = load
            .fun
            .as_text()
            .ok_or(JobError::BadField("fun"))?
            .to_owned();
        let delimiter = load
            .extra_get("delimiter")
            .and_then(ValueExt::as_text)
            .map(str::to_owned);
        Ok(Self {
            fun,
            delimiter,
            user: load.user.as_deref().map(Value::from),
            master_id: load.extra_get("master_id").cloned(),
            metadata: load.extra_get("metadata").filter(|m| m.is_map()).cloned(),
            load: load.to_value(),
            jid: load.jid,
            arg: load.arg,
            tgt: load.tgt,
            tgt_type: load.tgt_type,
        })
    }

    /// The returners the publish names (`salt --return a,b`: its `ret`), each once.
    pub fn returners(&self) -> Vec<String> {
        let Some(Value::String(s)) = self.load.as_map().and_then(|m| {
            m.iter()
                .find(|(k, _)| k.as_str() == Some("ret"))
                .map(|(_, v)| v)
        }) else {
            return Vec::new();
        };
        let mut out: Vec<String> = Vec::new();
        for r in s.as_str().unwrap_or_default().split(',') {
            if !r.is_empty() && !out.iter().any(|o| o == r) {
                out.push(r.to_owned());
            }
        }
        out
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

/// The `salt/job/<jid>/start/<id>` event a Salt 3008 minion fires when it takes a job
/// published with `start_event` (`salt --start-event`; `Minion._fire_start_event`), as the
/// `_minion_event` load to send; `None` when the job did not ask for it.
pub fn start_event(job: &Job, id: &str, tok: &[u8]) -> Option<Value> {
    let asked = salt_compat::map_get(&job.load, "start_event").is_some_and(ValueExt::is_truthy);
    if !asked {
        return None;
    }
    let field = |k: &str| {
        salt_compat::map_get(&job.load, k)
            .cloned()
            .unwrap_or(Value::Nil)
    };
    let mut data = vec![
        (Value::from("id"), Value::from(id)),
        (Value::from("jid"), Value::from(job.jid.as_str())),
        (Value::from("fun"), field("fun")),
        (Value::from("tgt"), field("tgt")),
        (Value::from("tgt_type"), field("tgt_type")),
        (Value::from("user"), field("user")),
    ];
    if let Some(m) = job.master_id.clone().filter(ValueExt::is_truthy) {
        data.push((Value::from("master_id"), m));
    }
    if let Some(m) = salt_compat::map_get(&job.load, "metadata").filter(|m| !m.is_nil()) {
        data.push((Value::from("metadata"), m.clone()));
    }
    Some(
        salt_proto::msg::MinionEvent {
            id: id.to_owned(),
            pretag: None,
            tok: Some(tok.to_vec()),
            body: salt_proto::msg::EventBody::Single {
                tag: format!("salt/job/{}/start/{id}", job.jid),
                data: Value::Map(data),
            },
            grains: None,
            extra: Vec::new(),
        }
        .to_value(),
    )
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

/// Build the `_return` load for a finished call, in the order Salt's minion writes it
/// (`proto::msg::ReturnLoad`): `out` after `retcode`, then the publish's `user`,
/// `master_id` and `metadata`.
pub fn return_load(job: &Job, id: &str, outcome: modules::CallOutcome) -> Value {
    let success = outcome.success();
    let extra = [
        ("user", &job.user),
        ("master_id", &job.master_id),
        ("metadata", &job.metadata),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.clone().map(|v| (Value::from(k), v)))
    .collect();
    ReturnLoad {
        id: id.to_owned(),
        jid: job.jid.clone(),
        fun: job.fun.as_str().into(),
        ret: outcome.ret,
        success: Some(success.into()),
        retcode: Some(outcome.retcode.into()),
        out: outcome.out.map(|o| (o.to_owned(), OutAt::AfterRetcode)),
        fun_args: Some(job.arg.clone()),
        extra,
    }
    .to_value()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn load(fun: &str, tgt: &str) -> JobLoad {
        JobLoad::from_value(&Value::Map(vec![
            ("fun".into(), fun.into()),
            ("arg".into(), Value::Array(vec![])),
            ("tgt".into(), tgt.into()),
            ("jid".into(), "20261122012345678901".into()),
            ("ret".into(), "".into()),
            ("tgt_type".into(), "glob".into()),
            ("user".into(), "root".into()),
        ]))
        .unwrap()
    }

    /// `salt --start-event` (3008): the start event as `Minion._fire_start_event` builds it;
    /// a `traceparent` in the job load is carried without harm.
    #[test]
    fn start_event_when_the_job_asks_for_it() {
        let plain = Job::from_load(load("test.ping", "m*")).unwrap();
        assert_eq!(start_event(&plain, "m1", b"tok"), None);
        let mut v = load("test.ping", "m*").to_value();
        salt_proto::map_set(&mut v, "start_event", Value::Boolean(true));
        salt_proto::map_set(
            &mut v,
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
        );
        let job = Job::from_load(JobLoad::from_value(&v).unwrap()).unwrap();
        let ev = start_event(&job, "m1", b"tok").unwrap();
        let ev = salt_proto::msg::MinionEvent::from_value(&ev).unwrap();
        let salt_proto::msg::EventBody::Single { tag, data } = ev.body else {
            panic!("one event")
        };
        assert_eq!(tag, "salt/job/20261122012345678901/start/m1");
        let keys: Vec<&str> = match &data {
            Value::Map(m) => m.iter().filter_map(|(k, _)| k.as_str()).collect(),
            _ => panic!("a map"),
        };
        assert_eq!(keys, ["id", "jid", "fun", "tgt", "tgt_type", "user"]);
        assert_eq!(
            salt_compat::map_get(&data, "fun"),
            Some(&Value::from("test.ping"))
        );
    }

    #[test]
    fn parse_and_target() {
        let j = Job::from_load(load("test.ping", "m*")).unwrap();
        assert_eq!(j.jid, "20261122012345678901");
        assert!(j.targets("m1", &Value::Map(vec![]), None));
        assert!(!j.targets("x1", &Value::Map(vec![]), None));
        let multi = JobLoad {
            fun: Value::Array(vec!["test.ping".into()]),
            ..load("test.ping", "*")
        };
        assert_eq!(Job::from_load(multi), Err(JobError::BadField("fun")));
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
        assert_eq!(r.get("return"), Some(&Value::Boolean(true)));
        assert_eq!(r.get("retcode"), Some(&Value::from(0)));
        let bad = run(&Job::from_load(load("no.such", "m1")).unwrap(), &ctx)
            .await
            .unwrap();
        assert_eq!(bad.get("success"), Some(&Value::Boolean(false)));
        assert_eq!(bad.get("out"), Some(&Value::from("nested")));
    }

    /// The golden `_return` loads Salt's own minion code assembles
    /// (`scripts/gen-proto-vectors.py`).
    fn salt_return(name: &str) -> Vec<u8> {
        let json: serde_json::Value =
            serde_json::from_str(include_str!("../../proto/tests/vectors/payload.json")).unwrap();
        let v = json["vectors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == name)
            .unwrap();
        hex::decode(v["hex"].as_str().unwrap()).unwrap()
    }

    #[tokio::test]
    async fn return_loads_are_salts_bytes() {
        let job = |fun: &str, arg: Vec<Value>| {
            let mut l = load(fun, "m1");
            l.jid = "20251122012345678901".into();
            l.arg = arg;
            Job::from_load(l).unwrap()
        };
        let ctx = ExecContext::new("minion1", Arc::new(Value::Map(vec![])));
        let ping = run(&job("test.ping", vec![]), &ctx).await.unwrap();
        assert_eq!(salt_proto::encode(&ping), salt_return("return_minion_ok"));
        let missing = return_load(
            &job("no.such", vec!["x".into()]),
            "minion1",
            modules::CallOutcome::error("'no.such' is not available.".into()),
        );
        assert_eq!(
            salt_proto::encode(&missing),
            salt_return("return_minion_missing")
        );
    }
}
