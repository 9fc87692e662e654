//! `salt.netapi.NetapiClient.run`: one lowstate chunk through the client it names, as a
//! client of the master (clear `publish`, `runner`, `wheel`) and its event bus
//! (`local_batch`, `local_subset`: [`crate::batch`]).

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::Api;
use crate::error::ApiError;

/// `salt.netapi.CLIENTS` (every public method of `NetapiClient` but `run`, sorted).
pub const CLIENTS: [&str; 10] = [
    "destroy",
    "local",
    "local_async",
    "local_batch",
    "local_subset",
    "runner",
    "runner_async",
    "ssh",
    "wheel",
    "wheel_async",
];

/// The master's default `timeout` (seconds `LocalClient.cmd` waits for returns).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// `NetapiClient.run(low)`.
///
/// # Errors
/// Salt's statuses: 400 (unknown or disabled client, bad arguments), 401 (no or refused
/// credentials), 503 (no master), 504 (a runner's return did not come).
pub async fn run(api: &Api, low: Map<String, Value>) -> Result<Value, ApiError> {
    let client = text(low.get("client")).unwrap_or_else(|| "None".to_owned());
    if !CLIENTS.contains(&client.as_str()) {
        return Err(ApiError::bad_request(format!(
            "Invalid client specified: '{client}'"
        )));
    }
    if !api.enabled_clients.contains(&client) {
        return Err(ApiError::bad_request(format!(
            "Client disabled: '{client}'. Add to 'netapi_enable_clients' master config option to enable."
        )));
    }
    if !(low.contains_key("token") || low.contains_key("eauth")) {
        return Err(ApiError::unauthorized(
            "No authentication credentials given",
        ));
    }
    if low.get("raw_shell").is_some_and(truthy) {
        return Err(ApiError::unauthorized("Raw shell option not allowed."));
    }
    match client.as_str() {
        "local" => local(api, low).await,
        "local_async" => local_async(api, low).await,
        "runner" => runner(api, low).await,
        "local_batch" => crate::batch::local_batch(api, low).await,
        "local_subset" => crate::batch::local_subset(api, low).await,
        "runner_async" => {
            let mut load = reformat_low(low)?;
            load.insert("cmd".into(), json!("runner"));
            api.master.master_call(load).await
        }
        "wheel" => {
            let mut load = low;
            load.insert("cmd".into(), json!("wheel"));
            api.master.master_call(load).await
        }
        "wheel_async" => {
            let mut load = low;
            load.insert("cmd".into(), json!("wheel"));
            let ret = api.master.master_call(load).await?;
            let jid = ret.pointer("/data/jid").cloned().unwrap_or(Value::Null);
            Ok(json!({"tag": ret.get("tag").cloned().unwrap_or(Value::Null), "jid": jid}))
        }
        other => Err(ApiError::bad_request(format!(
            "salt-rs's salt-api does not implement the '{other}' client"
        ))),
    }
}

/// `LowDataAdapter.exec_lowstate`.
pub(crate) async fn exec_lowstate(
    api: &Api,
    lowstate: Option<Value>,
    client: Option<&str>,
    token: Option<&str>,
) -> Result<Vec<Value>, ApiError> {
    let Some(Value::Array(chunks)) = lowstate else {
        return Err(ApiError::bad_request("Lowstates must be a list"));
    };
    let mut out = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        let Value::Object(mut chunk) = chunk else {
            return Err(ApiError::internal());
        };
        if let Some(t) = token {
            chunk.insert("token".into(), json!(t));
        }
        if let Some(t) = chunk.get("token") {
            let hex = t.as_str().is_some_and(|s| {
                !s.is_empty()
                    && s.trim_start_matches("0x")
                        .chars()
                        .all(|c| c.is_ascii_hexdigit())
            });
            if !hex {
                return Err(ApiError::unauthorized("Invalid token"));
            }
        }
        if let Some(c) = client {
            chunk.insert("client".into(), json!(c));
        }
        if let Some(arg) = chunk.get_mut("arg")
            && !arg.is_array()
        {
            let one = arg.take();
            *arg = Value::Array(vec![one]);
        }
        // A `local_batch` answer is Salt's generator: each of its items is one of `return`'s.
        let batch = chunk.get("client").and_then(Value::as_str) == Some("local_batch");
        match run(api, chunk).await? {
            Value::Array(items) if batch => out.extend(items),
            other => out.push(other),
        }
    }
    Ok(out)
}

pub(crate) use salt_compat::py_truthy_json as truthy;

