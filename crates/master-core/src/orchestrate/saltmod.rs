//! Salt's master-side state module `salt` (`salt/states/saltmod.py`): `salt.function`,
//! `salt.state`, `salt.runner`, `salt.wheel`, plugged into the state engine of `salt-states`
//! as [`salt_states::ExtraStates`], so orchestrate runs with the minion's requisite rules.
//!
//! Jobs are published as the master and waited for as Salt's `saltutil.cmd` does
//! ([`crate::jobs::run::run_job`]), or in batches (`batch`, [`super::batch`]);
//! `salt.parallel_runners` is in [`super::parallel`]. What salt-rs does not implement (`ssh`,
//! `subset`, `roster`, `ret_config`, `ret_kwargs`, `fail_function`) fails the state, named in
//! its comment.

use std::sync::Arc;

use rmpv::Value as Mp;
use salt_client::local::{PublishRequest, RunnerRequest};
use salt_compat::json::{json_to_msgpack, msgpack_to_json};
use salt_states::Opts;
use salt_states::compile::STATE_INTERNAL_KEYWORDS;
use salt_transport::Publisher;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::shared::Shared;

/// Parameters salt-rs does not implement, per function (refused when given anything true).
const REFUSED_FUNCTION: &[&str] = &[
    "ssh",
    "roster",
    "ret_config",
    "ret_kwargs",
    "fail_function",
    "subset",
];
const REFUSED_STATE: &[&str] = &["ssh", "roster", "ret_config", "ret_kwargs", "subset"];

/// Salt's default `timeout` for jobs the master publishes (seconds).
const DEFAULT_TIMEOUT: u64 = 5;

/// The master's `salt.*` states for one orchestration.
pub(crate) struct SaltMod {
    pub shared: Arc<Shared>,
    pub publisher: Publisher,
    pub stop: CancellationToken,
    /// The runtime the orchestration's blocking thread hands async work to.
    pub rt: tokio::runtime::Handle,
    /// `orchestration_jid`.
    pub jid: String,
    /// Who runs the orchestration (Salt's `__user__` of `state.orchestrate`): `salt.runner`
    /// runs its runner as this user (Salt's `saltmod.runner` passes it as `__pub_user`).
    pub user: String,
    /// The caller's console (`salt-run`'s stdout), for what Salt's `LocalClient` prints.
    pub console: Option<tokio::sync::mpsc::UnboundedSender<String>>,
}

impl salt_states::ExtraStates for SaltMod {
    fn has(&self, full: &str) -> bool {
        matches!(
            full,
            "salt.state" | "salt.function" | "salt.runner" | "salt.wheel" | "salt.parallel_runners"
        )
    }

    fn call(&self, full: &str, low: &Mp, opts: &Opts) -> Mp {
        let low = msgpack_to_json(low);
        let low = low.as_object().cloned().unwrap_or_default();
        let ret = match full {
            "salt.function" => self.function(&low, opts.test, opts.failhard),
            "salt.state" => self.state(&low, opts.test, opts.failhard, REFUSED_STATE),
            "salt.runner" => self.runner(&low, opts.test),
            "salt.wheel" => self.wheel(&low, opts.test),
            _ => self.parallel_runners(&low),
        };
        json_to_msgpack(&ret)
    }
}

/// `{name, changes, comment, result}`, Salt's first return of every `salt.*` state.
pub(super) fn new_ret(low: &Map<String, Value>) -> Map<String, Value> {
    let mut r = Map::new();
    r.insert(
        "name".into(),
        low.get("name").cloned().unwrap_or(Value::Null),
    );
    r.insert("changes".into(), json!({}));
    r.insert("comment".into(), json!(""));
    r.insert("result".into(), json!(true));
    r
}

pub(super) fn refused(low: &Map<String, Value>, why: &str) -> Value {
    let mut r = new_ret(low);
    r.insert("result".into(), json!(false));
    r.insert("comment".into(), json!(why));
    Value::Object(r)
}

pub(super) fn truthy(v: Option<&Value>) -> bool {
    v.is_some_and(salt_compat::py_truthy_json)
}

/// The first parameter of `params` given a true value, refused by name.
pub(super) fn refuse_any(low: &Map<String, Value>, fun: &str, params: &[&str]) -> Option<Value> {
    let p = params.iter().find(|p| truthy(low.get(**p)))?;
    Some(refused(
        low,
        &format!("{fun}: '{p}' is not supported by salt-rs"),
    ))
}

