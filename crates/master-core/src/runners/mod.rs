//! Runners: functions `salt-run` calls on the master (Salt's `salt/runners/`), through the
//! local socket ([`salt_client::local::LocalRequest::Runner`]).
//!
//! * [`jobs`]: `lookup_jid`, `list_jobs`, `list_job`, `print_job`, `active` over our job cache;
//! * [`manage`]: `up`, `down` (`removekeys=True`), `status`, `present`, `not_present`,
//!   `alived`, `versions` (they publish `test.ping` / `test.version` as the master and wait as
//!   `salt` does);
//! * [`cache`]: `grains`, `pillar`, `mine` from the minion data cache (`cachedir/minions`);
//! * [`mine`]: `get` (the mine as a minion's `mine.get` reads it), `update`;
//! * [`fileserver`]: `update`, `envs`, `file_list`, `dir_list`, `empty_dir_list`,
//!   `symlink_list` over the roots file server;
//! * [`saltutil`]: `sync_all` and every `sync_*`, copying `salt://_<form>/` into
//!   Salt's `extension_modules` as Salt does;
//! * `event.send`: fires an event on the master's bus (Salt answers `True`).
//! * `reactor.list`, `add`, `delete`, `is_leader`, `set_leader` (the reactor, `reactor/`);
//! * `test.arg`: what it was given (Salt's, for trying arguments and the reactor);
//! * `auth.mk_token`: an eauth token for the credentials given (salt-api's `/token`);
//! * `state.orchestrate` and its kin: [`crate::orchestrate`];
//! * [`batch`]: Salt 3008's `status`, `list_active`, `stop` over the batches' state;
//! * [`resource`]: Salt 3008's `show_grains`, `list_grains`, `refresh` over the resource
//!   registry;
//!
//! Return values are Salt's shapes as JSON; an unknown function answers Salt's
//! `'x' is not available.`. Runners act for the master: only root and the master's own user may
//! call them (Salt's `publisher_acl` does not cover runners; its `external_auth` `@runner`
//! rights are not implemented), anyone else gets Salt's authorization error.

pub(crate) mod batch;
pub(crate) mod cache;
pub(crate) mod ctx;
pub(crate) mod fileserver;
pub(crate) mod gitfs;
pub(crate) mod jobs;
pub(crate) mod manage;
pub(crate) mod mine;
pub(crate) mod resource;
pub(crate) mod saltutil;

use salt_client::args::Sig;
use serde_json::{Value, json};

use salt_client::local::RunnerRequest;

use ctx::{Args, Ctx};

/// A runner salt-rs has: Salt 3007's signature, and the parameters it does not implement
/// (refused by name when given anything but their default).
struct Runner {
    sig: Sig,
    unsupported: &'static [&'static str],
}

const fn runner(
    fun: &'static str,
    params: &'static [&'static str],
    required: usize,
    var_kw: bool,
    unsupported: &'static [&'static str],
) -> Runner {
    Runner {
        sig: Sig {
            fun,
            params,
            required,
            var_kw,
        },
        unsupported,
    }
}

