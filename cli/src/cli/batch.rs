//! `salt -b N` / `--batch-size 10%`: Salt's `salt/cli/batch.py` over the local socket.
//!
//! The target is pinged first (`test.ping` with the command's timeout); minions that do not
//! answer get "Minion X did not respond. No job will be sent.". Then the job runs on at most N
//! minions at a time, a new one starting as soon as one returns (after `--batch-wait` seconds),
//! each group printed as Salt does (`Executing run on ['m1', 'm2']`). Exit status: the highest
//! retcode returned, 2 when no minion answered the ping.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use salt_client::local::{LocalEvent, LocalRequest, PublishRequest};
use salt_client::session::{Session, SessionError};
use serde_json::Value;
use tokio::sync::mpsc;

/// What one batch job reports to the loop.
enum Report {
    Jid(String),
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
            Ok(Some(LocalEvent::Published { jid, .. })) => {
                let _ = tx.send(Report::Jid(jid));
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
    /// `-v`: print each group's jid with a rule; `--show-jid`: print it.
    pub verbose: bool,
    /// `--show-jid`.
    pub show_jid: bool,
}

/// The batch's own ping (Salt's `Batch.gather_minions`: `test.ping` on the target with the
/// job's timeouts): never `--async` nor `--start-event`, as it must collect the answers.
fn ping_request(req: &PublishRequest) -> PublishRequest {
    PublishRequest {
        fun: "test.ping".into(),
        arg: Vec::new(),
        start_event: false,
        asynchronous: false,
        ..req.clone()
    }
}

/// Run the batch; `print` shows one `{id: return}` the way the outputter does (with the
/// outputter the return names, if any).
pub async fn run(b: Batch<'_>, print: &mut dyn FnMut(&str, Value, Option<&str>)) -> ExitCode {
    // 1. Who answers a ping.
    let (tx, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(job(b.sock.to_path_buf(), ping_request(&b.req), tx));
    let mut up = Vec::new();
    let mut down = Vec::new();
    while let Some(r) = rx.recv().await {
        match r {
            Report::Return(id, _) => up.push(id),
            Report::Missing(id) => down.push(id),
            Report::Jid(_) => {}
            Report::Error(m) => {
                println!("{m}");
                eprintln!("ERROR: No return received");
                return ExitCode::from(2);
            }
        }
    }
    down.sort();
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
    // 2. The job, bnum minions at a time.
    up.sort();
    let total = up.len();
    let mut to_run = up;
    let mut active: BTreeMap<String, ()> = BTreeMap::new();
    let mut waits: Vec<Instant> = Vec::new();
    let mut done = 0usize;
    let mut retcode = 0i64;
    let (tx, mut rx) = mpsc::unbounded_channel();
    while done < total {
        let now = Instant::now();
        waits.retain(|t| *t > now);
        let mut next = Vec::new();
        if to_run.len() <= bnum.saturating_sub(waits.len()) && active.is_empty() {
            next.append(&mut to_run);
        } else {
            for _ in 0..bnum.saturating_sub(active.len() + waits.len()) {
                if let Some(m) = to_run.pop() {
                    next.push(m);
                }
            }
        }
        if !next.is_empty() {
            println!("\nExecuting run on {}\n", py_list(&next));
            for m in &next {
                active.insert(m.clone(), ());
            }
            let req = PublishRequest {
                tgt: next.join(","),
                tgt_type: "list".into(),
                ..b.req.clone()
            };
            tokio::spawn(job(b.sock.to_path_buf(), req, tx.clone()));
        }
        let tick = tokio::time::sleep(Duration::from_millis(if waits.is_empty() {
            500
        } else {
            20
        }));
        tokio::select! {
            _ = tick => {}
            got = rx.recv() => match got {
                Some(Report::Jid(jid)) => {
                    if b.verbose {
                        let msg = format!("Executing job with jid {jid}");
                        println!("{msg}\n{}\n", "-".repeat(msg.len()));
                    } else if b.show_jid {
                        println!("jid: {jid}");
                    }
                }
                Some(Report::Return(id, data)) => {
                    if active.remove(&id).is_some() {
                        done += 1;
                        if b.wait > 0.0 {
                            waits.push(Instant::now() + Duration::from_secs_f64(b.wait));
                        }
                    }
                    retcode = retcode.max(data.get("retcode").and_then(Value::as_i64).unwrap_or(0));
                    let out = data.get("out").and_then(Value::as_str);
                    print(&id, data.get("return").cloned().unwrap_or(Value::Null), out);
                }
                Some(Report::Missing(id)) => {
                    if active.remove(&id).is_some() {
                        done += 1;
                    }
                    println!("Minion '{id}' failed to respond to job sent");
                }
                Some(Report::Error(m)) => {
                    eprintln!("{m}");
                    return ExitCode::from(2);
                }
                None => break,
            }
        }
    }
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
