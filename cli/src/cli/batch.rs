//! `salt -b N` / `--batch-size 10%`: Salt 3008's `salt/cli/batch.py` over the local socket.
//!
//! The target is pinged first (`test.ping` with the command's timeout); minions that do not
//! answer get "Minion X did not respond. No job will be sent.". Then the job runs on at most N
//! minions at a time, a new one starting as soon as one returns (after `--batch-wait` seconds),
//! each group printed as Salt does (`Executing run on ['m1', 'm2']`), every group under the
//! batch's one jid, the batch's state fired on the master's bus (`salt/batch/<jid>/new`,
//! `progress`, `complete` or `halted`) for the `batch.*` runners. Exit status: the highest
//! retcode returned, 2 when no minion answered the ping. `--async -b` hands the batch to the
//! master after its first group ([`run_async`]).

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use salt_client::batch::{self, BatchState};
use salt_client::local::{LocalEvent, LocalRequest, PublishRequest};
use salt_client::session::{Session, SessionError};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// What one batch job reports to the loop.
enum Report {
    Published,
    Return(String, Value),
    Missing(String),
    Error(String),
}

/// Salt's `get_bnum`: a count, or a percentage of the minions (at least 1 when below one).
pub fn batch_size(spec: &str, minions: usize) -> Option<usize> {
    match spec
        .trim()
        .strip_suffix('%')
        .or_else(|| spec.trim().strip_prefix('%'))
    {
        Some(pct) => {
            let share = pct.trim().parse::<f64>().ok()? / 100.0 * minions as f64;
            Some(if share < 1.0 {
                share.ceil() as usize
            } else {
                share as usize
            })
        }
        None => spec.trim().parse().ok(),
    }
}

/// Python's `repr` of a sorted list of ids.
fn py_list(ids: &[String]) -> String {
    let mut v = ids.to_vec();
    v.sort();
    let quoted: Vec<String> = v.iter().map(|i| format!("'{i}'")).collect();
    format!("[{}]", quoted.join(", "))
}

/// Publish `req` and send its returns to `tx` (a task per job).
async fn job(sock: std::path::PathBuf, req: PublishRequest, tx: mpsc::UnboundedSender<Report>) {
    let timeout = Duration::from_secs(req.timeout);
    let mut session = match Session::open(&sock, &LocalRequest::Publish(req), timeout).await {
        Ok(s) => s,
        Err(SessionError::Connect(e)) => {
            let _ = tx.send(Report::Error(format!("{}: {e}", sock.display())));
            return;
        }
        Err(e) => {
            let _ = tx.send(Report::Error(e.to_string()));
            return;
        }
    };
    loop {
        match session.next().await {
            Ok(Some(LocalEvent::Published { .. })) => {
                let _ = tx.send(Report::Published);
            }
            Ok(Some(LocalEvent::Return { id, data })) => {
                let _ = tx.send(Report::Return(id, data));
            }
            Ok(Some(LocalEvent::Done {
                missing,
                not_connected,
            })) => {
                for id in missing.into_iter().chain(not_connected) {
                    let _ = tx.send(Report::Missing(id));
                }
                return;
            }
            Ok(Some(LocalEvent::Error { message })) => {
                let _ = tx.send(Report::Error(message));
                return;
            }
            Ok(Some(_)) => {}
            Ok(None) => return,
            Err(e) => {
                let _ = tx.send(Report::Error(e.to_string()));
                return;
            }
        }
    }
}

/// Options of a batch run.
pub struct Batch<'a> {
    /// The local socket.
    pub sock: &'a Path,
    /// The job as the user asked it (target, function, arguments, timeouts).
    pub req: PublishRequest,
    /// `-b` as given.
    pub size: &'a str,
    /// `--batch-wait` seconds.
    pub wait: f64,
    /// The master's `user` (the batch state's `user`, as Salt's CLI records it).
    pub user: String,
    /// The master's `gather_job_timeout` (seconds), when `--gather-job-timeout` is not given.
    pub gather_job_timeout: u64,
}

