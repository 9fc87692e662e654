//! Salt 3008's master-side batches (`salt/utils/batch_manager.py`, the `BatchManager`).
//!
//! * A batch driven by the master (`driver: master`: `salt --async -b`, from our `salt`
//!   through [`salt_client::local::LocalRequest::StartBatch`] or from Salt 3008's `salt`,
//!   which writes `.batch.p` itself and fires `salt/batch/<jid>/new`) gets a task
//!   ([`drive`]) that takes the returns of the batch's jid, publishes each next slice under
//!   that jid as the batch's user, keeps `.batch.p` and fires `salt/batch/<jid>/progress`,
//!   then `complete` or `halted`. It also wakes every `batch_manager_loop_interval` (default 5 s) to
//!   give up on minions after `timeout + gather_job_timeout`, as Salt's `_tick`.
//! * A batch driven by `salt -b` (`driver: cli`) fires `new`/`progress`/`complete`/`halted`
//!   with its whole state; the master keeps it in `.batch.p` and the active index, for the
//!   `batch` runners, and answers `batch.stop` with `salt/batch/<jid>/halted`, which the
//!   command watches.
//!
//! The events reach [`on_event`] from every way in: our `salt` (`Fire`), the event bus's
//! pull socket (Salt's own tools), and the `batch.stop` runner.

pub(crate) mod files;

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use salt_client::local::PublishRequest;
use salt_compat::json::msgpack_to_json;
use salt_transport::Publisher;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::shared::Shared;
use files::Files;
use salt_client::batch::BatchState;

/// What a running batch's task is told.
enum Ctl {
    /// `salt/batch/<jid>/stop` with its reason.
    Stop(String),
}

/// The batches this master drives, and what it needs to publish their slices.
#[derive(Default)]
pub struct Batches {
    running: Mutex<HashMap<String, mpsc::UnboundedSender<Ctl>>>,
    publish: OnceLock<(Publisher, CancellationToken)>,
}

impl std::fmt::Debug for Batches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batches").finish_non_exhaustive()
    }
}

pub(crate) fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

pub(crate) fn files(shared: &Shared) -> Files {
    Files {
        jobs: shared.jobs.dir().to_path_buf(),
        cachedir: shared.cfg.cachedir.clone(),
        hash: shared.cfg.hash_type,
    }
}

fn log_io(what: &str, jid: &str, r: std::io::Result<()>) {
    if let Err(e) = r {
        tracing::warn!("Batch {jid}: cannot {what}: {e}");
    }
}

/// Start the manager: adopt the master-driven batches of the active index (Salt's
/// `_post_fork_init` and first `_tick`).
pub(crate) fn start(
    shared: &std::sync::Arc<Shared>,
    publisher: &Publisher,
    stop: &CancellationToken,
) {
    if shared
        .batches
        .publish
        .set((publisher.clone(), stop.clone()))
        .is_err()
    {
        return;
    }
    let f = files(shared);
    let active = f.active();
    tracing::info!(
        "BatchManager initialized with {} active batch(es) in the index",
        active.len()
    );
    for jid in active {
        match f.read(&jid) {
            None => log_io("update the active index", &jid, f.remove_active(&jid)),
            Some(s) if s.driver == "master" && !s.halted => adopt(shared, &jid),
            Some(_) => {}
        }
    }
}

