//! Salt's `manage` runner: which minions answer.
//!
//! `status`/`up`/`down` publish `test.ping` to the target as the master and wait as `salt`
//! does (`timeout`, then `saltutil.find_job` rounds); `present`/`not_present`/`alived` are the
//! minions signed in to this master since it started (Salt matches TCP connections to the
//! publish port against cached grains), `versions` asks `test.version`.
//!
//! In a master group with `master_job_cache: pgjsonb` (docs/group.md), a minion that
//! another live member holds (the master of its latest sign-in, with a heartbeat in the last
//! 15 s) counts as up and present: this master's publications do not reach it.

use serde_json::{Value, json};

use super::ctx::{Args, Ctx};
use salt_client::local::PublishRequest;

/// Ping the target: (answered, not answered), each sorted.
async fn ping(
    ctx: &Ctx,
    a: &Args,
    timeout: Option<u64>,
) -> Result<(Vec<String>, Vec<String>), String> {
    let req = PublishRequest {
        tgt: a.text("tgt").unwrap_or_else(|| "*".into()),
        tgt_type: a.text("tgt_type").unwrap_or_else(|| "glob".into()),
        fun: "test.ping".into(),
        timeout: secs(a, "timeout").or(timeout).unwrap_or(5),
        gather_job_timeout: secs(a, "gather_job_timeout"),
        ..Default::default()
    };
    match crate::jobs::run::run_job(&ctx.shared, &ctx.publisher, &ctx.stop, &req).await {
        Ok((_, got, missing)) => {
            let mut up: Vec<String> = got.into_iter().map(|(id, _)| id).collect();
            let mut down: Vec<String> = missing
                .no_response
                .into_iter()
                .chain(missing.not_connected)
                .collect();
            if !down.is_empty() {
                // In a group: a minion another live member holds did not get this
                // master's ping, but is up.
                let elsewhere = held_elsewhere(ctx).await;
                let (moved, still): (Vec<String>, Vec<String>) =
                    down.into_iter().partition(|id| elsewhere.contains(id));
                up.extend(moved);
                down = still;
            }
            up.sort();
            up.dedup();
            down.sort();
            Ok((up, down))
        }
        Err(e) if e.starts_with("No minions matched") => Ok((vec![], vec![])),
        Err(e) => Err(e),
    }
}

/// With the group job cache: the minions another live member holds (its latest sign-in
/// went there), which this master's publications do not reach.
async fn held_elsewhere(ctx: &Ctx) -> Vec<String> {
    let shared = ctx.shared.clone();
    let rows = tokio::task::spawn_blocking(move || shared.jobs.store().presence())
        .await
        .unwrap_or(Ok(None));
    match rows {
        Ok(Some(rows)) => rows
            .into_iter()
            .filter(|(_, master, alive)| *alive && *master != ctx.shared.cfg.id)
            .map(|(id, _, _)| id)
            .collect(),
        Ok(None) => vec![],
        Err(e) => {
            tracing::warn!("manage: group presence unavailable: {e}");
            vec![]
        }
    }
}

/// The minions signed in here, plus (in a group) those another live member holds.
async fn present(ctx: &Ctx) -> Vec<String> {
    let mut v = connected(ctx);
    v.extend(held_elsewhere(ctx).await);
    v.sort();
    v.dedup();
    v
}

fn connected(ctx: &Ctx) -> Vec<String> {
    let mut v: Vec<String> = ctx
        .shared
        .connected
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .cloned()
        .collect();
    v.sort();
    v
}

