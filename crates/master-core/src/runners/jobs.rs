//! Salt's `jobs` runner over the job cache in use (the files of `{cachedir}/jobs`, or the
//! group's `pgjsonb` tables): the same shapes as Salt's returners give it.

use std::collections::BTreeMap;

use rmpv::Value as Mp;
use serde_json::{Map, Value, json};

use super::ctx::{Args, Ctx};
use crate::jobs::jid::safe_jid;
use crate::jobs::store::JobStore;
use salt_client::local::PublishRequest;
use salt_compat::json::msgpack_to_json;

/// Salt's `jid_to_time`: `2025, Jan 01 00:00:00.000000`, `""` for a jid of another shape.
pub fn jid_to_time(jid: &str) -> String {
    const MONTHS: [&str; 13] = [
        "", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let ok = jid.len() == 20 || (jid.len() > 21 && jid.as_bytes()[20] == b'_');
    if !ok || !jid.is_char_boundary(20) || !jid[..20].bytes().all(|b| b.is_ascii_digit()) {
        return String::new();
    }
    let month = jid[4..6]
        .parse::<usize>()
        .ok()
        .and_then(|m| MONTHS.get(m))
        .copied();
    let Some(month) = month.filter(|m| !m.is_empty()) else {
        return String::new();
    };
    format!(
        "{}, {month} {} {}:{}:{}.{}",
        &jid[..4],
        &jid[6..8],
        &jid[8..10],
        &jid[10..12],
        &jid[12..14],
        &jid[14..20]
    )
}

fn get<'a>(m: &'a Value, k: &str) -> Option<&'a Value> {
    m.as_object()?.get(k)
}

/// Salt's `_format_job_instance` of a job load (JSON).
fn format_job(load: Option<&Value>) -> Map<String, Value> {
    let mut m = Map::new();
    let Some(job) = load.filter(|l| l.is_object()) else {
        m.insert(
            "Error".into(),
            json!("Cannot contact returner or no job with this jid"),
        );
        return m;
    };
    let or = |k: &str, d: Value| get(job, k).cloned().unwrap_or(d);
    m.insert("Function".into(), or("fun", json!("unknown-function")));
    m.insert("Arguments".into(), or("arg", json!([])));
    m.insert("Target".into(), or("tgt", json!("unknown-target")));
    m.insert("Target-type".into(), or("tgt_type", json!("list")));
    m.insert("User".into(), or("user", json!("root")));
    // The job's `metadata`, its `kwargs`' or a `metadata=` keyword among its arguments.
    let kwarg_md = || {
        get(job, "arg")?
            .as_array()?
            .iter()
            .find(|a| {
                get(a, "__kwarg__") == Some(&Value::Bool(true)) && get(a, "metadata").is_some()
            })
            .and_then(|a| get(a, "metadata"))
    };
    let md = get(job, "metadata")
        .or_else(|| get(job, "kwargs").and_then(|k| get(k, "metadata")))
        .or_else(kwarg_md);
    if let Some(md) = md {
        m.insert("Metadata".into(), md.clone());
    }
    // The targeted minions `get_load` adds from `.minions.p`.
    if let Some(minions) = get(job, "Minions") {
        m.insert("Minions".into(), minions.clone());
    }
    m
}

fn format_jid(jid: &str, load: Option<&Value>) -> Map<String, Value> {
    let mut m = format_job(load);
    m.insert("StartTime".into(), json!(jid_to_time(jid)));
    m
}

/// The job load of `jid`, as JSON.
fn load_of(store: &dyn JobStore, jid: &str) -> Result<Option<Value>, String> {
    if !safe_jid(jid) {
        return Ok(None);
    }
    let load: Option<Mp> = store.load(jid).map_err(|e| e.to_string())?;
    Ok(load.map(|l| msgpack_to_json(&l)))
}