/// A `salt/batch/<jid>/<action>` event, whoever fired it (Salt's `_handle_event`). Blocking
/// (small files). For a sync CLI's batch that a `batch.stop` halted: the reason (the state
/// the command sent is kept halted, and the command stops at this answer).
pub(crate) fn on_event(shared: &std::sync::Arc<Shared>, tag: &str, data: &Value) -> Option<String> {
    let rest = tag.strip_prefix("salt/batch/")?;
    let (jid, action) = rest.split_once('/')?;
    if !crate::jobs::jid::safe_jid(jid) {
        return None;
    }
    let f = files(shared);
    let sent_state = data.get("state").and_then(BatchState::from_json);
    match action {
        "new" => {
            let state = match sent_state {
                Some(s) => {
                    log_io("write .batch.p", jid, f.write(&s));
                    Some(s)
                }
                None => f.read(jid),
            };
            let Some(state) = state else {
                tracing::warn!("salt/batch/{jid}/new received but .batch.p is not readable");
                return None;
            };
            match state.driver.as_str() {
                "cli" => {
                    log_io("update the active index", jid, f.add_active(jid));
                    tracing::info!(
                        "Registered sync CLI batch {jid} on behalf of {}",
                        state.user
                    );
                }
                "master" => {
                    adopt(shared, jid);
                    tracing::info!("Adopted async batch {jid} on behalf of {}", state.user);
                }
                other => tracing::debug!(
                    "Ignoring salt/batch/{jid}/new — driver={other} is not master-driven"
                ),
            }
        }
        "stop" => {
            let reason = data
                .get("reason")
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty())
                .unwrap_or("stop")
                .to_owned();
            let running = shared.batches.lock().get(jid).cloned();
            match running {
                Some(tx) if tx.send(Ctl::Stop(reason.clone())).is_ok() => {}
                _ => halt(shared, &f, jid, &reason),
            }
        }
        "recover" => {
            if let Some(s) = f.read(jid)
                && s.driver == "master"
                && !s.halted
            {
                adopt(shared, jid);
            }
        }
        "progress" | "complete" | "halted" => {
            let mut state = sent_state.filter(|s| s.driver == "cli")?;
            let stopped = f
                .read(jid)
                .filter(|old| old.halted && !state.halted)
                .map(|old| old.halted_reason.unwrap_or_else(|| "stop".into()));
            if let Some(reason) = &stopped {
                state.halted = true;
                state.halted_reason = Some(reason.clone());
            }
            log_io("write .batch.p", jid, f.write(&state));
            if action != "progress" {
                log_io("update the active index", jid, f.remove_active(jid));
            }
            return stopped;
        }
        _ => {}
    }
    None
}

/// Salt's `_handle_stop` for a batch no task of ours drives (a sync CLI's, or one left over).
fn halt(shared: &Shared, f: &Files, jid: &str, reason: &str) {
    let Some(mut s) = f.read(jid) else {
        log_io("update the active index", jid, f.remove_active(jid));
        return;
    };
    if !s.halted {
        s.halted = true;
        s.halted_reason = Some(reason.to_owned());
        s.last_progress = now();
        log_io("write .batch.p", jid, f.write(&s));
        shared
            .events
            .fire(format!("salt/batch/{jid}/halted"), s.halted_payload(now()));
    }
    log_io("update the active index", jid, f.remove_active(jid));
}

impl Batches {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::UnboundedSender<Ctl>>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Drive `jid` from this master (once).
fn adopt(shared: &std::sync::Arc<Shared>, jid: &str) {
    let Some((publisher, stop)) = shared.batches.publish.get().cloned() else {
        return;
    };
    let (tx, rx) = mpsc::unbounded_channel();
    {
        let mut running = shared.batches.lock();
        if running.contains_key(jid) {
            return;
        }
        running.insert(jid.to_owned(), tx);
    }
    log_io(
        "update the active index",
        jid,
        files(shared).add_active(jid),
    );
    let returns = shared.jobs.subscribe(jid);
    let shared = shared.clone();
    let jid = jid.to_owned();
    tokio::spawn(async move {
        drive(&shared, &publisher, &stop, &jid, returns, rx).await;
        shared.batches.lock().remove(&jid);
    });
}

/// A return event's load as the state machine takes it (`_event_to_return`).
fn to_return(load: &rmpv::Value) -> Value {
    let load = msgpack_to_json(load);
    json!({
        "ret": load.get("return").cloned().unwrap_or(Value::Null),
        "retcode": load.get("retcode").cloned().unwrap_or(Value::from(0)),
    })
}

/// One master-driven batch, until it is done, halted or the master stops.
async fn drive(
    shared: &std::sync::Arc<Shared>,
    publisher: &Publisher,
    stop: &CancellationToken,
    jid: &str,
    mut returns: mpsc::UnboundedReceiver<crate::jobs::waiters::ReturnEvent>,
    mut ctl: mpsc::UnboundedReceiver<Ctl>,
) {
    let f = files(shared);
    // Returns that came before this task listened (a quick first slice).
    let early: Vec<(String, Value)> = {
        let s2 = shared.clone();
        let j = jid.to_owned();
        tokio::task::spawn_blocking(move || {
            s2.jobs.flush();
            s2.jobs.store().returns(&j).unwrap_or_default()
        })
        .await
        .unwrap_or_default()
        .iter()
        .map(|(id, load)| (id.clone(), to_return(load)))
        .collect()
    };
    let mut pending = early;
    loop {
        let done = step(shared, publisher, &f, jid, &pending, None).await;
        pending.clear();
        if done {
            break;
        }
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tokio::time::sleep(shared.cfg.batch_manager_loop_interval) => {}
            r = returns.recv() => match r {
                Some((id, load)) => {
                    pending.push((id, to_return(&load)));
                    while let Ok((id, load)) = returns.try_recv() {
                        pending.push((id, to_return(&load)));
                    }
                }
                None => break,
            },
            c = ctl.recv() => match c {
                Some(Ctl::Stop(reason)) => {
                    step(shared, publisher, &f, jid, &[], Some(reason)).await;
                    break;
                }
                None => break,
            },
        }
    }
    shared.jobs.unsubscribe_one(jid, returns);
}