/// The batch's own ping (Salt's `Batch.gather_minions`: `test.ping` on the target with the
/// job's timeouts): never `--async` nor `--start-event`, as it must collect the answers.
fn ping_request(req: &PublishRequest) -> PublishRequest {
    PublishRequest {
        fun: "test.ping".into(),
        arg: Vec::new(),
        start_event: false,
        asynchronous: false,
        jid: None,
        ..req.clone()
    }
}

/// Salt's `gen_jid` (UTC, as our master's): `%Y%m%d%H%M%S%f` now.
fn gen_jid() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let (y, mo, d) = salt_compat::time::civil_from_days(secs / 86_400);
    let t = secs % 86_400;
    format!(
        "{y:04}{mo:02}{d:02}{:02}{:02}{:02}{:06}",
        t / 3600,
        t / 60 % 60,
        t % 60,
        now.subsec_micros()
    )
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

/// Salt's `create_batch_state` for this command's job.
fn new_state(b: &Batch<'_>, minions: &[String], jid: &str, driver: &str, size: u64) -> BatchState {
    let now = unix_now();
    BatchState {
        jid: jid.to_owned(),
        all_minions: minions.to_vec(),
        pending: minions.to_vec(),
        batch_size: size,
        fun: b.req.fun.clone(),
        arg: b.req.arg.clone(),
        tgt: Value::from(b.req.tgt.as_str()),
        tgt_type: b.req.tgt_type.clone(),
        batch_wait: Value::from(b.wait),
        timeout: Value::from(b.req.timeout),
        gather_job_timeout: Value::from(b.req.gather_job_timeout.unwrap_or(b.gather_job_timeout)),
        last_progress: now,
        created: now,
        driver: driver.to_owned(),
        ret: b.req.ret.clone(),
        user: b.user.clone(),
        ..Default::default()
    }
}

/// Fire an event on the master's bus; best effort, as Salt's batch (`_fire_event`). Answers
/// the reason a `batch.stop` halted this batch, if it did.
async fn fire(sock: &Path, tag: String, data: Value) -> Option<String> {
    let req = LocalRequest::Fire { tag, data };
    let mut session = Session::open(sock, &req, Duration::from_secs(10))
        .await
        .ok()?;
    match session.next().await {
        Ok(Some(LocalEvent::RunnerReturn { data })) => data
            .get("halted")
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    }
}

async fn fire_state(sock: &Path, action: &str, s: &BatchState) -> Option<String> {
    fire(
        sock,
        format!("salt/batch/{}/{action}", s.jid),
        s.state_payload(),
    )
    .await
}

/// A return as Salt's `LocalClient.get_iter_returns` yields it (and the batch keeps it in
/// `done`): `ret`, then `out`, `retcode`, `jid` when the minion sent them.
fn iter_return(data: &Value) -> Value {
    let mut m = serde_json::Map::new();
    m.insert(
        "ret".into(),
        data.get("return").cloned().unwrap_or(Value::Null),
    );
    for k in ["out", "retcode", "jid"] {
        if let Some(v) = data.get(k) {
            m.insert(k.into(), v.clone());
        }
    }
    Value::Object(m)
}

/// Who answers the batch's ping: (up, down), or the exit status.
async fn gather(b: &Batch<'_>) -> Result<(Vec<String>, Vec<String>), ExitCode> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(job(b.sock.to_path_buf(), ping_request(&b.req), tx));
    let mut up = Vec::new();
    let mut down = Vec::new();
    while let Some(r) = rx.recv().await {
        match r {
            Report::Return(id, _) => up.push(id),
            Report::Missing(id) => down.push(id),
            Report::Published => {}
            Report::Error(m) => {
                println!("{m}");
                eprintln!("ERROR: No return received");
                return Err(ExitCode::from(2));
            }
        }
    }
    up.sort();
    down.sort();
    Ok((up, down))
}