/// Salt's `get_jid`: minion id → what `local_cache` keeps of the return: `return`, and
/// `retcode`, `success` and `out` when there.
fn returns_of(store: &dyn JobStore, jid: &str) -> Result<BTreeMap<String, Value>, String> {
    let mut out = BTreeMap::new();
    if !safe_jid(jid) {
        return Ok(out);
    }
    for (id, load) in store.returns(jid).map_err(|e| e.to_string())? {
        let load = msgpack_to_json(&load);
        let mut r = Map::new();
        r.insert(
            "return".into(),
            get(&load, "return").cloned().unwrap_or(load.clone()),
        );
        for k in ["retcode", "success", "out"] {
            if let Some(v) = get(&load, k) {
                r.insert(k.into(), v.clone());
            }
        }
        out.insert(id, Value::Object(r));
    }
    Ok(out)
}

/// Salt's `split_input` then `fnmatch` of any pattern.
fn matches_any(value: &str, patterns: &str) -> bool {
    patterns
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .any(|p| salt_compat::fnmatch(value, p))
}

/// A `start_time`/`end_time` argument or a `StartTime`, as comparable text
/// `YYYYMMDDHHMMSSffffff`: the forms of `dateutil.parser.parse` sites use (ISO dates and
/// times with `T` or a space, `/`-separated and US `m/d/Y` dates, month names, `YYYYMMDD`,
/// Salt's own `StartTime`, and a time alone, which is today as dateutil reads it).
fn time_key(s: &str) -> Option<String> {
    use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
    let s = s.trim();
    const DATE_TIMES: &[&str] = &[
        "%Y, %b %d %H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
        "%Y/%m/%d %H:%M:%S%.f",
        "%Y/%m/%d %H:%M",
        "%m/%d/%Y %H:%M:%S%.f",
        "%m/%d/%Y %H:%M",
        "%b %d %Y %H:%M:%S%.f",
        "%b %d %Y %H:%M",
        "%b %d, %Y %H:%M:%S%.f",
        "%b %d, %Y %H:%M",
        "%d %b %Y %H:%M:%S%.f",
        "%d %b %Y %H:%M",
    ];
    const DATES: &[&str] = &[
        "%Y-%m-%d",
        "%Y/%m/%d",
        "%m/%d/%Y",
        "%b %d %Y",
        "%b %d, %Y",
        "%d %b %Y",
        "%Y%m%d",
    ];
    const TIMES: &[&str] = &["%H:%M:%S%.f", "%H:%M"];
    let dt = DATE_TIMES
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
        .or_else(|| {
            DATES
                .iter()
                .find_map(|f| NaiveDate::parse_from_str(s, f).ok())
                .and_then(|d| d.and_hms_opt(0, 0, 0))
        })
        .or_else(|| {
            TIMES
                .iter()
                .find_map(|f| NaiveTime::parse_from_str(s, f).ok())
                .map(|t| chrono::Local::now().date_naive().and_time(t))
        })?;
    Some(dt.format("%Y%m%d%H%M%S%6f").to_string())
}