/// Salt's `_progress_one` (or `_handle_stop` with `halt`); `true` when the batch is over.
async fn step(
    shared: &std::sync::Arc<Shared>,
    publisher: &Publisher,
    f: &Files,
    jid: &str,
    new_returns: &[(String, Value)],
    halt_reason: Option<String>,
) -> bool {
    let Some(mut s) = f.read(jid) else {
        tracing::warn!("Batch {jid} has no readable .batch.p; retiring from active set");
        log_io("update the active index", jid, f.remove_active(jid));
        return true;
    };
    if s.driver == "cli" {
        return true;
    }
    if s.halted {
        log_io("update the active index", jid, f.remove_active(jid));
        return true;
    }
    if let Some(reason) = halt_reason {
        s.halted = true;
        s.halted_reason = Some(reason);
        s.last_progress = now();
        log_io("write .batch.p", jid, f.write(&s));
        shared
            .events
            .fire(format!("salt/batch/{jid}/halted"), s.halted_payload(now()));
        log_io("update the active index", jid, f.remove_active(jid));
        return true;
    }
    let act = s.progress(new_returns, now(), &[]);
    if !act.publish.is_empty() {
        publish_slice(shared, publisher, &s, &act.publish).await;
    }
    log_io("write .batch.p", jid, f.write(&s));
    if !act.publish.is_empty() || act.finished > 0 || act.timed_out > 0 {
        shared
            .events
            .fire(format!("salt/batch/{jid}/progress"), s.progress_payload());
    }
    if s.is_done() {
        let (tag, data) = if s.halted {
            ("halted", s.halted_payload(now()))
        } else {
            ("complete", s.complete_payload(now()))
        };
        shared.events.fire(format!("salt/batch/{jid}/{tag}"), data);
        log_io("update the active index", jid, f.remove_active(jid));
        return true;
    }
    false
}

/// Salt's `_publish_sub_batch`: the next slice under the batch's jid, as its user.
async fn publish_slice(
    shared: &std::sync::Arc<Shared>,
    publisher: &Publisher,
    s: &BatchState,
    ids: &[String],
) {
    tracing::info!(
        "Dispatching sub-batch of {} minion(s) for batch {} on behalf of {}",
        ids.len(),
        s.jid,
        s.user
    );
    let mut arg = s.arg.clone();
    if !s.kwargs.is_empty() {
        let mut kw = s.kwargs.clone();
        kw.insert("__kwarg__".into(), Value::Bool(true));
        arg.push(Value::Object(kw));
    }
    let req = PublishRequest {
        tgt: ids.join(","),
        tgt_type: "list".into(),
        fun: s.fun.clone(),
        arg,
        timeout: state_secs(&s.timeout, 60),
        ret: s.ret.clone(),
        jid: Some(s.jid.clone()),
        asynchronous: true,
        ..Default::default()
    };
    let user = if s.user.is_empty() { "root" } else { &s.user };
    match crate::jobs::run::start_job(
        shared,
        publisher,
        &req,
        user,
        true,
        crate::jobs::run::JobFiles::Before,
    )
    .await
    {
        Ok((job, _, rx)) => shared.jobs.unsubscribe_one(&job.jid, rx),
        Err(e) => tracing::error!("Failed to publish sub-batch for {}: {e}", s.jid),
    }
}

fn state_secs(v: &Value, default: u64) -> u64 {
    v.as_f64()
        .filter(|t| t.is_finite() && *t >= 0.0)
        .map_or(default, |t| t as u64)
}