/// `tgt` as the text a publication carries (a list joins with commas, as `-L`).
pub(super) fn target(low: &Map<String, Value>) -> Option<String> {
    match low.get("tgt")? {
        Value::Array(a) => Some(
            a.iter()
                .map(salt_compat::py_json_str)
                .collect::<Vec<_>>()
                .join(","),
        ),
        Value::Null => None,
        v => Some(salt_compat::py_json_str(v)),
    }
}

/// `fail_minions`: a list, or a comma-separated string; anything else is ignored with
/// Salt's warning.
pub(super) fn fail_minions(low: &Map<String, Value>, ret: &mut Map<String, Value>) -> Vec<String> {
    match low.get("fail_minions") {
        None | Some(Value::Null) => vec![],
        Some(Value::String(s)) => s.split(',').map(|m| m.trim().to_owned()).collect(),
        Some(Value::Array(a)) => a.iter().map(salt_compat::py_json_str).collect(),
        Some(_) => {
            let w = "'fail_minions' needs to be a list or a comma separated string. Ignored.";
            push_warning(ret, w);
            vec![]
        }
    }
}

fn push_warning(ret: &mut Map<String, Value>, w: &str) {
    let slot = ret.entry("warnings").or_insert_with(|| json!([]));
    if let Value::Array(a) = slot {
        a.push(json!(w));
    }
}

/// Salt's `salt.utils.state.check_result` (no highstate: onfail handlers do not count).
pub(crate) fn check_result(running: &Value, recurse: bool) -> bool {
    let Value::Object(m) = running else {
        return false;
    };
    if m.is_empty() {
        return false;
    }
    for (id, r) in m {
        let expected_list = id == "__extend__";
        if !recurse
            && !(if expected_list {
                r.is_array()
            } else {
                r.is_object()
            })
        {
            return false;
        }
        if let Value::Object(s) = r {
            match s.get("result") {
                Some(Value::Bool(false)) => return false,
                None if !check_result(r, true) => return false,
                _ => {}
            }
        }
    }
    true
}

/// One minion's answer as `saltutil.cmd` gives it: `{ret, retcode, jid, ...}` or `{failed}`.
pub(super) type CmdRet = Vec<(String, Map<String, Value>)>;

impl SaltMod {
    /// Publish like `saltutil.cmd` and wait; `expect_minions` adds `{"failed": true}` for the
    /// minions that did not answer.
    pub(super) fn cmd(
        &self,
        req: &PublishRequest,
        expect_minions: bool,
    ) -> Result<(String, CmdRet), String> {
        let run = crate::jobs::run::run_job(&self.shared, &self.publisher, &self.stop, req);
        let (jid, got, missing) = match self.rt.block_on(run) {
            Ok(r) => r,
            Err(e) if e.starts_with("No minions matched") => {
                // Salt's `LocalClient.run_job` prints it where the runner runs (`salt-run`).
                if let Some(c) = &self.console {
                    let _ = c.send(e);
                }
                return Ok((String::new(), vec![]));
            }
            Err(e) => return Err(e),
        };
        let mut out: CmdRet = Vec::new();
        for (id, load) in got {
            let load = msgpack_to_json(&load);
            let mut m = Map::new();
            m.insert(
                "ret".into(),
                load.get("return").cloned().unwrap_or(Value::Null),
            );
            if let Some(rc) = load.get("retcode") {
                m.insert("retcode".into(), rc.clone());
            }
            m.insert("jid".into(), json!(jid));
            out.push((id, m));
        }
        if expect_minions {
            for id in missing.no_response.into_iter().chain(missing.not_connected) {
                let mut m = Map::new();
                m.insert("failed".into(), json!(true));
                out.push((id, m));
            }
        }
        Ok((jid, out))
    }

    /// [`Self::cmd`], or with `batch` given [`Self::cmd_batch`] (no jid), as Salt's
    /// `saltutil.cmd` picks `cmd_iter` or `cmd_batch`; `failhard` is the step's `failhard:
    /// True` or the run's.
    pub(super) fn cmd_or_batch(
        &self,
        low: &Map<String, Value>,
        req: &PublishRequest,
        expect_minions: bool,
        failhard: bool,
    ) -> Result<(String, CmdRet), String> {
        match low.get("batch").filter(|b| !b.is_null()) {
            None => self.cmd(req, expect_minions),
            Some(b) => {
                let failhard = failhard || low.get("failhard") == Some(&Value::Bool(true));
                let spec = salt_compat::py_json_str(b);
                Ok((String::new(), self.cmd_batch(req, &spec, failhard)?))
            }
        }
    }

