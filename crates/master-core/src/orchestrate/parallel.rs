//! `salt.parallel_runners` (Salt's `saltmod.parallel_runners`): runner functions on this
//! master at once, one task each, their returns merged into one state return.
//!
//! As Salt's: `runners` is a runner name (run without arguments) or a mapping of ids to a
//! list of `name`/`kwarg` pairs (`name` defaults to the id); each runs as
//! `saltutil.runner(full_return=True)` does (user `UNKNOWN`, `orchestration_jid` handed to
//! `state.orchestrate`/`state.orch`/`state.sls`), whatever `test` is. When every runner
//! answered the highstate outputter's `{data, outputter}`, the changes are the states' changes
//! per runner; otherwise `{"ret": {id: return}}`, a runner failing when its return's
//! `exit_code` is not 0. No `__jid__` (there is one per runner). Salt's `all(out.get(...))`
//! raises on a return that is not a mapping, and an unknown runner raises `KeyError`: the
//! state then fails with "An exception occurred in this state: " and the exception (Salt adds
//! its traceback, which salt-rs does not have).

use salt_client::local::RunnerRequest;
use serde_json::{Map, Value, json};

use super::saltmod::{SaltMod, new_ret};

/// The user `saltutil.runner` runs a runner as when no `__pub_user` is passed.
const RUNNER_USER: &str = "UNKNOWN";

/// `salt.utils.data.repack_dictlist`: a list of one-key mappings (strings and numbers
/// skipped) as one mapping; anything else `{}` (Salt logs it).
fn repack_dictlist(v: &Value) -> Map<String, Value> {
    let Value::Array(items) = v else {
        tracing::error!("Invalid input for repack_dictlist, data passed is not a list ({v})");
        return Map::new();
    };
    let mut out = Map::new();
    for item in items {
        match item {
            Value::String(_) | Value::Number(_) => {}
            Value::Object(m) if m.len() == 1 => out.extend(m.clone()),
            other => {
                tracing::error!("Invalid input for repack_dictlist: {other}");
                return Map::new();
            }
        }
    }
    out
}

/// Python's type name of a JSON value (for the exception text).
fn py_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// Salt's `extract_changes`: a state's changes (a nested `salt.state`'s `ret`), or the
/// non-empty changes below a mapping.
fn extract_changes(v: &Value) -> Value {
    let Value::Object(m) = v else {
        return json!({});
    };
    if let Some(c) = m.get("changes") {
        return match c {
            Value::Object(cm) if cm.get("out") == Some(&json!("highstate")) => {
                cm.get("ret").cloned().unwrap_or_else(|| c.clone())
            }
            _ => c.clone(),
        };
    }
    let found: Map<String, Value> = m
        .iter()
        .map(|(k, x)| (k.clone(), extract_changes(x)))
        .filter(|(_, c)| salt_compat::py_truthy_json(c))
        .collect();
    Value::Object(found)
}

fn failed_state(low: &Map<String, Value>, comment: String) -> Value {
    let mut r = new_ret(low);
    r.insert("result".into(), json!(false));
    r.insert("comment".into(), json!(comment));
    Value::Object(r)
}