const PING: &[&str] = &["tgt", "tgt_type", "timeout", "gather_job_timeout"];
const LIST_JOBS: &[&str] = &[
    "ext_source",
    "outputter",
    "search_metadata",
    "search_function",
    "search_target",
    "start_time",
    "end_time",
    "display_progress",
];
const NO_SOURCE: &[&str] = &["ext_source", "display_progress"];
const SUBSET: &[&str] = &["subset", "show_ip"];
const LISTING: &[&str] = &["saltenv", "backend"];
const ORCH: &[&str] = &[
    "mods",
    "saltenv",
    "test",
    "exclude",
    "pillar",
    "pillarenv",
    "pillar_enc",
    "orchestration_jid",
];
const ORCH_SHOW: &[&str] = &[
    "mods",
    "saltenv",
    "test",
    "queue",
    "pillar",
    "pillarenv",
    "pillar_enc",
];
const RUNNERS: &[Runner] = &[
    runner("state.orchestrate", ORCH, 1, false, &["pillar_enc"]),
    runner("state.orch", ORCH, 1, false, &["pillar_enc"]),
    runner("state.sls", ORCH, 1, false, &["pillar_enc"]),
    runner(
        "state.orchestrate_show_sls",
        ORCH_SHOW,
        1,
        false,
        &["pillar_enc"],
    ),
    runner("state.orch_show_sls", ORCH_SHOW, 1, false, &["pillar_enc"]),
    runner(
        "state.orchestrate_single",
        &["fun", "name", "test", "queue", "pillar"],
        2,
        true,
        &[],
    ),
    runner(
        "state.orchestrate_high",
        &["data", "test", "queue", "pillar"],
        1,
        true,
        &[],
    ),
    runner(
        "jobs.lookup_jid",
        &[
            "jid",
            "ext_source",
            "returned",
            "missing",
            "display_progress",
        ],
        1,
        false,
        NO_SOURCE,
    ),
    runner("jobs.list_jobs", LIST_JOBS, 0, false, NO_SOURCE),
    runner(
        "jobs.list_job",
        &["jid", "ext_source", "display_progress"],
        1,
        false,
        NO_SOURCE,
    ),
    runner(
        "jobs.print_job",
        &["jid", "ext_source"],
        1,
        false,
        &["ext_source"],
    ),
    runner(
        "jobs.active",
        &["display_progress"],
        0,
        false,
        &["display_progress"],
    ),
    runner("manage.up", PING, 0, false, &[]),
    runner(
        "manage.down",
        &[
            "removekeys",
            "tgt",
            "tgt_type",
            "timeout",
            "gather_job_timeout",
        ],
        0,
        false,
        &[],
    ),
    runner(
        "manage.status",
        &["output", "tgt", "tgt_type", "timeout", "gather_job_timeout"],
        0,
        false,
        &[],
    ),
    runner("manage.present", SUBSET, 0, false, &["show_ip"]),
    runner("manage.not_present", SUBSET, 0, false, &["show_ip"]),
    runner("manage.alived", SUBSET, 0, false, &["show_ip"]),
    runner("manage.versions", &[], 0, false, &[]),
    runner("cache.grains", &["tgt", "tgt_type"], 1, true, &[]),
    runner("cache.pillar", &["tgt", "tgt_type"], 0, true, &[]),
    runner("cache.mine", &["tgt", "tgt_type"], 0, true, &[]),
    runner("mine.get", &["tgt", "fun", "tgt_type"], 2, false, &[]),
    runner(
        "mine.update",
        &["tgt", "tgt_type", "clear", "mine_functions"],
        1,
        false,
        &[],
    ),
    runner("fileserver.update", &["backend"], 0, true, &[]),
    runner("resource.show_grains", &["type", "id"], 2, false, &[]),
    runner("batch.status", &["jid"], 1, false, &[]),
    runner("batch.list_active", &[], 0, false, &[]),
    runner("batch.stop", &["jid", "kill"], 1, false, &[]),
    runner("resource.list_grains", &[], 0, false, &[]),
    runner("resource.refresh", &["minion"], 1, false, &[]),
    runner("cache.clear_git_lock", &["role", "remote"], 1, true, &[]),
    runner("git_pillar.update", &["branch", "repo"], 0, false, &[]),
    runner(
        "fileserver.envs",
        &["backend", "sources"],
        0,
        false,
        &["sources"],
    ),
    runner("fileserver.file_list", LISTING, 0, false, &[]),
    runner("fileserver.dir_list", LISTING, 0, false, &[]),
    runner("fileserver.empty_dir_list", LISTING, 0, false, &[]),
    runner("fileserver.symlink_list", LISTING, 0, false, &[]),
    runner("event.send", &["tag", "data"], 1, false, &[]),
    runner("test.sleep", &["s_time"], 0, false, &[]),
    runner("reactor.list", &["saltenv", "test"], 0, false, &[]),
    runner(
        "reactor.add",
        &["event", "reactors", "saltenv", "test"],
        2,
        false,
        &[],
    ),
    runner(
        "reactor.delete",
        &["event", "saltenv", "test"],
        1,
        false,
        &[],
    ),
    runner("reactor.is_leader", &[], 0, false, &[]),
    runner("reactor.set_leader", &["value"], 0, false, &[]),
];

/// `saltutil.sync_*(saltenv="base", extmod_whitelist=None, extmod_blacklist=None)`.
const SYNC_PARAMS: &[&str] = &["saltenv", "extmod_whitelist", "extmod_blacklist"];

/// The parameters of runner `fun` and whether it takes `**kwargs` (`None`: no such runner).
pub(crate) fn params(fun: &str) -> Option<(&'static [&'static str], bool)> {
    if fun == "test.arg" || fun == "auth.mk_token" {
        return Some((&[], true));
    }
    if let Some(sig) = sync_sig(fun) {
        return Some((sig.params, sig.var_kw));
    }
    RUNNERS
        .iter()
        .find(|r| r.sig.fun == fun)
        .map(|r| (r.sig.params, r.sig.var_kw))
}

