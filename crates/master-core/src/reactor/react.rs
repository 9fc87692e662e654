//! One reaction, run as Salt's `ReactWrap.run` runs it: the arguments read new-style
//! (`args`: a mapping or a list of one-key mappings, all keywords) or old-style (`arg`
//! positional, `kwarg` keywords; for a runner without them, the chunk's keys bound to the
//! runner's parameters), then
//!
//! * `local.<fun>`: published as the master (Salt's `LocalClient.cmd_async`: `tgt`,
//!   `tgt_type`, `ret`; `timeout` only bounds Salt's wait for the publish, which salt-rs does
//!   not have), no wait for the returns;
//! * `runner.<fun>`: the runner registry, with `salt/run/<jid>/new` and `/ret` for the user
//!   `Reactor` (whose events the reactor never reacts to), handed to the [`Pool`];
//! * `wheel.<fun>`: [`super::wheel`];
//! * `caller.<fun>`: refused by name (salt-rs's master has no local minion).
//!
//! A failure is logged with the reaction's id, kind and function, as Salt logs it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::compile::Low;
use crate::runners::ctx::Ctx;

/// The user runner and wheel reactions run as (Salt's `ReactWrap.event_user`).
pub(crate) const EVENT_USER: &str = "Reactor";

/// Keys of a chunk that are no argument of the function (Salt's
/// `REACTOR_INTERNAL_KEYWORDS`).
const INTERNAL: [&str; 7] = ["__id__", "__sls__", "name", "order", "fun", "key", "state"];

/// A runner or wheel reaction waiting for a worker of the [`Pool`].
type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A queued [`Job`], and whether it claimed an idle worker when it was queued
/// ([`Pool::fire_async`]).
struct Queued {
    job: Job,
    claimed: bool,
}

/// Salt's `ReactWrap` pool (`salt.utils.process.ThreadPool`): `reactor_worker_threads`
/// workers take runner and wheel reactions from a queue of `reactor_worker_hwm`; a reaction
/// that finds the queue full is dropped (Salt's `fire_async` answers False) and logged.
pub(crate) struct Pool {
    tx: mpsc::Sender<Queued>,
    /// Workers waiting for a job and not yet claimed by one ([`Pool::fire_async`]).
    idle: Arc<AtomicUsize>,
}

/// What a reaction dropped for a full queue is logged with (Salt's words).
const QUEUE_FULL: &str =
    "TaskPool queue is full! Consider tuning reactor_worker_threads and/or reactor_worker_hwm";

impl Pool {
    /// `threads` workers (at least one) on a queue of `hwm` (at least one), until `stop`.
    pub(crate) fn start(threads: usize, hwm: usize, stop: &CancellationToken) -> Arc<Self> {
        let (tx, rx) = mpsc::channel::<Queued>(hwm.max(1));
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        let idle = Arc::new(AtomicUsize::new(0));
        for _ in 0..threads.max(1) {
            let (rx, stop, idle) = (rx.clone(), stop.clone(), idle.clone());
            tokio::spawn(async move {
                loop {
                    idle.fetch_add(1, Ordering::AcqRel);
                    let queued = {
                        let mut rx = rx.lock().await;
                        tokio::select! {
                            () = stop.cancelled() => return,
                            j = rx.recv() => j,
                        }
                    };
                    let Some(Queued { job, claimed }) = queued else {
                        return;
                    };
                    if !claimed {
                        // Saturating: a claim may have taken this worker's count already.
                        let _ = idle.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                            n.checked_sub(1)
                        });
                    }
                    job.await;
                }
            });
        }
        Arc::new(Self { tx, idle })
    }

    /// Queue the job `start` makes; `Err` when the queue is full (the job is dropped and
    /// `start` is not called). When a worker is idle, `start` runs here, at once: a runner
    /// reaction's `salt/run/<jid>/new` (fired by `start`) is then not held up by the
    /// scheduling of a pool task behind the reactions after it (Salt's pool thread fires it as
    /// soon as it takes the job, which an idle thread does at once); when every worker is
    /// busy, `start` runs when a worker takes the job, as Salt's thread does.
    fn fire_async<F>(&self, start: impl FnOnce() -> F + Send + 'static) -> Result<(), String>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let permit = self.tx.try_reserve().map_err(|_| QUEUE_FULL.to_owned())?;
        let claimed = self
            .idle
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        let job: Job = if claimed {
            Box::pin(start())
        } else {
            Box::pin(async move { start().await })
        };
        permit.send(Queued { job, claimed });
        Ok(())
    }
}

