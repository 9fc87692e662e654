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

use crate::matcher::map_lookup;
use crate::modules::{Args, CallOutcome, text};

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
                .find(|d| map_lookup(d, "jid").map(text).as_deref() == Some(jid.as_str()));
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
                .filter_map(|d| map_lookup(d, "jid").map(text))
                .collect();
            CallOutcome::ok(Value::Array(
                jids.iter().map(|j| Value::from(signal(j, sig))).collect(),
            ))
        }
        _ => CallOutcome::error(format!("'{fun}' is not available.")),
    }
}