impl SaltMod {
    /// `salt.parallel_runners`.
    pub(super) fn parallel_runners(&self, low: &Map<String, Value>) -> Value {
        let name = low
            .get("name")
            .map(salt_compat::py_json_str)
            .unwrap_or_default();
        // (id, runner name, its keyword arguments)
        let runners: Vec<(String, String, Map<String, Value>)> = match low.get("runners") {
            Some(Value::String(s)) => vec![(s.clone(), s.clone(), Map::new())],
            Some(Value::Object(m)) => m
                .iter()
                .map(|(id, conf)| {
                    let conf = if conf.is_null() {
                        Map::new()
                    } else {
                        repack_dictlist(conf)
                    };
                    let fun = conf
                        .get("name")
                        .map_or_else(|| id.clone(), salt_compat::py_json_str);
                    let kwarg = match conf.get("kwarg") {
                        Some(Value::Object(k)) => k.clone(),
                        _ => Map::new(),
                    };
                    (id.clone(), fun, kwarg)
                })
                .collect(),
            _ => {
                return failed_state(
                    low,
                    "The runners parameter must be a string or dict.".into(),
                );
            }
        };
        let outputs = match self.rt.block_on(self.run_all(&runners)) {
            Ok(o) => o,
            Err(e) => {
                let mut r =
                    failed_state(low, format!("One of the runners raised an exception: {e}"));
                r["success"] = json!(false);
                return r;
            }
        };
        // An unknown runner: Salt's loader raises KeyError.
        if let Some((_, fun, _)) = runners.iter().zip(&outputs).find_map(|(r, out)| {
            (out == &json!(format!("'{}' is not available.", r.1))).then_some(r)
        }) {
            return failed_state(
                low,
                format!("An exception occurred in this state: KeyError: '{fun}'"),
            );
        }
        if let Some(out) = outputs.iter().find(|o| !o.is_object()) {
            return failed_state(
                low,
                format!(
                    "An exception occurred in this state: AttributeError: '{}' object has no \
                     attribute 'get'",
                    py_type(out)
                ),
            );
        }
        let ids: Vec<&String> = runners.iter().map(|(id, _, _)| id).collect();
        let highstate = outputs
            .iter()
            .all(|o| o.get("outputter") == Some(&json!("highstate")) && o.get("data").is_some());
        let (failed, changes): (Vec<&String>, Value) = if highstate {
            let failed = ids
                .iter()
                .zip(&outputs)
                .filter(|(_, o)| o["data"].get("retcode").is_some_and(|r| r != &json!(0)))
                .map(|(id, _)| *id)
                .collect();
            let mut changes = Map::new();
            for (id, o) in ids.iter().zip(&outputs) {
                let c = extract_changes(&o["data"]);
                if salt_compat::py_truthy_json(&c) {
                    changes.insert((*id).clone(), c);
                }
            }
            (failed, Value::Object(changes))
        } else {
            let failed = ids
                .iter()
                .zip(&outputs)
                .filter(|(_, o)| o.get("exit_code").is_some_and(|c| c != &json!(0)))
                .map(|(id, _)| *id)
                .collect();
            let ret: Map<String, Value> = ids
                .iter()
                .zip(&outputs)
                .map(|(id, o)| ((*id).clone(), o.clone()))
                .collect();
            (failed, json!({ "ret": ret }))
        };
        let comment = match failed.as_slice() {
            [] => "All runner functions executed successfully.".to_owned(),
            // Salt renders each return with the nested outputter; here as indented JSON.
            _ if highstate => failed
                .iter()
                .map(|id| {
                    let i = ids.iter().position(|x| x == id).unwrap_or(0);
                    let text = serde_json::to_string_pretty(&outputs[i]).unwrap_or_default();
                    format!("Runner {id} failed with return value:\n{text}")
                })
                .collect::<Vec<_>>()
                .join("\n"),
            [one] => format!("Runner {one} failed."),
            many => format!(
                "Runners {} failed.",
                many.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        json!({
            "name": name,
            "result": failed.is_empty(),
            "changes": changes,
            "comment": comment,
        })
    }

    /// Every runner at once; their returns in `runners`' order (the first error, if any).
    async fn run_all(
        &self,
        runners: &[(String, String, Map<String, Value>)],
    ) -> Result<Vec<Value>, String> {
        let ctx = crate::runners::ctx::Ctx {
            shared: self.shared.clone(),
            publisher: self.publisher.clone(),
            stop: self.stop.clone(),
            console: self.console.clone(),
        };
        let handles: Vec<_> = runners
            .iter()
            .map(|(_, fun, kwarg)| {
                let mut kw = kwarg.clone();
                kw.retain(|k, _| !k.starts_with("__"));
                if matches!(
                    fun.as_str(),
                    "state.orchestrate" | "state.orch" | "state.sls"
                ) {
                    kw.insert("orchestration_jid".into(), json!(self.jid));
                }
                kw.insert("__kwarg__".into(), json!(true));
                let req = RunnerRequest {
                    fun: fun.clone(),
                    arg: vec![Value::Object(kw)],
                    timeout: None,
                    auth: None,
                };
                let ctx = ctx.clone();
                tokio::spawn(async move {
                    Box::pin(crate::runners::call(&ctx, &req, RUNNER_USER, true, None)).await
                })
            })
            .collect();
        let mut out = Vec::with_capacity(handles.len());
        let mut first_err = None;
        for h in handles {
            match h.await.map_err(|e| e.to_string()).and_then(|r| r) {
                Ok(v) => out.push(v),
                Err(e) => {
                    first_err.get_or_insert(e);
                    out.push(Value::Null);
                }
            }
        }
        first_err.map_or(Ok(out), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extract_changes_is_salts() {
        let data = json!({"m_master": {
            "a": {"changes": {}, "result": true},
            "b": {"changes": {"out": "highstate", "ret": {"m1": {"x": 1}}}},
            "c": {"changes": {"ret": {"m2": true}}},
        }});
        assert_eq!(
            extract_changes(&data),
            json!({"m_master": {"b": {"m1": {"x": 1}}, "c": {"ret": {"m2": true}}}})
        );
        assert_eq!(extract_changes(&json!([1])), json!({}));
    }

    #[test]
    fn repack_dictlist_is_salts() {
        let v = json!([{"name": "jobs.active"}, "skip", {"kwarg": {"a": 1}}]);
        assert_eq!(
            Value::Object(repack_dictlist(&v)),
            json!({"name": "jobs.active", "kwarg": {"a": 1}})
        );
        assert!(repack_dictlist(&json!({"name": "x"})).is_empty());
        assert!(repack_dictlist(&json!([{"a": 1, "b": 2}])).is_empty());
    }
}