/// `salt --async -b` (Salt 3008's `_run_batch_async`): ping, publish the first slice under
/// the batch's jid, hand the batch to the master, print the jid.
pub async fn run_async(b: Batch<'_>) -> ExitCode {
    let jid = gen_jid();
    let (up, down) = match gather(&b).await {
        Ok(found) => found,
        Err(code) => return code,
    };
    if up.is_empty() {
        println!("No minions matched the target.");
        return ExitCode::SUCCESS;
    }
    for m in &down {
        println!("Minion {m} did not respond. No job will be sent.");
    }
    let size = match batch::batch_size(b.size, up.len()) {
        Ok(n) => n,
        Err(m) => {
            eprintln!("ERROR: {m}");
            return ExitCode::from(2);
        }
    };
    let mut state = new_state(&b, &up, &jid, "master", size);
    let first: Vec<String> = state
        .pending
        .drain(..usize::try_from(size).unwrap_or(usize::MAX).min(up.len()))
        .collect();
    let req = LocalRequest::Publish(PublishRequest {
        tgt: first.join(","),
        tgt_type: "list".into(),
        jid: Some(jid.clone()),
        asynchronous: true,
        ..b.req.clone()
    });
    let timeout = Duration::from_secs(b.req.timeout);
    let published = match Session::open(b.sock, &req, timeout).await {
        Ok(mut s) => match s.next().await {
            Ok(Some(LocalEvent::Published { .. })) => Ok(()),
            Ok(Some(LocalEvent::Error { message })) => Err(message),
            Ok(other) => Err(format!("unexpected answer {other:?}")),
            Err(e) => Err(e.to_string()),
        },
        Err(e) => Err(e.to_string()),
    };
    if let Err(m) = published {
        eprintln!("ERROR: {m}");
        return ExitCode::from(2);
    }
    let now = unix_now();
    for m in &first {
        state.active.insert(m.clone(), now);
    }
    state.last_progress = now;
    let handed = LocalRequest::StartBatch {
        state: state.to_json(),
    };
    match Session::open(b.sock, &handed, Duration::from_secs(10)).await {
        Ok(mut s) => match s.next().await {
            Ok(Some(LocalEvent::Done { .. })) => {}
            Ok(Some(LocalEvent::Error { message })) => eprintln!("ERROR: {message}"),
            other => eprintln!("ERROR: the master did not take batch {jid}: {other:?}"),
        },
        Err(e) => eprintln!("ERROR: the master did not take batch {jid}: {e}"),
    }
    println!("Executed batch command with job ID: {jid}");
    ExitCode::SUCCESS
}

