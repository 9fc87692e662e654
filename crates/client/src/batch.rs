//! Salt 3008's batch state (`salt/utils/batch_state.py`): the `BatchState` dict and the state
//! machine that advances it (`progress_batch`), shared by `salt -b` (which drives a batch
//! itself) and the master (which drives `salt --async -b`), and the payloads of the
//! `salt/batch/<jid>/...` events (`salt/utils/batch_output.py`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Salt's `BatchState` dict, keys in Salt's order.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
#[serde(default)]
#[allow(missing_docs)]
pub struct BatchState {
    pub jid: String,
    pub all_minions: Vec<String>,
    pub pending: Vec<String>,
    /// Minion -> when its slice was published (Unix seconds).
    pub active: BTreeMap<String, f64>,
    /// Minion -> `{ret, retcode}`.
    pub done: Map<String, Value>,
    /// Minion -> `"failed"` or `"timeout"`.
    pub failed: BTreeMap<String, Value>,
    /// `batch_wait` cool-downs: when each ends.
    pub wait: Vec<f64>,
    pub batch_size: u64,
    pub fun: String,
    pub arg: Vec<Value>,
    pub kwargs: Map<String, Value>,
    pub tgt: Value,
    pub tgt_type: String,
    pub failhard: bool,
    pub batch_wait: Value,
    pub timeout: Value,
    pub gather_job_timeout: Value,
    pub last_progress: f64,
    pub created: f64,
    pub halted: bool,
    pub halted_reason: Option<String>,
    pub driver: String,
    pub ret: String,
    pub user: String,
}

/// What [`BatchState::progress`] asks the driver to do.
#[derive(Debug, Default)]
pub struct Action {
    /// Minions to publish to now.
    pub publish: Vec<String>,
    /// Minions whose return was taken.
    pub finished: usize,
    /// Minions given up on.
    pub timed_out: usize,
}

fn num(v: &Value, default: f64) -> f64 {
    v.as_f64().unwrap_or(default)
}

/// Salt's `get_batch_size`: a count or a percentage, at least 1.
pub fn batch_size(spec: &str, minions: usize) -> Result<u64, String> {
    let spec = spec.trim();
    let bad = || {
        format!(
            "Invalid batch specification '{spec}': must be an integer or percentage string \
             like '10' or '25%'."
        )
    };
    if spec.contains('%') {
        let pct: f64 = spec.trim_matches('%').trim().parse().map_err(|_| bad())?;
        let res = pct / 100.0 * minions as f64;
        return Ok(if res < 1.0 {
            (res.ceil() as u64).max(1)
        } else {
            res as u64
        });
    }
    spec.parse::<i64>()
        .map(|n| u64::try_from(n.max(1)).unwrap_or(1))
        .map_err(|_| bad())
}

/// The effective retcode of a return (`_collapse_retcode`): a dict's largest value.
pub fn collapse_retcode(data: &Value) -> i64 {
    match data.get("retcode") {
        Some(Value::Object(m)) => m.values().filter_map(Value::as_i64).max().unwrap_or(0),
        Some(v) => v.as_i64().unwrap_or(0),
        None => 0,
    }
}

impl BatchState {
    /// `is_batch_done`: halted, or nothing pending nor active.
    pub fn is_done(&self) -> bool {
        self.halted || (self.pending.is_empty() && self.active.is_empty())
    }