/// Whether salt-rs has runner `fun`: Salt's `verify_fun` over its runner loader, with which
/// salt-api's `RunnerClient` refuses an unknown runner before sending it to the master.
pub fn exists(fun: &str) -> bool {
    params(fun).is_some()
}

/// The signature of `saltutil.sync_all` or one `saltutil.sync_*` (`None`: not one of them).
fn sync_sig(fun: &str) -> Option<Sig> {
    let short = fun.strip_prefix("saltutil.")?;
    let (_, name) = saltutil::FORMS
        .iter()
        .chain(&[("", "sync_all")])
        .find(|(_, f)| *f == short)?;
    Some(Sig {
        fun: name,
        params: SYNC_PARAMS,
        required: 0,
        var_kw: false,
    })
}

/// Salt's `test.arg(*args, **kwargs)`: what it was given, keywords starting with `__` left out.
fn test_arg(raw: &[Value]) -> Value {
    let mut args = Vec::new();
    let mut kwargs = serde_json::Map::new();
    for a in raw {
        match a {
            Value::Object(m) if m.get("__kwarg__") == Some(&Value::Bool(true)) => kwargs.extend(
                m.iter()
                    .filter(|(k, _)| !k.starts_with("__"))
                    .map(|(k, v)| (k.clone(), v.clone())),
            ),
            other => args.push(other.clone()),
        }
    }
    json!({"args": args, "kwargs": kwargs})
}

/// Salt's `test.sleep(s_time=10)`: prints `s_time`, sleeps that long (or until the master
/// stops), answers True.
async fn test_sleep(ctx: &Ctx, a: &Args) -> Result<Value, String> {
    let secs = a.get("s_time").map_or(Some(10.0), |v| {
        v.as_f64().or_else(|| v.as_str()?.trim().parse().ok())
    });
    let Some(secs) = secs.filter(|s| s.is_finite() && *s >= 0.0) else {
        return Err("test.sleep: s_time must be a number of seconds".into());
    };
    ctx.print(&salt_compat::py_json_str(
        a.get("s_time").unwrap_or(&json!(10)),
    ));
    tokio::select! {
        () = tokio::time::sleep(std::time::Duration::from_secs_f64(secs)) => {}
        () = ctx.stop.cancelled() => {}
    }
    Ok(Value::Bool(true))
}