/// Run the batch (Salt 3008's `Batch.run`): every slice under one jid, the batch's state
/// fired as `salt/batch/<jid>/new`, `progress`, then `complete` or `halted`; `print` shows
/// one minion's return the way the outputter does (with the outputter the return names), as
/// Salt's `CLIOutput.on_minion_return`: `{<id>: return, jid: <jid>, retcode: n}`. Salt 3008's
/// `-v` and `--show-jid` print nothing more in a batch (the jid is in every return).
pub async fn run(b: Batch<'_>, print: &mut dyn FnMut(Value, Option<&str>)) -> ExitCode {
    let (up, down) = match gather(&b).await {
        Ok(found) => found,
        Err(code) => return code,
    };
    for m in &down {
        println!("Minion {m} did not respond. No job will be sent.");
    }
    if up.is_empty() {
        eprintln!("ERROR: No return received");
        return ExitCode::from(2);
    }
    let Some(bnum) = batch_size(b.size, up.len()).filter(|n| *n > 0) else {
        println!(
            "Invalid batch data sent: {}\nData must be in the form of %10, 10% or 3",
            b.size
        );
        return ExitCode::from(2);
    };
    let jid = gen_jid();
    let mut state = new_state(&b, &up, &jid, "cli", bnum as u64);
    let mut stopped = fire_state(b.sock, "new", &state).await;
    let mut retcode = 0i64;
    let mut shown: std::collections::HashSet<String> = std::collections::HashSet::new();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut returned: Vec<(String, Value)> = Vec::new();
    let mut timed_out: Vec<String> = Vec::new();
    loop {
        if let Some(reason) = stopped.take() {
            state.halted = true;
            state.halted_reason = Some(reason);
        }
        let act = state.progress(&returned, unix_now(), &timed_out);
        if !act.publish.is_empty() || act.finished > 0 || act.timed_out > 0 || state.halted {
            stopped = fire_state(b.sock, "progress", &state).await;
        }
        returned.clear();
        timed_out.clear();
        if !act.publish.is_empty() {
            println!("\nExecuting run on {}\n", py_list(&act.publish));
            let req = PublishRequest {
                tgt: act.publish.join(","),
                tgt_type: "list".into(),
                jid: Some(jid.clone()),
                ..b.req.clone()
            };
            tokio::spawn(job(b.sock.to_path_buf(), req, tx.clone()));
        }
        if state.is_done() {
            break;
        }
        let tick = tokio::time::sleep(Duration::from_millis(if state.wait.is_empty() {
            500
        } else {
            20
        }));
        tokio::select! {
            _ = tick => {}
            got = rx.recv() => match got {
                Some(Report::Published) => {}
                // Every slice's session sees every return of the jid: each is shown once.
                Some(Report::Return(id, data)) => {
                    if shown.insert(id.clone()) {
                        retcode = retcode.max(batch::collapse_retcode(&data));
                        let got = iter_return(&data);
                        let mut shown_ret = got.as_object().cloned().unwrap_or_default();
                        let ret = shown_ret.remove("ret").unwrap_or(Value::Null);
                        shown_ret.insert(id.clone(), ret);
                        let out = shown_ret.remove("out");
                        print(Value::Object(shown_ret), out.as_ref().and_then(Value::as_str));
                        returned.push((id, got));
                    }
                }
                Some(Report::Missing(id)) => {
                    if state.active.contains_key(&id) && shown.insert(id.clone()) {
                        println!("Minion '{id}' failed to respond to job sent");
                        returned.push((id, json!({"failed": true})));
                    }
                }
                Some(Report::Error(m)) => {
                    eprintln!("{m}");
                    state.halted = true;
                    state.halted_reason = Some("error".into());
                    fire_state(b.sock, "halted", &state).await;
                    return ExitCode::from(2);
                }
                None => break,
            }
        }
    }
    if state.halted {
        eprintln!(
            "[ERROR   ] Batch run stopped due to {}",
            state.halted_reason.as_deref().unwrap_or("a halt")
        );
    }
    let end = if state.halted { "halted" } else { "complete" };
    fire_state(b.sock, end, &state).await;
    ExitCode::from(u8::try_from(retcode.clamp(0, 255)).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ping_collects_answers() {
        let req = PublishRequest {
            tgt: "web*".into(),
            tgt_type: "glob".into(),
            fun: "state.apply".into(),
            arg: vec![Value::from("x")],
            timeout: 7,
            ret: String::new(),
            gather_job_timeout: Some(3),
            asynchronous: true,
            start_event: true,
            sudo_user: None,
            auth: None,
            jid: None,
        };
        let ping = ping_request(&req);
        assert!(!ping.asynchronous && !ping.start_event);
        assert_eq!(ping.fun, "test.ping");
        assert!(ping.arg.is_empty());
        assert_eq!((ping.tgt.as_str(), ping.timeout), ("web*", 7));
    }

    #[test]
    fn sizes_as_salt() {
        assert_eq!(batch_size("2", 10), Some(2));
        assert_eq!(batch_size("10%", 10), Some(1));
        assert_eq!(batch_size("5%", 10), Some(1), "below one rounds up");
        assert_eq!(batch_size("%50", 5), Some(2), "Salt's `%10` form");
        assert_eq!(batch_size("x", 5), None);
        assert_eq!(py_list(&["b".into(), "a".into()]), "['a', 'b']");
    }
}