/// Run one `manage.*` runner.
pub(crate) async fn call(
    ctx: &Ctx,
    fun: &str,
    a: &Args,
    timeout: Option<u64>,
) -> Result<Value, String> {
    match fun {
        "manage.status" => {
            // status(output=True, tgt, tgt_type, timeout, gather_job_timeout)
            let (up, down) = ping(ctx, a, timeout).await?;
            Ok(json!({"up": up, "down": down}))
        }
        "manage.up" => Ok(json!(ping(ctx, a, timeout).await?.0)),
        "manage.down" => {
            // down(removekeys=False, tgt, tgt_type, timeout, gather_job_timeout)
            let (_, down) = ping(ctx, a, timeout).await?;
            if a.flag("removekeys", false) && !down.is_empty() {
                // As Salt: wheel `key.delete` for each (the key store in use, `salt/key`
                // events, the AES key rotation).
                let (shared, ids) = (ctx.shared.clone(), down.clone());
                tokio::task::spawn_blocking(move || {
                    for id in ids {
                        let mut low = serde_json::Map::new();
                        low.insert("match".into(), json!(id));
                        crate::wheel::call_low(&shared, "key.delete", &low, "UNKNOWN");
                    }
                })
                .await
                .map_err(|e| format!("manage.down: {e}"))?;
                tracing::info!("manage.down: deleted the keys of {}", down.join(", "));
            }
            Ok(json!(down))
        }
        "manage.present" | "manage.alived" => Ok(json!(subset(a, present(ctx).await))),
        "manage.not_present" => {
            let on = present(ctx).await;
            let _ = ctx.shared.store.refresh();
            let mut acc = ctx.shared.store.list(salt_keystore::KeyState::Accepted);
            acc.sort();
            acc.retain(|id| !on.contains(id));
            Ok(json!(subset(a, acc)))
        }
        _ => versions(ctx, timeout).await,
    }
}

/// A parameter as a number of seconds.
fn secs(a: &Args, name: &str) -> Option<u64> {
    a.int(name).and_then(|n| u64::try_from(n).ok())
}

fn subset(a: &Args, ids: Vec<String>) -> Vec<String> {
    match a.get("subset") {
        Some(Value::Array(s)) => ids
            .into_iter()
            .filter(|i| s.iter().any(|x| x.as_str() == Some(i)))
            .collect(),
        Some(Value::String(s)) => {
            let want: Vec<&str> = s.split(',').map(str::trim).collect();
            ids.into_iter()
                .filter(|i| want.contains(&i.as_str()))
                .collect()
        }
        _ => ids,
    }
}

/// Salt's `manage.versions`: minions grouped by how their version compares to the master's.
async fn versions(ctx: &Ctx, timeout: Option<u64>) -> Result<Value, String> {
    let req = PublishRequest {
        tgt: "*".into(),
        tgt_type: "glob".into(),
        fun: "test.version".into(),
        timeout: timeout.unwrap_or(5),
        ..Default::default()
    };
    let got = match crate::jobs::run::run_job(&ctx.shared, &ctx.publisher, &ctx.stop, &req).await {
        Ok((_, got, _)) => got,
        // Salt: no minion answered, only the master's version.
        Err(e) if e.starts_with("No minions matched") => {
            return Ok(json!({"Master": salt_proto::SALT_VERSION}));
        }
        Err(e) => return Err(e),
    };
    let master = salt_proto::SALT_VERSION;
    let key = |v: &str| -> Vec<u64> {
        v.split(['.', 'r', 'c'])
            .filter_map(|p| p.parse().ok())
            .collect()
    };
    let mut groups: std::collections::BTreeMap<&str, serde_json::Map<String, Value>> =
        std::collections::BTreeMap::new();
    for (id, data) in got {
        let ret = salt_compat::map_get(&data, "return");
        let failed = salt_compat::map_get(&data, "retcode")
            .and_then(rmpv::Value::as_i64)
            .is_some_and(|c| c != 0);
        let v = ret.and_then(rmpv::Value::as_str).unwrap_or("").to_owned();
        if failed || v.is_empty() {
            // Salt's "falsy return or a retcode": offline, `False`.
            groups
                .entry("Minion offline")
                .or_default()
                .insert(id, json!(false));
            continue;
        }
        let label = match key(&v).cmp(&key(master)) {
            std::cmp::Ordering::Less => "Minion requires update",
            std::cmp::Ordering::Equal => "Up to date",
            std::cmp::Ordering::Greater => "Minion newer than master",
        };
        groups.entry(label).or_default().insert(id, json!(v));
    }
    let mut out = serde_json::Map::new();
    for (k, v) in groups {
        out.insert(k.into(), Value::Object(v));
    }
    out.insert("Master".into(), json!(master));
    Ok(Value::Object(out))
}