/// Salt's `auth.mk_token(**load)` (`salt.auth.Resolver.mk_token`): a token for the eauth
/// credentials given as keywords (`username`, `password`, `eauth`), answered as the master's
/// clear `mk_token` answers (`""` when they are refused). salt-api's `/token` calls it.
fn mk_token(ctx: &Ctx, raw: &[Value]) -> Value {
    let load: serde_json::Map<String, Value> = raw
        .iter()
        .filter_map(|a| match a {
            Value::Object(m) if m.get("__kwarg__") == Some(&Value::Bool(true)) => Some(m),
            _ => None,
        })
        .flatten()
        .filter(|(k, _)| !k.starts_with("__"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let load = salt_compat::json::json_to_msgpack(&Value::Object(load));
    match salt_proto::clear::EauthFields::from_map(&load) {
        Ok(f) => salt_compat::json::msgpack_to_json(&ctx.shared.eauth.mk_token_reply(&f)),
        Err(_) => json!(""),
    }
}

/// Bind `raw` to the signature of runner `fun` (`None`: salt-rs has no such runner).
/// `Some(Err(text))`: the call does not fit, and `text` is what Salt prints for it.
fn bind(fun: &str, raw: &[Value]) -> Option<Result<Args, String>> {
    if fun.starts_with("saltutil.") {
        return Some(salt_client::args::bind(&sync_sig(fun)?, raw));
    }
    let r = RUNNERS.iter().find(|r| r.sig.fun == fun)?;
    Some(salt_client::args::bind(&r.sig, raw).and_then(|a| {
        match r.unsupported.iter().find(|p| a.flag(p, false)) {
            Some(p) => Err(format!("{fun}: {p} is not supported by salt-rs")),
            None => Ok(a),
        }
    }))
}

/// Run runner `req.fun` for `user`: the one entry of every runner call (`salt-run`, the clear
/// `runner` command and so salt-api, orchestrate's `salt.runner`, the reactor). As Salt's
/// `RunnerClient.low`, a call allowed to run is stored in the job cache as a job of the
/// master under `jid` (a new one when `None`; `runnerclient_returns: False` turns that off).
/// `auth.mk_token` is not stored: its return is a token.
pub(crate) async fn call(
    ctx: &Ctx,
    req: &RunnerRequest,
    user: &str,
    privileged: bool,
    jid: Option<&str>,
) -> Result<Value, String> {
    if !privileged {
        tracing::error!(
            "{user} does not have permissions to run runner {}. Runners may be called by root \
             and the master's user only.",
            req.fun
        );
        return Err("Authorization error occurred.".into());
    }
    let fun = req.fun.as_str();
    tracing::info!("Runner {fun} called by {user}");
    // Salt's `new` event stamps its data (in place) once the runner is found.
    let stamp = exists(fun).then(salt_compat::time::event_stamp_now);
    let out = dispatch(ctx, req, user).await;
    if ctx.shared.cfg.runnerclient_returns && fun != "auth.mk_token" {
        let jid = jid.map_or_else(|| ctx.shared.jids.next(), str::to_owned);
        let mut data = serde_json::Map::new();
        data.insert("fun".into(), json!(format!("runner.{fun}")));
        data.insert("jid".into(), json!(jid));
        data.insert("user".into(), json!(user));
        data.insert("fun_args".into(), json!(fun_args(&req.arg)));
        if let Some(stamp) = stamp {
            data.insert("_stamp".into(), json!(stamp));
        }
        let (ret, success) = match &out {
            Ok(v) => (v.clone(), true),
            Err(m) => (json!(m), false),
        };
        data.insert("return".into(), ret);
        data.insert("success".into(), json!(success));
        if !success {
            data.insert("retcode".into(), json!(1));
        }
        let shared = ctx.shared.clone();
        let stored = tokio::task::spawn_blocking(move || {
            crate::jobs::store_master_job(&shared, &jid, &data);
        })
        .await;
        if let Err(e) = stored {
            tracing::error!("Could not store job cache info for runner {fun}: {e}");
        }
    }
    out
}

/// What runner `req.fun` answers.
async fn dispatch(ctx: &Ctx, req: &RunnerRequest, user: &str) -> Result<Value, String> {
    let fun = req.fun.as_str();
    if fun == "test.arg" {
        return Ok(test_arg(&req.arg));
    }
    if fun == "auth.mk_token" {
        return Ok(mk_token(ctx, &req.arg));
    }
    match bind(fun, &req.arg) {
        // Salt prints this as the runner's output (exit status 0).
        None => Ok(json!(format!("'{fun}' is not available."))),
        // A call that does not fit is printed, not raised (Salt's runner client, exit
        // status 0; Salt appends the function's documentation, which salt-rs does not carry).
        Some(Err(m)) => Ok(Value::String(m)),
        Some(Ok(args)) if crate::orchestrate::FUNS.contains(&fun) => {
            crate::orchestrate::call(ctx, fun, &args, &req.arg, user).await
        }
        Some(Ok(args)) => run(ctx, fun, &args, req.timeout).await,
    }
}

/// Salt's asynchronous runner call (`RunnerClient.asynchronous`, and the reactor's
/// `runner.` reactions): fire `salt/run/<jid>/new` now; [`run_announced`] then runs it.
/// Returns the jid and the tag `salt/run/<jid>`.
pub(crate) fn announce(
    shared: &crate::shared::Shared,
    fun: &str,
    args: &[Value],
    user: &str,
) -> (String, String) {
    let jid = shared.jids.next();
    let tag = format!("salt/run/{jid}");
    shared.events.fire(
        format!("{tag}/new"),
        json!({"fun": format!("runner.{fun}"), "fun_args": fun_args(args), "jid": jid,
               "user": user}),
    );
    (jid, tag)
}

/// The `fun_args` of Salt's runner events: the positional values, then the keywords as one
/// mapping (without our `__kwarg__` marker). A `password` keyword (`auth.mk_token`, salt-api's
/// `/token`) is left out: unlike Salt's, our events never carry a password.
fn fun_args(args: &[Value]) -> Vec<Value> {
    args.iter()
        .map(|a| match a {
            Value::Object(m) if m.contains_key("__kwarg__") => {
                let mut m = m.clone();
                m.remove("__kwarg__");
                m.remove("password");
                Value::Object(m)
            }
            other => other.clone(),
        })
        .collect()
}

/// Run an [`announce`]d runner and fire `salt/run/<jid>/ret` with its return.
pub(crate) async fn run_announced(ctx: &Ctx, jid: &str, fun: &str, args: Vec<Value>, user: &str) {
    let req = RunnerRequest {
        fun: fun.to_owned(),
        arg: args.clone(),
        timeout: None,
        auth: None,
    };
    let (ret, success) = match call(ctx, &req, user, true, Some(jid)).await {
        Ok(v) => (v, true),
        Err(m) => (json!(m), false),
    };
    ctx.shared.events.fire(
        format!("salt/run/{jid}/ret"),
        json!({"fun": format!("runner.{fun}"), "fun_args": fun_args(&args), "jid": jid,
               "user": user, "return": ret, "success": success}),
    );
}

async fn run(ctx: &Ctx, fun: &str, args: &Args, timeout: Option<u64>) -> Result<Value, String> {
    match fun {
        "jobs.lookup_jid" | "jobs.list_jobs" | "jobs.list_job" | "jobs.print_job"
        | "jobs.active" => jobs::call(ctx, fun, args, timeout).await,
        "manage.up" | "manage.down" | "manage.status" | "manage.present" | "manage.not_present"
        | "manage.alived" | "manage.versions" => manage::call(ctx, fun, args, timeout).await,
        "cache.grains" | "cache.pillar" | "cache.mine" => cache::call(ctx, fun, args),
        "mine.get" | "mine.update" => mine::call(ctx, fun, args).await,
        "cache.clear_git_lock" => gitfs::clear_git_lock(ctx, args),
        "reactor.list" | "reactor.add" | "reactor.delete" | "reactor.is_leader"
        | "reactor.set_leader" => crate::reactor::runner(&ctx.shared, fun, args).await,
        "batch.status" | "batch.list_active" | "batch.stop" => batch::call(ctx, fun, args).await,
        "resource.show_grains" | "resource.list_grains" | "resource.refresh" => {
            Ok(resource::call(ctx, fun, args))
        }
        "git_pillar.update" => {
            let (shared, args) = (ctx.shared.clone(), args.clone());
            tokio::task::spawn_blocking(move || gitfs::git_pillar_update(&shared, &args))
                .await
                .map_err(|e| format!("git_pillar.update: {e}"))?
        }
        "fileserver.update" => {
            let (shared, args) = (ctx.shared.clone(), args.clone());
            tokio::task::spawn_blocking(move || gitfs::update(&shared, &args))
                .await
                .map_err(|e| format!("fileserver.update: {e}"))?
        }
        "fileserver.envs"
        | "fileserver.file_list"
        | "fileserver.dir_list"
        | "fileserver.empty_dir_list"
        | "fileserver.symlink_list" => fileserver::call(ctx, fun, args),
        "event.send" => send(ctx, args),
        "test.sleep" => test_sleep(ctx, args).await,
        f if f.starts_with("saltutil.") => {
            let (shared, publisher, stop, console) = (
                ctx.shared.clone(),
                ctx.publisher.clone(),
                ctx.stop.clone(),
                ctx.console.clone(),
            );
            let (name, args) = (fun.to_owned(), args.clone());
            tokio::task::spawn_blocking(move || {
                let ctx = Ctx {
                    shared,
                    publisher,
                    stop,
                    console,
                };
                saltutil::call(&ctx, &name, &args)
            })
            .await
            .map_err(|e| format!("{fun}: {e}"))?
        }
        _ => Ok(json!(format!("'{fun}' is not available."))),
    }
}

/// Salt's `event.send(tag, data=None)`: fire `data` (a dict; none is `{}`) under `tag` on the
/// master's bus; `True`.
fn send(ctx: &Ctx, args: &Args) -> Result<Value, String> {
    let tag = args.text("tag").unwrap_or_default();
    if tag.is_empty() {
        return Err("ValueError: Empty tag.".into());
    }
    let data = match args.get("data") {
        None => json!({}),
        Some(Value::Object(m)) => Value::Object(m.clone()),
        // Salt's `data or {}`: a falsy value is no data.
        Some(_) if !args.flag("data", false) => json!({}),
        Some(v) => {
            return Err(format!(
                "ValueError: Dict object expected, not '{}'.",
                salt_compat::py_json_str(v)
            ));
        }
    };
    ctx.shared.events.fire(tag.clone(), data.clone());
    if tag.starts_with("salt/batch/") {
        let shared = ctx.shared.clone();
        // Detached: the event is out; the batches take it in the background.
        drop(tokio::task::spawn_blocking(move || {
            crate::batch::on_event(&shared, &tag, &data)
        }));
    }
    Ok(json!(true))
}

#[cfg(test)]
mod tests;