/// `salt.utils.args.condition_input(arg, kwarg)`: the keyword arguments appended to `arg`
/// as one `__kwarg__` mapping.
fn condition_input(low: &Map<String, Value>) -> Value {
    let mut arg = match low.get("arg") {
        Some(Value::Array(a)) => a.clone(),
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) if s.is_empty() => Vec::new(),
        Some(other) => vec![other.clone()],
    };
    if let Some(Value::Object(kw)) = low.get("kwarg")
        && !kw.is_empty()
    {
        let mut kw = kw.clone();
        kw.insert("__kwarg__".into(), json!(true));
        arg.push(Value::Object(kw));
    }
    Value::Array(arg)
}

/// The keyword arguments `LocalClient.cmd`/`run_job` pass on as the publish's `kwargs`:
/// every key of the chunk that is not one of their parameters.
const LOCAL_PARAMS: [&str; 10] = [
    "tgt",
    "fun",
    "arg",
    "timeout",
    "tgt_type",
    "ret",
    "jid",
    "full_return",
    "kwarg",
    "listen",
];

/// `LocalClient._prep_pub` + `pub`: the publish, answered `{jid, minions}` (empty when
/// nothing was sent, as `_check_pub_data`).
pub(crate) async fn publish(api: &Api, low: &Map<String, Value>) -> Result<Value, ApiError> {
    let tgt = low.get("tgt").cloned().unwrap_or(json!(""));
    let Some(fun) = low.get("fun").cloned() else {
        return Err(ApiError::bad_request("Missing required argument 'fun'"));
    };
    let kwargs: Map<String, Value> = low
        .iter()
        .filter(|(k, _)| !LOCAL_PARAMS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let load = json!({
        "cmd": "publish",
        "tgt": tgt,
        "fun": fun,
        "arg": condition_input(low),
        "key": Value::Null,
        "tgt_type": low.get("tgt_type").cloned().unwrap_or(json!("glob")),
        "ret": low.get("ret").cloned().unwrap_or(json!("")),
        "jid": low.get("jid").cloned().unwrap_or(json!("")),
        "kwargs": kwargs,
        "user": Value::Null,
    });
    let Value::Object(load) = load else {
        return Err(ApiError::internal());
    };
    let payload = api.master.call(load).await?;
    if payload == json!("") {
        return Err(ApiError::unauthorized(
            "Failed to authenticate! This is most likely because this user is not permitted \
             to execute commands, but there is a small possibility that a disk error occurred \
             (check disk/inode usage).",
        ));
    }
    if let Some(err) = payload.get("error") {
        let name = err.get("name").and_then(Value::as_str).unwrap_or_default();
        if matches!(name, "AuthenticationError" | "AuthorizationError") {
            return Err(crate::master::raised(err));
        }
        tracing::warn!("publish refused by the master: {err}");
        return Err(ApiError::internal());
    }
    let (Some(jid), Some(minions)) = (
        payload.pointer("/load/jid").filter(|j| !j.is_null()),
        payload.pointer("/load/minions"),
    ) else {
        return Ok(json!({}));
    };
    if jid == "0" || minions.as_array().is_none_or(Vec::is_empty) {
        return Ok(json!({}));
    }
    Ok(json!({"jid": jid, "minions": minions}))
}

/// `NetapiClient.local_async`: `LocalClient.run_job`.
async fn local_async(api: &Api, low: Map<String, Value>) -> Result<Value, ApiError> {
    publish(api, &low).await
}

/// A chunk's `timeout` (seconds), else the master's default.
pub(crate) fn timeout_of(low: &Map<String, Value>) -> Duration {
    low.get("timeout")
        .and_then(|t| t.as_f64().or_else(|| t.as_str()?.parse().ok()))
        .filter(|t| *t > 0.0)
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64)
}

/// `NetapiClient.local`: `LocalClient.cmd`: the returns of the targeted minions that answer
/// within `timeout` (the master's default 5 s), `{minion: return}` (`full_return`: the whole
/// return event data), and `False` for each targeted minion that did not.
pub(crate) async fn local(api: &Api, low: Map<String, Value>) -> Result<Value, ApiError> {
    gather(api, low, true).await
}

/// `LocalClient.cmd_iter` gathered: the returns of the minions that answer only (a batch's
/// `gather_minions`).
pub(crate) async fn local_answered(api: &Api, low: Map<String, Value>) -> Result<Value, ApiError> {
    gather(api, low, false).await
}

