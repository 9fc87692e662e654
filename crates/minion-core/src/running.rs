//! The jobs this minion is running, and the `saltutil` functions that look at them:
//! `running`, `find_job`, `signal_job`, `term_job`, `kill_job`, `term_all_jobs`,
//! `kill_all_jobs` (Salt's `salt/modules/saltutil.py`).
//!
//! A Python minion runs each job in a process and writes its publish data with the pid to
//! `cachedir/proc/<jid>`; `saltutil.running` reads those files. Ours runs each job as a task in
//! the minion process, so the table lives in memory, one per process: it is exactly the set of
//! jobs still running, and nothing is left behind by a crash. The data of each entry is what
//! Salt's proc file holds (`pid` first, then the publish load), so a master's `salt` CLI that
//! sends `saltutil.find_job` after `-t` keeps waiting for our long jobs as for Python's.
//!
//! Signals 9 (`kill_job`) and 15 (`term_job`) end the job's task: its function is dropped, the
//! commands it started are killed with their process group (`cmdmod`), and no return is sent
//! (as Salt, whose killed job process returns nothing). Other signals cannot be delivered to a
//! task and are refused by number.

use std::collections::BTreeMap;
use std::sync::{LazyLock, Mutex};

use rmpv::Value;
use tokio::sync::oneshot;

use crate::modules::{Args, CallOutcome, text};
use salt_compat::map_get;

/// One running job.
struct Entry {
    data: Value,
    stop: Option<oneshot::Sender<i32>>,
}

/// The minion's running jobs, by jid (one table per process: see the module docs).
static RUNNING: LazyLock<Mutex<BTreeMap<String, Entry>>> =
    LazyLock::new(|| Mutex::new(BTreeMap::new()));

fn table() -> std::sync::MutexGuard<'static, BTreeMap<String, Entry>> {
    RUNNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registration of a job in the table; removed when dropped (the job ended or was killed).
pub struct Registration {
    jid: String,
    /// Fires with the signal number when `kill_job`/`term_job` asks the job to end.
    pub stopped: oneshot::Receiver<i32>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        table().remove(&self.jid);
    }
}

/// Enter job `jid` with its publish `load` in the table. A second job with the same jid
/// (never sent by a master: the jid queue drops duplicates) replaces the first's entry.
pub fn register(jid: &str, load: &Value) -> Registration {
    let mut data = vec![(Value::from("pid"), Value::from(std::process::id()))];
    if let Value::Map(m) = load {
        data.extend(m.iter().filter(|(k, _)| k.as_str() != Some("pid")).cloned());
    }
    let (tx, rx) = oneshot::channel();
    table().insert(
        jid.to_owned(),
        Entry {
            data: Value::Map(data),
            stop: Some(tx),
        },
    );
    Registration {
        jid: jid.to_owned(),
        stopped: rx,
    }
}

/// The data of every running job but `except` (the calling job, as Salt leaves out its own).
pub fn running(except: Option<&str>) -> Vec<Value> {
    table()
        .iter()
        .filter(|(jid, _)| Some(jid.as_str()) != except)
        .map(|(_, e)| e.data.clone())
        .collect()
}

fn signal(jid: &str, sig: i32) -> String {
    let mut t = table();
    let Some(e) = t.get_mut(jid) else {
        return String::new();
    };
    let pid = std::process::id();
    match e.stop.take() {
        Some(tx) => {
            let _ = tx.send(sig);
            format!("Signal {sig} sent to job {jid} at pid {pid}")
        }
        None => format!("Job {jid} was not running and job data has been cleaned up"),
    }
}

fn parse_signal(v: &Value) -> Option<i32> {
    match v {
        Value::Integer(i) => i.as_i64().and_then(|i| i32::try_from(i).ok()),
        other => text(other).trim().parse().ok(),
    }
}