fn list_jobs(store: &dyn JobStore, a: &Args) -> Result<Value, String> {
    let search_fun = a.text("search_function");
    let search_tgt = a.text("search_target");
    let start = match a.text("start_time") {
        Some(t) => Some(time_key(&t).ok_or_else(|| format!("Cannot parse start_time {t:?}"))?),
        None => None,
    };
    let end = match a.text("end_time") {
        Some(t) => Some(time_key(&t).ok_or_else(|| format!("Cannot parse end_time {t:?}"))?),
        None => None,
    };
    let metadata = a.get("search_metadata");
    if metadata.is_some_and(|m| !m.is_object()) {
        // Salt logs this and then matches no job.
        tracing::info!(
            "The search_metadata parameter must be specified as a dictionary.  Ignoring."
        );
    }
    let mut out = Map::new();
    for (jid, load) in store.jobs().map_err(|e| e.to_string())? {
        let load = msgpack_to_json(&load);
        let inst = format_jid(&jid, Some(&load));
        let text = |k: &str| inst.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        // Any of the given key/value pairs in the job's metadata.
        if let Some(want) = metadata {
            let have = inst.get("Metadata").and_then(Value::as_object);
            let hit = want
                .as_object()
                .zip(have)
                .is_some_and(|(want, have)| want.iter().any(|(k, v)| have.get(k) == Some(v)));
            if !hit {
                continue;
            }
        }
        if let Some(p) = &search_tgt {
            let targets: Vec<String> = match inst.get("Target") {
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect(),
                Some(Value::String(s)) => vec![s.clone()],
                _ => vec![],
            };
            if !targets.iter().any(|t| matches_any(t, p)) {
                continue;
            }
        }
        if search_fun
            .as_ref()
            .is_some_and(|p| !matches_any(&text("Function"), p))
        {
            continue;
        }
        let when = time_key(&text("StartTime"));
        if start
            .as_ref()
            .is_some_and(|s| when.as_ref().is_none_or(|w| w < s))
        {
            continue;
        }
        if end
            .as_ref()
            .is_some_and(|e| when.as_ref().is_none_or(|w| w > e))
        {
            continue;
        }
        out.insert(jid, Value::Object(inst));
    }
    Ok(match a.text("outputter") {
        Some(o) => json!({"outputter": o, "data": out}),
        None => Value::Object(out),
    })
}

/// Run one `jobs.*` runner.
pub(crate) async fn call(
    ctx: &Ctx,
    fun: &str,
    a: &Args,
    timeout: Option<u64>,
) -> Result<Value, String> {
    if fun == "jobs.active" {
        return active(ctx, timeout).await;
    }
    // The job cache may be a database: read it off the async workers. The readers of
    // returns first wait for the returns delivered so far to be written (they are written
    // behind the `salt` commands). `list_jobs` reads only the job loads: it waits for those
    // queued behind a publish (the reactor's), not for the returns (after a burst of
    // fan-outs that wait was the write-behind of every return queued, seconds of it).
    let (shared, fun, a) = (ctx.shared.clone(), fun.to_owned(), a.clone());
    tokio::task::spawn_blocking(move || {
        if fun == "jobs.list_jobs" {
            shared.jobs.flush_loads();
        } else {
            shared.jobs.flush();
        }
        read(shared.jobs.store(), &fun, &a)
    })
    .await
    .map_err(|e| e.to_string())?
}

fn read(store: &dyn JobStore, fun: &str, a: &Args) -> Result<Value, String> {
    match fun {
        "jobs.list_jobs" => list_jobs(store, a),
        _ => {
            let jid = a.text("jid").unwrap_or_default();
            let load = load_of(store, &jid)?;
            let returns = returns_of(store, &jid)?;
            match fun {
                "jobs.lookup_jid" => {
                    let mut ret = Map::new();
                    if a.flag("returned", true) {
                        for (id, r) in &returns {
                            ret.insert(
                                id.clone(),
                                get(r, "return").cloned().unwrap_or(Value::Null),
                            );
                        }
                    }
                    if a.flag("missing", false) {
                        let targeted = load
                            .as_ref()
                            .and_then(|l| get(l, "minions"))
                            .and_then(Value::as_array)
                            .cloned()
                            .unwrap_or_default();
                        for id in targeted.iter().filter_map(Value::as_str) {
                            if !returns.contains_key(id) {
                                ret.insert(id.to_owned(), json!("Minion did not return"));
                            }
                        }
                    }
                    let out = returns.values().next().and_then(|r| get(r, "out")).cloned();
                    Ok(match out {
                        Some(o) => json!({"outputter": o, "data": ret}),
                        None => Value::Object(ret),
                    })
                }
                "jobs.list_job" => {
                    let mut m = Map::new();
                    m.insert("jid".into(), json!(jid));
                    m.extend(format_jid(&jid, load.as_ref()));
                    m.insert("Result".into(), json!(returns));
                    Ok(Value::Object(m))
                }
                _ => {
                    let mut m = format_jid(&jid, load.as_ref());
                    m.insert("Result".into(), json!(returns));
                    Ok(json!({ jid: m }))
                }
            }
        }
    }
}

