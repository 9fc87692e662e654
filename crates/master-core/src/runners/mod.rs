//! Runners: functions `salt-run` calls on the master (Salt's `salt/runners/`), through the
//! local socket ([`crate::local::LocalRequest::Runner`]).
//!
//! * [`jobs`]: `lookup_jid`, `list_jobs`, `list_job`, `print_job`, `active` over our job cache;
//! * [`manage`]: `up`, `down` (`removekeys=True`), `status`, `present`, `not_present`,
//!   `alived`, `versions` (they publish `test.ping` / `test.version` as the master and wait as
//!   `salt` does);
//! * [`cache`]: `grains`, `pillar`, `mine` from the minion data cache (`cachedir/minions`);
//! * [`fileserver`]: `update`, `envs`, `file_list`, `dir_list`, `empty_dir_list`,
//!   `symlink_list` over the roots file server;
//! * `saltutil.sync_all`: the master loads no custom runner or wheel modules, so there is
//!   nothing to sync (Salt's shape, every list empty).
//!
//! Return values are Salt's shapes as JSON; an unknown function answers Salt's
//! `'x' is not available.`. Runners act for the master: only root and the master's own user may
//! call them (Salt's `publisher_acl` does not cover runners; its `external_auth` `@runner`
//! rights are not implemented), anyone else gets Salt's authorization error.

pub mod cache;
pub mod fileserver;
pub mod jobs;
pub mod manage;

use std::sync::Arc;

use salt_transport::Publisher;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::local::RunnerRequest;
use crate::state::Shared;

/// What a runner may use.
pub struct Ctx {
    /// The master's state.
    pub shared: Arc<Shared>,
    /// To publish jobs (`manage.*`, `jobs.active`).
    pub publisher: Publisher,
    /// The master is stopping.
    pub stop: CancellationToken,
}

/// Runner arguments: positional values and `key=value` keywords (a trailing map with
/// `"__kwarg__": true`, as `salt-run` sends them).
#[derive(Clone, Debug, Default)]
pub struct Args {
    args: Vec<Value>,
    kwargs: Map<String, Value>,
}

impl Args {
    fn parse(raw: &[Value]) -> Self {
        let mut out = Self::default();
        for a in raw {
            match a {
                Value::Object(m) if m.get("__kwarg__") == Some(&Value::Bool(true)) => {
                    for (k, v) in m {
                        if k != "__kwarg__" {
                            out.kwargs.insert(k.clone(), v.clone());
                        }
                    }
                }
                other => out.args.push(other.clone()),
            }
        }
        out
    }

    /// Parameter `name` at position `pos`.
    fn get(&self, pos: usize, name: &str) -> Option<&Value> {
        self.args
            .get(pos)
            .or_else(|| self.kwargs.get(name))
            .filter(|v| !v.is_null())
    }

    /// A parameter as text (Python `str()` of scalars).
    fn text(&self, pos: usize, name: &str) -> Option<String> {
        self.get(pos, name).map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }

    /// A parameter as a boolean (Python truthiness), `default` when absent.
    fn flag(&self, pos: usize, name: &str, default: bool) -> bool {
        match self.get(pos, name) {
            None => default,
            Some(Value::Bool(b)) => *b,
            Some(Value::Number(n)) => n.as_f64() != Some(0.0),
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(Value::Object(o)) => !o.is_empty(),
            Some(Value::Null) => false,
        }
    }

    /// A parameter as a number of seconds.
    fn secs(&self, pos: usize, name: &str) -> Option<u64> {
        self.get(pos, name).and_then(|v| match v {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        })
    }
}

/// Python's `TypeError` text for a missing argument, as Salt's runner client prints it
/// (without the function's documentation that Salt appends).
fn missing(fun: &str, name: &str) -> String {
    let short = fun.rsplit('.').next().unwrap_or(fun);
    format!("Passed invalid arguments: {short}() missing 1 required positional argument: '{name}'")
}

/// Run runner `req.fun` for `user`.
pub async fn call(
    ctx: &Ctx,
    req: &RunnerRequest,
    user: &str,
    privileged: bool,
) -> Result<Value, String> {
    if !privileged {
        tracing::error!(
            "{user} does not have permissions to run runner {}. Runners may be called by root \
             and the master's user only.",
            req.fun
        );
        return Err("Authorization error occurred.".into());
    }
    let args = Args::parse(&req.arg);
    let fun = req.fun.as_str();
    tracing::info!("Runner {fun} called by {user}");
    let ret = run(ctx, fun, &args, req.timeout).await;
    // A missing argument is printed, not raised (Salt's runner client, exit status 0).
    match ret {
        Err(m) if m.starts_with("Passed invalid arguments") => Ok(Value::String(m)),
        other => other,
    }
}

async fn run(ctx: &Ctx, fun: &str, args: &Args, timeout: Option<u64>) -> Result<Value, String> {
    match fun {
        "jobs.lookup_jid" | "jobs.list_jobs" | "jobs.list_job" | "jobs.print_job"
        | "jobs.active" => jobs::call(ctx, fun, args, timeout).await,
        "manage.up" | "manage.down" | "manage.status" | "manage.present" | "manage.not_present"
        | "manage.alived" | "manage.versions" => manage::call(ctx, fun, args, timeout).await,
        "cache.grains" | "cache.pillar" | "cache.mine" => cache::call(ctx, fun, args),
        "fileserver.update"
        | "fileserver.envs"
        | "fileserver.file_list"
        | "fileserver.dir_list"
        | "fileserver.empty_dir_list"
        | "fileserver.symlink_list" => fileserver::call(ctx, fun, args),
        "saltutil.sync_all" => {
            let kinds = [
                "cache",
                "clouds",
                "engines",
                "executors",
                "fileserver",
                "grains",
                "modules",
                "output",
                "pillar",
                "proxymodules",
                "queues",
                "renderers",
                "returners",
                "roster",
                "runners",
                "sdb",
                "serializers",
                "states",
                "thorium",
                "tokens",
                "tops",
                "utils",
                "wheel",
                "wrapper",
            ];
            Ok(Value::Object(
                kinds.iter().map(|k| ((*k).to_owned(), json!([]))).collect(),
            ))
        }
        // Salt prints this as the runner's output (exit status 0).
        _ => Ok(json!(format!("'{fun}' is not available."))),
    }
}
