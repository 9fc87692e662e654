//! `NetapiClient.local_batch` and `local_subset`: Salt 3007's `LocalClient.cmd_batch`
//! (`salt/cli/batch.py`'s `Batch(quiet=True).run()`) and `LocalClient.cmd_subset`, driven by
//! the API as Salt's salt-api drives them: as a client of the master (clear `publish` with the
//! caller's credentials) reading the returns from the master's event bus.
//!
//! `local_batch` answers one `{minion: return}` per minion, in the order they return (a
//! minion that does not return within `timeout`: `{minion: {}}`; with `raw`, the whole return
//! event); rest_cherrypy puts each in the reply's `return` list as Salt's generator yields it.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

use crate::Api;
use crate::clients::{local, publish, timeout_of, truthy};
use crate::error::ApiError;

/// The keys of a chunk that are its caller's credentials (`cmd_batch` passes them on).
const EAUTH: [&str; 4] = ["eauth", "username", "password", "token"];

/// A lowstate chunk for `LocalClient.cmd`/`cmd_iter_no_block` on `minions` (`tgt_type:
/// list`) with `low`'s function, arguments, returner and credentials.
fn list_low(low: &Map<String, Value>, minions: &[String], fun: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("tgt".into(), json!(minions));
    out.insert("tgt_type".into(), json!("list"));
    out.insert("fun".into(), fun.clone());
    for k in ["arg", "kwarg", "ret", "timeout"].into_iter().chain(EAUTH) {
        if let Some(v) = low.get(k) {
            out.insert(k.into(), v.clone());
        }
    }
    out
}

/// One published slice: its minions still to return and when it is given up.
struct Slice {
    waiting: HashSet<String>,
    deadline: Instant,
}

/// `LocalClient.cmd_batch(tgt, fun, arg, tgt_type, ret, kwarg, batch="10%", **kwargs)`.
///
/// # Errors
/// The publish's errors (credentials, no master); a bad `batch`.
pub(crate) async fn local_batch(api: &Api, low: Map<String, Value>) -> Result<Value, ApiError> {
    let Some(fun) = low.get("fun").cloned() else {
        return Err(ApiError::bad_request("Missing required argument 'fun'"));
    };
    let spec = match low.get("batch") {
        None | Some(Value::Null) => "10%".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    let timeout = timeout_of(&low);
    let raw = low.get("raw").is_some_and(truthy);
    let failhard = low.get("failhard").is_some_and(truthy);
    let bwait = low
        .get("batch_wait")
        .and_then(|t| t.as_f64().or_else(|| t.as_str()?.parse().ok()))
        .filter(|t| *t > 0.0)
        .map(Duration::from_secs_f64);

    // `gather_minions`: the target's `test.ping`; those that answer are the batch.
    let mut ping = Map::new();
    for (k, v) in &low {
        if matches!(k.as_str(), "tgt" | "tgt_type" | "timeout") || EAUTH.contains(&k.as_str()) {
            ping.insert(k.clone(), v.clone());
        }
    }
    ping.insert("fun".into(), json!("test.ping"));
    let answered = crate::clients::local_answered(api, ping).await?;
    let mut to_run: Vec<String> = answered
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, r)| !r.get("failed").is_some_and(truthy))
        .map(|(m, _)| m.clone())
        .collect();
    if to_run.is_empty() {
        return Ok(Value::Array(Vec::new()));
    }
    let Ok(bnum) = salt_client::batch::batch_size(&spec, to_run.len()) else {
        // Salt's `get_bnum` answers None (printed, quiet here): the loop then fails.
        return Err(ApiError::internal());
    };
    let bnum = usize::try_from(bnum).unwrap_or(usize::MAX);
    let total = to_run.len();

    let mut events = api.bus.subscribe();
    let mut slices: HashMap<String, Slice> = HashMap::new();
    let mut active = 0usize;
    let mut wait: Vec<Instant> = Vec::new();
    let mut done = 0usize;
    let mut out = Vec::new();
    while done < total {
        let now = Instant::now();
        wait.retain(|w| *w > now);
        let free = bnum.saturating_sub(active + wait.len());
        if free > 0 && !to_run.is_empty() {
            let take = free.min(to_run.len());
            let next: Vec<String> = to_run.split_off(to_run.len() - take);
            let pub_data = publish(api, &list_low(&low, &next, &fun)).await?;
            active += next.len();
            match pub_data.get("jid").and_then(Value::as_str) {
                Some(jid) => {
                    slices.insert(
                        jid.to_owned(),
                        Slice {
                            waiting: next.into_iter().collect(),
                            deadline: now + timeout,
                        },
                    );
                }
                // Nothing was sent (the minions went away): they return nothing.
                None => {
                    for m in next {
                        active -= 1;
                        done += 1;
                        out.push(empty_return(&m, raw));
                    }
                }
            }
            continue;
        }
        let next_deadline = slices
            .values()
            .map(|s| s.deadline)
            .chain(wait.iter().copied())
            .min();
        let ev = match next_deadline {
            Some(d) => tokio::time::timeout_at(d, events.recv()).await.ok(),
            None => Some(events.recv().await),
        };
        match ev {
            Some(Ok(ev)) => {
                let Some((jid, id)) = ev
                    .tag
                    .strip_prefix("salt/job/")
                    .and_then(|r| r.split_once("/ret/"))
                else {
                    continue;
                };
                let Some(slice) = slices.get_mut(jid) else {
                    continue;
                };
                if !slice.waiting.remove(id) {
                    continue;
                }
                active -= 1;
                done += 1;
                if let Some(w) = bwait {
                    wait.push(Instant::now() + w);
                }
                out.push(if raw {
                    json!({"data": ev.data, "tag": ev.tag})
                } else {
                    json!({id: ev.data.get("return").cloned().unwrap_or(json!({}))})
                });
                if failhard && retcode(&ev.data) > 0 {
                    tracing::error!(
                        "Minion {id} returned with non-zero exit code. Batch run stopped due to \
                         failhard"
                    );
                    break;
                }
            }
            Some(Err(RecvError::Lagged(n))) => {
                tracing::warn!("batch: {n} events lost while waiting for returns");
            }
            Some(Err(RecvError::Closed)) => return Err(ApiError::internal()),
            // A deadline passed: slices past theirs give up on the minions still out.
            None => {
                let now = Instant::now();
                slices.retain(|_, s| {
                    if s.deadline > now {
                        return true;
                    }
                    let mut late: Vec<&String> = s.waiting.iter().collect();
                    late.sort();
                    for m in late {
                        active -= 1;
                        done += 1;
                        out.push(empty_return(m, raw));
                    }
                    false
                });
            }
        }
        slices.retain(|_, s| !s.waiting.is_empty());
    }
    Ok(Value::Array(out))
}