/// Salt's `jobs.active`: `saltutil.running` on every minion, and who returned already.
async fn active(ctx: &Ctx, timeout: Option<u64>) -> Result<Value, String> {
    let req = PublishRequest {
        tgt: "*".into(),
        tgt_type: "glob".into(),
        fun: "saltutil.running".into(),
        timeout: timeout.unwrap_or(5),
        ..Default::default()
    };
    let (_, got, _) =
        match crate::jobs::run::run_job(&ctx.shared, &ctx.publisher, &ctx.stop, &req).await {
            Ok(r) => r,
            Err(e) if e.starts_with("No minions matched") => return Ok(json!({})),
            Err(e) => return Err(e),
        };
    let mut ret: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for (minion, data) in got {
        let data = msgpack_to_json(&data);
        let Some(jobs) = get(&data, "return").and_then(Value::as_array) else {
            continue;
        };
        for job in jobs {
            let Some(jid) = get(job, "jid").and_then(Value::as_str) else {
                continue;
            };
            let pid = get(job, "pid").cloned().unwrap_or(Value::Null);
            let entry = ret.entry(jid.to_owned()).or_insert_with(|| {
                let mut m = format_jid(jid, Some(job));
                m.insert("Running".into(), json!([]));
                m.insert("Returned".into(), json!([]));
                m
            });
            if let Some(Value::Array(r)) = entry.get_mut("Running") {
                r.push(json!({ minion.clone(): pid }));
            }
        }
    }
    let shared = ctx.shared.clone();
    tokio::task::spawn_blocking(move || {
        shared.jobs.flush();
        for (jid, m) in ret.iter_mut() {
            let returned: Vec<Value> = returns_of(shared.jobs.store(), jid)?
                .into_keys()
                .map(Value::from)
                .collect();
            m.insert("Returned".into(), Value::Array(returned));
        }
        Ok(json!(ret))
    })
    .await
    .map_err(|e| e.to_string())?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jid_times_as_salt() {
        assert_eq!(
            jid_to_time("20250102030405123456"),
            "2025, Jan 02 03:04:05.123456"
        );
        assert_eq!(
            jid_to_time("20251224000000000000_42"),
            "2025, Dec 24 00:00:00.000000"
        );
        assert_eq!(jid_to_time("req"), "");
        assert_eq!(jid_to_time("20251324000000000000"), "");
        assert_eq!(
            time_key("2025, Jan 02 03:04:05.123456").as_deref(),
            Some("20250102030405123456")
        );
        assert_eq!(
            time_key("2025-01-02").as_deref(),
            Some("20250102000000000000")
        );
        // What `dateutil.parser.parse` makes of them (Salt 3007.17's venv).
        for (text, parsed) in [
            ("2026-11-27", "20261127000000000000"),
            ("2026-11-27 18:00", "20261127180000000000"),
            ("2026-11-27T18:00:05", "20261127180005000000"),
            ("2026, Nov 27 18:22:00.688137", "20261127182200688137"),
            ("Nov 27 2026 18:00", "20261127180000000000"),
            ("27 Nov 2026", "20261127000000000000"),
            ("Nov 27, 2026", "20261127000000000000"),
            ("2026/11/27 18:00:01", "20261127180001000000"),
            ("11/27/2026", "20261127000000000000"),
            ("2026-11-27 18:00:00.5", "20261127180000500000"),
            ("20261127", "20261127000000000000"),
        ] {
            assert_eq!(time_key(text).as_deref(), Some(parsed), "{text}");
        }
        let today = chrono::Local::now().format("%Y%m%d").to_string();
        assert_eq!(
            time_key("18:00").as_deref(),
            Some(format!("{today}180000000000").as_str())
        );
        assert_eq!(time_key("yesterday"), None);
        assert!(matches_any("test.ping", "cmd.*, test.*"));
        assert!(!matches_any("test.ping", "cmd.*"));
    }
}