/// Run one reaction (errors are logged). `local.` reactions are published before this
/// returns; `runner.` and `wheel.` reactions are queued for the [`Pool`], where a runner's
/// `salt/run/<jid>/new` is fired when a worker takes it (as Salt's pool thread runs
/// `RunnerClient.low`; at once when a worker is idle), so a long runner does not hold up the
/// reactions after it.
pub(crate) async fn react(ctx: &Ctx, pool: &Pool, low: Low) {
    let text = |k: &str| {
        low.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (state, fun, id) = (text("state"), text("fun"), text("__id__"));
    if let Err(e) = run(ctx, pool, &state, &fun, &id, low).await {
        tracing::error!("Reactor '{id}' failed to execute {state} '{fun}': {e}");
    }
}

async fn run(
    ctx: &Ctx,
    pool: &Pool,
    state: &str,
    fun: &str,
    id: &str,
    low: Low,
) -> Result<(), String> {
    if !matches!(state, "local" | "runner" | "wheel" | "caller") {
        return Err(format!(
            "ReactWrap is missing a wrapper function for '{state}'"
        ));
    }
    if state == "caller" {
        return Err(
            "caller reactions are not implemented by salt-rs (its master has no local \
             minion to run them); use local. with the minion as target"
                .into(),
        );
    }
    let (arg, kwarg) = arguments(state, fun, id, &low)?;
    match state {
        "local" => local(ctx, fun, &low, arg, kwarg).await,
        "runner" => {
            let mut raw = arg;
            if !kwarg.is_empty() {
                let mut kw = kwarg;
                kw.insert("__kwarg__".into(), Value::Bool(true));
                raw.push(Value::Object(kw));
            }
            let (ctx, fun) = (ctx.clone(), fun.to_owned());
            pool.fire_async(move || {
                let (jid, _) = crate::runners::announce(&ctx.shared, &fun, &raw, EVENT_USER);
                async move { crate::runners::run_announced(&ctx, &jid, &fun, raw, EVENT_USER).await }
            })
        }
        _ => {
            let (ctx, fun) = (ctx.clone(), fun.to_owned());
            pool.fire_async(move || async move {
                super::wheel::run(&ctx, &fun, arg, kwarg, EVENT_USER).await;
            })
        }
    }
}

/// The positional and keyword arguments of a reaction (see the module doc).
fn arguments(
    state: &str,
    fun: &str,
    id: &str,
    low: &Low,
) -> Result<(Vec<Value>, Map<String, Value>), String> {
    if let Some(args) = low.get("args") {
        for old in ["arg", "kwarg"] {
            if let Some(v) = low.get(old) {
                tracing::warn!(
                    "Reactor '{id}' is ignoring '{old}' param {v} due to presence of 'args' \
                     param. Check the Reactor System documentation for the correct argument \
                     format."
                );
            }
        }
        let kwarg = match args {
            Value::Object(m) => m.clone(),
            other => repack_dictlist(other).filter(|m| !m.is_empty()).ok_or(
                "Incorrect argument format, check the Reactor System documentation for the \
                 correct format.",
            )?,
        };
        return Ok((Vec::new(), kwarg));
    }
    let arg = match low.get("arg") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => Some(a.clone()),
        Some(other) => Some(vec![other.clone()]),
    };
    let kwarg = match low.get("kwarg") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m.clone()),
        Some(other) => {
            return Err(format!("kwarg must be a mapping, not {other}"));
        }
    };
    if state == "local" || (arg.is_some() && kwarg.is_some()) {
        return Ok((arg.unwrap_or_default(), kwarg.unwrap_or_default()));
    }
    // A runner or wheel reaction without `arg` and `kwarg`: the chunk's own keys, bound to
    // the function's parameters (Salt's `format_call`).
    let extra: Map<String, Value> = low
        .iter()
        .filter(|(k, _)| !INTERNAL.contains(&k.as_str()) && !matches!(k.as_str(), "arg" | "kwarg"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let bound = if state == "runner" {
        let Some((params, var_kw)) = crate::runners::params(fun) else {
            return Err("function not available".into());
        };
        extra
            .into_iter()
            .filter(|(k, _)| var_kw || params.contains(&k.as_str()))
            .collect()
    } else {
        extra
    };
    Ok((arg.unwrap_or_default(), kwarg.unwrap_or(bound)))
}

/// Salt's `repack_dictlist`: a list of one-key mappings as one mapping; `None` when an item
/// is anything else.
fn repack_dictlist(v: &Value) -> Option<Map<String, Value>> {
    let Value::Array(items) = v else { return None };
    let mut out = Map::new();
    for item in items {
        match item {
            Value::Object(m) if m.len() == 1 => out.extend(m.clone()),
            _ => return None,
        }
    }
    Some(out)
}

/// `local.<fun>`: publish to `tgt` and do not wait (Salt's `cmd_async`).
async fn local(
    ctx: &Ctx,
    fun: &str,
    low: &Low,
    mut arg: Vec<Value>,
    kwarg: Map<String, Value>,
) -> Result<(), String> {
    let tgt = match low.get("tgt") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(","),
        Some(other) => other.to_string(),
        None => return Err("local() missing 1 required positional argument: 'tgt'".into()),
    };
    if !kwarg.is_empty() {
        let mut kw = Map::new();
        kw.insert("__kwarg__".into(), Value::Bool(true));
        kw.extend(kwarg);
        arg.push(Value::Object(kw));
    }
    let text = |k: &str, default: &str| match low.get(k) {
        Some(Value::String(s)) => s.clone(),
        _ => default.to_owned(),
    };
    let req = salt_client::local::PublishRequest {
        tgt,
        tgt_type: text("tgt_type", "glob"),
        fun: fun.to_owned(),
        arg,
        ret: text("ret", ""),
        ..Default::default()
    };
    let user = ctx.shared.cfg.user.clone();
    let (job, _, _returns) = crate::jobs::run::start_job(
        &ctx.shared,
        &ctx.publisher,
        &req,
        &user,
        true,
        crate::jobs::run::JobFiles::Behind,
    )
    .await?;
    // Nobody waits for the returns (they go to the job cache and the bus).
    ctx.shared.jobs.unsubscribe(&job.jid);
    tracing::debug!("Reactor published {fun} to {} as job {}", req.tgt, job.jid);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn low(v: Value) -> Low {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn new_style_args_are_keywords() {
        let l = low(
            json!({"state": "local", "fun": "cmd.run", "__id__": "x", "tgt": "*",
                           "args": [{"cmd": "touch /tmp/a"}, {"cwd": "/"}]}),
        );
        let (arg, kw) = arguments("local", "cmd.run", "x", &l).unwrap();
        assert!(arg.is_empty());
        assert_eq!(
            Value::Object(kw),
            json!({"cmd": "touch /tmp/a", "cwd": "/"})
        );
        let bad = low(json!({"state": "local", "args": ["touch /tmp/a"]}));
        assert!(
            arguments("local", "cmd.run", "x", &bad)
                .unwrap_err()
                .contains("Incorrect")
        );
    }

    #[test]
    fn old_style_arg_and_runner_parameters() {
        let l = low(
            json!({"state": "local", "tgt": "*", "arg": ["touch /tmp/b"],
                           "kwarg": {"cwd": "/"}}),
        );
        let (arg, kw) = arguments("local", "cmd.run", "x", &l).unwrap();
        assert_eq!(arg, vec![json!("touch /tmp/b")]);
        assert_eq!(Value::Object(kw), json!({"cwd": "/"}));
        // A runner without arg/kwarg: its parameters taken from the chunk, the rest dropped.
        let l = low(
            json!({"state": "runner", "fun": "manage.up", "__id__": "x", "name": "x",
                           "tgt": "web*", "colour": "red", "order": 1}),
        );
        let (arg, kw) = arguments("runner", "manage.up", "x", &l).unwrap();
        assert!(arg.is_empty());
        assert_eq!(Value::Object(kw), json!({"tgt": "web*"}));
        assert_eq!(
            arguments("runner", "no.such", "x", &l).unwrap_err(),
            "function not available"
        );
    }
}