/// What `Batch.run` yields for a minion that did not return (`parts[minion] = {"ret": {}}`).
fn empty_return(minion: &str, raw: bool) -> Value {
    if raw {
        json!({"ret": {}})
    } else {
        json!({minion: {}})
    }
}

/// The return's `retcode`, the highest of a mapping's (`Batch.run`).
fn retcode(data: &Value) -> i64 {
    match data.get("retcode") {
        Some(Value::Object(m)) => m.values().filter_map(Value::as_i64).max().unwrap_or(0),
        Some(v) => v.as_i64().unwrap_or(0),
        None => 0,
    }
}

/// `LocalClient.cmd_subset(tgt, fun, arg, tgt_type, ret, kwarg, subset=3, ...)`: the
/// target's `sys.list_functions`, then `fun` on up to `subset` (or the legacy `sub`) of the
/// minions that have it, chosen at random.
///
/// # Errors
/// The publish's errors.
pub(crate) async fn local_subset(
    api: &Api,
    mut low: Map<String, Value>,
) -> Result<Value, ApiError> {
    use rand::seq::SliceRandom as _;
    let Some(fun) = low.get("fun").cloned() else {
        return Err(ApiError::bad_request("Missing required argument 'fun'"));
    };
    let sub = low.remove("sub");
    let subset = low.remove("subset");
    let n = sub
        .or(subset)
        .and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()))
        .unwrap_or(3);
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    let mut list = low.clone();
    list.insert("fun".into(), json!("sys.list_functions"));
    for k in ["arg", "kwarg", "ret", "full_return"] {
        list.remove(k);
    }
    let rets = local(api, list).await?;
    let mut minions: Vec<(&String, &Value)> = rets.as_object().into_iter().flatten().collect();
    minions.shuffle(&mut rand::thread_rng());
    let mut chosen = Vec::new();
    for (m, functions) in minions {
        let has = match functions {
            Value::Array(a) => a.contains(&fun),
            Value::Object(o) => fun.as_str().is_some_and(|f| o.contains_key(f)),
            _ => false,
        };
        if has {
            chosen.push(m.clone());
        }
        if chosen.len() >= n {
            break;
        }
    }
    low.insert("tgt".into(), json!(chosen));
    low.insert("tgt_type".into(), json!("list"));
    local(api, low).await
}