    pub(super) fn timeout(&self, low: &Map<String, Value>) -> u64 {
        low.get("timeout")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_TIMEOUT)
    }

    /// `salt.function`: run an execution function on the target.
    fn function(&self, low: &Map<String, Value>, test: bool, failhard: bool) -> Value {
        if let Some(r) = refuse_any(low, "salt.function", REFUSED_FUNCTION) {
            return r;
        }
        let mut ret = new_ret(low);
        let name = low
            .get("name")
            .map(salt_compat::py_json_str)
            .unwrap_or_default();
        let Some(tgt) = target(low) else {
            return refused(low, "Missing parameter tgt for state salt.function");
        };
        let mut arg: Vec<Value> = match low.get("arg") {
            Some(Value::String(s)) => {
                push_warning(&mut ret, "Please specify 'arg' as a list of arguments.");
                s.split_whitespace().map(|a| json!(a)).collect()
            }
            Some(Value::Array(a)) => a.clone(),
            Some(Value::Null) | None => vec![],
            Some(v) => vec![v.clone()],
        };
        if let Some(Value::Object(kw)) = low.get("kwarg")
            && !kw.is_empty()
        {
            let mut kw = kw.clone();
            kw.insert("__kwarg__".into(), json!(true));
            arg.push(Value::Object(kw));
        }
        if test {
            ret.insert(
                "comment".into(),
                json!(format!("Function {name} would be executed on target {tgt}")),
            );
            ret.insert("result".into(), Value::Null);
            return Value::Object(ret);
        }
        let req = PublishRequest {
            tgt: tgt.clone(),
            tgt_type: text(low, "tgt_type").unwrap_or_else(|| "glob".into()),
            fun: name.clone(),
            arg,
            timeout: self.timeout(low),
            ret: text(low, "ret").unwrap_or_default(),
            ..Default::default()
        };
        let expect = truthy(low.get("expect_minions"));
        let (jid, cmd_ret) = match self.cmd_or_batch(low, &req, expect, failhard) {
            Ok(r) => r,
            Err(e) => return refused(low, &e),
        };
        if !jid.is_empty() && !cmd_ret.is_empty() {
            ret.insert("__jid__".into(), json!(jid));
        }
        let fail_minions = fail_minions(low, &mut ret);
        let mut changes = Map::new();
        let mut fail: Vec<String> = Vec::new();
        for (minion, mdata) in &cmd_ret {
            let mut m_ret = json!(false);
            if truthy(mdata.get("retcode")) {
                ret.insert("result".into(), json!(false));
                fail.push(minion.clone());
            }
            let m_func = if truthy(mdata.get("failed")) {
                false
            } else {
                m_ret = mdata.get("ret").cloned().unwrap_or(Value::Null);
                m_ret != json!(false)
            };
            if !m_func && !fail_minions.contains(minion) && !fail.contains(minion) {
                fail.push(minion.clone());
            }
            changes.insert(minion.clone(), m_ret);
        }
        if cmd_ret.is_empty() {
            ret.insert("result".into(), json!(false));
            ret.insert("comment".into(), json!("No minions responded"));
            return Value::Object(ret);
        }
        let ran: Vec<&str> = changes.keys().map(String::as_str).collect();
        let mut comment = if fail.is_empty() {
            "Function ran successfully.".to_owned()
        } else {
            ret.insert("result".into(), json!(false));
            format!(
                "Running function {name} failed on minions: {}",
                fail.join(", ")
            )
        };
        comment.push_str(&format!(" Function {name} ran on {}.", ran.join(", ")));
        ret.insert("changes".into(), json!({ "ret": changes }));
        ret.insert("comment".into(), json!(comment));
        Value::Object(ret)
    }
}

/// A low-chunk value as text.
pub(crate) fn text(low: &Map<String, Value>, key: &str) -> Option<String> {
    low.get(key)
        .filter(|v| !v.is_null())
        .map(salt_compat::py_json_str)
}