/// `saltutil.*` job functions; `current` is the calling job's jid.
pub fn call(fun: &str, args: &Args, current: Option<&str>) -> CallOutcome {
    let jid_arg = || args.param(0, "jid").map(text);
    let missing = |name: &str| {
        let short = fun.rsplit('.').next().unwrap_or(fun);
        CallOutcome::error(format!(
            "Passed invalid arguments to {fun}: {short}() missing 1 required positional argument: '{name}'\n"
        ))
    };
    match fun {
        "saltutil.running" => CallOutcome::ok(Value::Array(running(current))),
        "saltutil.find_job" => {
            let Some(jid) = jid_arg() else {
                return missing("jid");
            };
            let found = running(current)
                .into_iter()
                .find(|d| map_get(d, "jid").map(text).as_deref() == Some(jid.as_str()));
            CallOutcome::ok(found.unwrap_or(Value::Map(Vec::new())))
        }
        "saltutil.kill_job" | "saltutil.term_job" => {
            let Some(jid) = jid_arg() else {
                return missing("jid");
            };
            let sig = if fun == "saltutil.kill_job" { 9 } else { 15 };
            CallOutcome::ok(Value::from(signal(&jid, sig)))
        }
        "saltutil.signal_job" => {
            let Some(jid) = jid_arg() else {
                return missing("jid");
            };
            let Some(raw) = args.param(1, "sig") else {
                return missing("sig");
            };
            match parse_signal(raw) {
                Some(sig @ (9 | 15)) => CallOutcome::ok(Value::from(signal(&jid, sig))),
                _ => CallOutcome::error(format!(
                    "ERROR: signal {} cannot be sent to a salt-rs job (jobs are tasks of the minion process): only 9 (kill_job) and 15 (term_job) are supported",
                    text(raw)
                )),
            }
        }
        "saltutil.kill_all_jobs" | "saltutil.term_all_jobs" => {
            let sig = if fun == "saltutil.kill_all_jobs" {
                9
            } else {
                15
            };
            let jids: Vec<String> = running(current)
                .iter()
                .filter_map(|d| map_get(d, "jid").map(text))
                .collect();
            CallOutcome::ok(Value::Array(
                jids.iter().map(|j| Value::from(signal(j, sig))).collect(),
            ))
        }
        _ => CallOutcome::error(format!("'{fun}' is not available.")),
    }
}

/// Python's `salt.utils.jid.jid_to_time`: `2026, Nov 24 06:40:01.123456`, or `""` for a jid
/// that is not a timestamp.
fn jid_to_time(jid: &str) -> String {
    const MONTHS: [&str; 13] = [
        "", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let b = jid.as_bytes();
    let ok_len = b.len() == 20 || (b.len() > 21 && b[20] == b'_');
    if !ok_len || !b[..20].iter().all(u8::is_ascii_digit) {
        return String::new();
    }
    let month = jid[4..6].parse::<usize>().ok().and_then(|m| MONTHS.get(m));
    let Some(month) = month else {
        return String::new();
    };
    format!(
        "{}, {} {} {}:{}:{}.{}",
        &jid[..4],
        month,
        &jid[6..8],
        &jid[8..10],
        &jid[10..12],
        &jid[12..14],
        &jid[14..20]
    )
}

/// Salt's `state.running`: one line per other running `state.*` job (`except` is the calling
/// job), `The function "state.sls" is running as PID N and was started at ... with jid J`.
pub fn state_conflicts(except: Option<&str>) -> Vec<String> {
    running(except)
        .iter()
        .filter_map(|d| {
            let fun = map_get(d, "fun").map(text)?;
            if !salt_matcher::fnmatch(&fun, "state.*") {
                return None;
            }
            let jid = map_get(d, "jid").map(text).unwrap_or_default();
            let pid = map_get(d, "pid").map(text).unwrap_or_default();
            Some(format!(
                "The function \"{fun}\" is running as PID {pid} and was started at {} with jid {jid}",
                jid_to_time(&jid)
            ))
        })
        .collect()
}

#[cfg(test)]
mod conflict_tests {
    use super::*;

    #[test]
    fn jid_to_time_as_salt() {
        assert_eq!(
            jid_to_time("20261124064001123456"),
            "2026, Nov 24 06:40:01.123456"
        );
        assert_eq!(jid_to_time("req"), "");
        assert_eq!(jid_to_time("20261324064001123456"), "");
    }

    #[test]
    fn conflicts_list_other_state_jobs_only() {
        let load = |jid: &str, fun: &str| {
            Value::Map(vec![
                (Value::from("fun"), Value::from(fun)),
                (Value::from("jid"), Value::from(jid)),
            ])
        };
        let _a = register(
            "20261124064001000001",
            &load("20261124064001000001", "state.sls"),
        );
        let _b = register(
            "20261124064001000002",
            &load("20261124064001000002", "test.sleep"),
        );
        let c = state_conflicts(Some("20261124064001000003"));
        assert!(c.iter().any(
            |l| l.starts_with("The function \"state.sls\" is running as PID ")
                && l.ends_with(
                    "started at 2026, Nov 24 06:40:01.000001 with jid 20261124064001000001"
                )
        ));
        assert!(!c.iter().any(|l| l.contains("test.sleep")));
        assert!(
            state_conflicts(Some("20261124064001000001"))
                .iter()
                .all(|l| !l.contains("000001 with"))
        );
    }
}