    /// Salt's `progress_batch(state, new_returns, now=now, timed_out=timed_out)`.
    pub fn progress(
        &mut self,
        new_returns: &[(String, Value)],
        now: f64,
        timed_out: &[String],
    ) -> Action {
        let bwait = num(&self.batch_wait, 0.0);
        let mut act = Action::default();
        let mut failhard = false;
        for (id, data) in new_returns {
            if self.done.contains_key(id) || self.failed.contains_key(id) {
                continue;
            }
            self.active.remove(id);
            if data.get("failed") == Some(&Value::Bool(true)) {
                self.failed.insert(id.clone(), Value::from("failed"));
            } else {
                self.done.insert(id.clone(), data.clone());
            }
            act.finished += 1;
            if bwait > 0.0 {
                self.wait.push(now + bwait);
            }
            if self.failhard
                && (data.get("failed") == Some(&Value::Bool(true)) || collapse_retcode(data) > 0)
            {
                failhard = true;
            }
        }
        for id in timed_out {
            if self.done.contains_key(id) || self.failed.contains_key(id) {
                continue;
            }
            self.active.remove(id);
            self.failed.insert(id.clone(), Value::from("timeout"));
            act.timed_out += 1;
            if bwait > 0.0 {
                self.wait.push(now + bwait);
            }
        }
        let window = num(&self.timeout, 60.0) + num(&self.gather_job_timeout, 10.0);
        let expired: Vec<String> = self
            .active
            .iter()
            .filter(|(_, t)| now - **t >= window)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            self.active.remove(&id);
            self.failed.insert(id, Value::from("timeout"));
            act.timed_out += 1;
            if bwait > 0.0 {
                self.wait.push(now + bwait);
            }
        }
        self.wait.retain(|t| *t > now);
        self.wait.sort_by(f64::total_cmp);
        if failhard {
            self.halted = true;
            self.halted_reason = Some("failhard".into());
        }
        if !self.halted {
            let mut free = usize::try_from(self.batch_size)
                .unwrap_or(usize::MAX)
                .saturating_sub(self.active.len() + self.wait.len());
            while free > 0 && !self.pending.is_empty() {
                let id = self.pending.remove(0);
                self.active.insert(id.clone(), now);
                act.publish.push(id);
                free -= 1;
            }
        }
        self.last_progress = now;
        act
    }

    /// The state as Salt's dict (JSON).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// A `BatchState` dict from an event or a file; `None` if it is not one.
    pub fn from_json(v: &Value) -> Option<Self> {
        let s: Self = serde_json::from_value(v.clone()).ok()?;
        (!s.jid.is_empty()).then_some(s)
    }

    fn base(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("jid".into(), Value::from(self.jid.as_str()));
        m.insert("fun".into(), Value::from(self.fun.as_str()));
        m.insert("tgt".into(), self.tgt.clone());
        m.insert("tgt_type".into(), Value::from(self.tgt_type.as_str()));
        m.insert("user".into(), Value::from(self.user.as_str()));
        m
    }

    /// `new_payload`: `salt/batch/<jid>/new` of a master-driven batch.
    pub fn new_payload(&self) -> Value {
        let mut m = self.base();
        m.insert("total_minions".into(), self.all_minions.len().into());
        m.insert("batch_size".into(), self.batch_size.into());
        m.insert("driver".into(), Value::from(self.driver.as_str()));
        m.insert("created".into(), self.created.into());
        Value::Object(m)
    }

    /// `state_payload`: the sync CLI's events, the whole state under `state`.
    pub fn state_payload(&self) -> Value {
        let mut m = self.base();
        m.insert("driver".into(), Value::from(self.driver.as_str()));
        m.insert("state".into(), self.to_json());
        Value::Object(m)
    }

    /// `progress_payload` (the manager's `salt/batch/<jid>/progress`, `iter: None`).
    pub fn progress_payload(&self) -> Value {
        let mut m = self.base();
        m.insert("total".into(), self.all_minions.len().into());
        m.insert("completed".into(), self.done.len().into());
        m.insert("active".into(), self.active.len().into());
        m.insert("pending".into(), self.pending.len().into());
        m.insert("failed".into(), self.failed.len().into());
        m.insert("iter".into(), Value::Null);
        m.insert("last_progress".into(), self.last_progress.into());
        Value::Object(m)
    }

    /// `complete_payload`.
    pub fn complete_payload(&self, now: f64) -> Value {
        let mut m = self.base();
        m.insert("completed".into(), self.done.len().into());
        m.insert("failed".into(), self.failed.len().into());
        m.insert("total_minions".into(), self.all_minions.len().into());
        m.insert("duration".into(), (now - self.created).into());
        Value::Object(m)
    }

    /// `halted_payload`.
    pub fn halted_payload(&self, now: f64) -> Value {
        let mut m = self.base();
        m.insert(
            "reason".into(),
            self.halted_reason.clone().map_or(Value::Null, Value::from),
        );
        m.insert("completed".into(), self.done.len().into());
        m.insert("failed".into(), self.failed.len().into());
        m.insert(
            "abandoned_active".into(),
            self.active.keys().cloned().collect::<Vec<_>>().into(),
        );
        m.insert("abandoned_pending".into(), self.pending.clone().into());
        m.insert("duration".into(), (now - self.created).into());
        Value::Object(m)
    }

    /// The `batch` runner's `_summary` (`age_seconds` from `now`).
    pub fn summary(&self, now: f64) -> Value {
        serde_json::json!({
            "jid": self.jid,
            "fun": self.fun,
            "tgt": self.tgt,
            "tgt_type": self.tgt_type,
            "total": self.all_minions.len(),
            "completed": self.done.len(),
            "active": self.active.len(),
            "pending": self.pending.len(),
            "failed": self.failed.len(),
            "batch_size": self.batch_size,
            "halted": self.halted,
            "halted_reason": self.halted_reason,
            "driver": self.driver,
            "user": self.user,
            "created": self.created,
            "last_progress": self.last_progress,
            "age_seconds": (self.last_progress != 0.0).then_some(now - self.last_progress),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(n: usize, size: u64) -> BatchState {
        let all: Vec<String> = (1..=n).map(|i| format!("m{i}")).collect();
        BatchState {
            jid: "20260101000000000000".into(),
            pending: all.clone(),
            all_minions: all,
            batch_size: size,
            timeout: Value::from(5),
            gather_job_timeout: Value::from(5),
            driver: "master".into(),
            ..Default::default()
        }
    }

    #[test]
    fn sizes_as_salt_3008() {
        assert_eq!(batch_size("1", 3), Ok(1));
        assert_eq!(batch_size("50%", 3), Ok(1));
        assert_eq!(batch_size("10%", 3), Ok(1), "below one rounds up");
        assert_eq!(batch_size("0", 3), Ok(1), "at least one");
        assert!(batch_size("x", 3).is_err());
    }

    #[test]
    fn slots_fill_from_the_front_and_refill_on_returns() {
        let mut s = state(3, 2);
        let a = s.progress(&[], 100.0, &[]);
        assert_eq!(a.publish, ["m1", "m2"]);
        let a = s.progress(
            &[("m1".into(), serde_json::json!({"ret": true}))],
            101.0,
            &[],
        );
        assert_eq!(
            (a.publish.as_slice(), a.finished),
            (&["m3".to_owned()][..], 1)
        );
        assert!(!s.is_done());
        // m2 never answers: given up after timeout + gather_job_timeout.
        s.progress(
            &[("m3".into(), serde_json::json!({"ret": true}))],
            102.0,
            &[],
        );
        let a = s.progress(&[], 110.0, &[]);
        assert_eq!(a.timed_out, 1);
        assert_eq!(s.failed.get("m2"), Some(&Value::from("timeout")));
        assert!(s.is_done() && !s.halted);
    }

    #[test]
    fn failhard_halts() {
        let mut s = state(3, 1);
        s.failhard = true;
        s.progress(&[], 1.0, &[]);
        let a = s.progress(
            &[("m1".into(), serde_json::json!({"ret": false, "retcode": 1}))],
            2.0,
            &[],
        );
        assert!(a.publish.is_empty());
        assert!(s.halted && s.is_done());
        assert_eq!(s.halted_reason.as_deref(), Some("failhard"));
    }
}