/// [`local`] (`missing_false`) and [`local_answered`].
async fn gather(
    api: &Api,
    low: Map<String, Value>,
    missing_false: bool,
) -> Result<Value, ApiError> {
    let mut events = api.bus.subscribe();
    let pub_data = publish(api, &low).await?;
    let (Some(jid), Some(minions)) = (
        pub_data.get("jid").and_then(Value::as_str),
        pub_data.get("minions").and_then(Value::as_array),
    ) else {
        return Ok(json!({}));
    };
    let timeout = timeout_of(&low);
    let full = low.get("full_return").is_some_and(truthy);
    let mut waiting: HashSet<&str> = minions.iter().filter_map(Value::as_str).collect();
    let prefix = format!("salt/job/{jid}/ret/");
    let mut out = Map::new();
    let deadline = tokio::time::Instant::now() + timeout;
    while !waiting.is_empty() {
        let ev = match tokio::time::timeout_at(deadline, events.recv()).await {
            Err(_) => break,
            Ok(Ok(ev)) => ev,
            Ok(Err(RecvError::Lagged(n))) => {
                tracing::warn!("job {jid}: {n} events lost while waiting for returns");
                continue;
            }
            Ok(Err(RecvError::Closed)) => break,
        };
        let Some(id) = ev.tag.strip_prefix(&prefix) else {
            continue;
        };
        waiting.remove(id);
        let value = if full {
            // `get_iter_returns`: `ret`, then `out`, `retcode` and `jid` when the return has them.
            let mut m = Map::new();
            m.insert(
                "ret".into(),
                ev.data.get("return").cloned().unwrap_or(json!({})),
            );
            for k in ["out", "retcode", "jid"] {
                if let Some(v) = ev.data.get(k) {
                    m.insert(k.into(), v.clone());
                }
            }
            Value::Object(m)
        } else {
            ev.data.get("return").cloned().unwrap_or(json!({}))
        };
        out.insert(id.to_owned(), value);
    }
    // `LocalClient.cmd`: a targeted minion that did not return (a key with no minion
    // running) is `False`.
    for m in minions.iter().filter_map(Value::as_str) {
        if missing_false && !out.contains_key(m) {
            out.insert(m.to_owned(), Value::Bool(false));
        }
    }
    Ok(Value::Object(out))
}

/// The eauth and routing keys `RunnerClient._reformat_low` keeps at the top of the load.
const RUNNER_CREDS: [&str; 7] = [
    "username", "password", "eauth", "token", "client", "user", "key",
];

/// `RunnerClient._reformat_low`: an unknown runner refused as `verify_fun` refuses it; the credentials and `fun` stay on top; `arg` is positional
/// and `kwarg` with every other key are the keyword arguments, sent as the load's
/// `kwarg: {arg, kwarg}`.
fn reformat_low(mut low: Map<String, Value>) -> Result<Map<String, Value>, ApiError> {
    let Some(fun) = low.remove("fun") else {
        return Err(ApiError::bad_request("Missing required argument 'fun'"));
    };
    // `verify_fun(self.functions, fun)`: a `CommandExecutionError`, answered 500.
    if !fun.as_str().is_some_and(salt_master_core::runner_exists) {
        return Err(ApiError::internal());
    }
    let mut out = Map::new();
    out.insert("fun".into(), fun);
    for k in RUNNER_CREDS {
        if let Some(v) = low.remove(k) {
            out.insert(k.into(), v);
        }
    }
    let arg = match low.remove("arg") {
        Some(Value::Array(a)) => a,
        None | Some(Value::Null) => Vec::new(),
        Some(other) => vec![other],
    };
    let mut kwarg = match low.remove("kwarg") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    kwarg.extend(low);
    out.insert("kwarg".into(), json!({"arg": arg, "kwarg": kwarg}));
    Ok(out)
}

/// `NetapiClient.runner`: `RunnerClient.cmd_sync`: the master runs it; its `ret` event is
/// awaited `timeout` (else `rest_timeout`) seconds, 504 after that.
async fn runner(api: &Api, mut low: Map<String, Value>) -> Result<Value, ApiError> {
    let timeout = low
        .remove("timeout")
        .and_then(|t| t.as_f64().or_else(|| t.as_str()?.parse().ok()))
        .map_or(api.rest_timeout, Duration::from_secs_f64);
    let full = low.remove("full_return").is_some_and(|v| truthy(&v));
    let mut low = reformat_low(low)?;
    low.insert("cmd".into(), json!("runner"));
    let mut events = api.bus.subscribe();
    let job = api.master.master_call(low).await?;
    let Some(tag) = job.get("tag").and_then(Value::as_str) else {
        return Err(ApiError::internal());
    };
    let ret_tag = format!("{tag}/ret");
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Err(_) | Ok(Err(RecvError::Closed)) => {
                return Err(ApiError::status(axum::http::StatusCode::GATEWAY_TIMEOUT));
            }
            Ok(Err(RecvError::Lagged(_))) => {}
            Ok(Ok(ev)) if ev.tag == ret_tag => {
                return Ok(if full {
                    json!({"tag": ev.tag, "data": ev.data})
                } else {
                    ev.data.get("return").cloned().unwrap_or(Value::Null)
                });
            }
            Ok(Ok(_)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kwargs_are_conditioned_as_salt_does() {
        let low = json!({"arg": ["a"], "kwarg": {"x": 1}});
        assert_eq!(
            condition_input(low.as_object().unwrap()),
            json!(["a", {"x": 1, "__kwarg__": true}])
        );
    }
}