/// The keyword arguments a `**kwargs` state function sees (internal keywords and `name` out).
pub(crate) fn kwargs(low: &Map<String, Value>) -> Map<String, Value> {
    low.iter()
        .filter(|(k, _)| !STATE_INTERNAL_KEYWORDS.contains(&k.as_str()) && *k != "name")
        .filter(|(k, _)| !k.starts_with("__"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The `name` of a `salt.runner`/`salt.wheel` step (`kind` "Runner"/"Wheel"), or with
/// `test` Salt's answer that it would be executed.
fn step_name(low: &Map<String, Value>, test: bool, kind: &str) -> Result<String, Value> {
    let name = low
        .get("name")
        .map(salt_compat::py_json_str)
        .unwrap_or_default();
    if !test {
        return Ok(name);
    }
    let mut r = new_ret(low);
    r.insert("result".into(), Value::Null);
    r.insert(
        "comment".into(),
        json!(format!("{kind} function '{name}' would be executed.")),
    );
    Err(Value::Object(r))
}

/// The state return of a `salt.runner`/`salt.wheel` step that ran.
fn step_ret(kind: &str, name: &str, value: Value, success: bool, jid: String) -> Value {
    let verb = if success { "executed" } else { "failed" };
    json!({
        "name": name,
        "changes": {"return": value},
        "result": success,
        "comment": format!("{kind} function '{name}' {verb}."),
        "__jid__": jid,
    })
}

impl SaltMod {
    /// `salt.runner`: a runner on this master, as `saltutil.runner(full_return=True)`.
    fn runner(&self, low: &Map<String, Value>, test: bool) -> Value {
        let name = match step_name(low, test, "Runner") {
            Ok(name) => name,
            Err(would) => return would,
        };
        let mut kw = kwargs(low);
        if matches!(
            name.as_str(),
            "state.orchestrate" | "state.orch" | "state.sls"
        ) {
            kw.insert("orchestration_jid".into(), json!(self.jid));
        }
        kw.insert("__kwarg__".into(), json!(true));
        let req = RunnerRequest {
            fun: name.clone(),
            arg: vec![Value::Object(kw)],
            timeout: None,
            auth: None,
        };
        let ctx = crate::runners::ctx::Ctx {
            shared: self.shared.clone(),
            publisher: self.publisher.clone(),
            stop: self.stop.clone(),
            console: self.console.clone(),
        };
        let out = self.rt.block_on(Box::pin(crate::runners::call(
            &ctx, &req, &self.user, true, None,
        )));
        let (value, mut success) = match out {
            Ok(v) => {
                let ok = match &v {
                    Value::Object(m) if m.contains_key("data") => check_result(&m["data"], false),
                    _ => true,
                };
                (v, ok)
            }
            Err(e) => (json!(e), false),
        };
        if matches!(&value, Value::Object(m) if m.contains_key("Error")) {
            success = false;
        }
        step_ret("Runner", &name, value, success, self.shared.jids.next())
    }

    /// `salt.wheel`: the master's wheel modules (`crate::wheel::call`), with the state's
    /// keyword arguments as Salt's `saltutil.wheel` passes them.
    fn wheel(&self, low: &Map<String, Value>, test: bool) -> Value {
        let name = match step_name(low, test, "Wheel") {
            Ok(name) => name,
            Err(would) => return would,
        };
        let (value, success) = wheel_call(&self.shared, &name, &kwargs(low));
        step_ret("Wheel", &name, value, success, self.shared.jids.next())
    }
}

/// The one place `salt.wheel` reaches wheel functions: (return, success). Blocking (the
/// orchestration runs on the blocking pool). The user is Salt's: `saltmod.wheel` passes no
/// `__pub_user` and `saltutil.wheel`'s `pub_data` holds only `__` keys, so `WheelClient.cmd`
/// sets no `__user__` and its events say `UNKNOWN` (Salt 3006, 3007 and 3008 alike).
fn wheel_call(shared: &Shared, fun: &str, kwargs: &Map<String, Value>) -> (Value, bool) {
    crate::wheel::call(shared, fun, &[], kwargs, WHEEL_USER)
}

/// The user of `salt.wheel`'s wheel calls (see [`wheel_call`]).
const WHEEL_USER: &str = "UNKNOWN";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_result_is_salts() {
        // Salt's `check_result`: a failed state fails, `None` does not, nothing is a failure,
        // a list (compile errors) fails unless recursing.
        assert!(check_result(&json!({"m": {"a": {"result": true}}}), false));
        assert!(check_result(&json!({"m": {"a": {"result": null}}}), false));
        assert!(!check_result(
            &json!({"m": {"a": {"result": false}}}),
            false
        ));
        assert!(!check_result(&json!({}), false));
        assert!(!check_result(&json!({"m": ["error"]}), false));
        assert!(check_result(
            &json!({"a": {"result": true}, "b": "x"}),
            true
        ));
    }

    #[test]
    fn kwargs_leave_out_requisites_and_internals() {
        let low = json!({"name": "jobs.active", "state": "salt", "fun": "runner",
                         "__id__": "x", "__sls__": "o", "__env__": "base", "order": 10000,
                         "require": [{"salt": "y"}], "timeout": 3, "display_progress": false});
        let kw = kwargs(low.as_object().unwrap());
        assert_eq!(
            Value::Object(kw),
            json!({"timeout": 3, "display_progress": false})
        );
    }
}
