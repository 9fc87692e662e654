//! Orchestrate: Salt's `state` runner (`salt/runners/state.py`). The master runs SLS files of
//! its own `file_roots` through the state engine the minion uses (`salt-states`: compiler,
//! requisites, `test.*` states), as the minion `<id>` (the master's id, `<host>_master`),
//! with the master-side `salt.*` states of [`saltmod`] plugged in.
//!
//! * `state.orchestrate` / `state.orch` / `state.sls`: `{"data": {id: running}, "outputter":
//!   "highstate", "retcode": 0|1}` (`retcode` from Salt's `check_result`; `salt-run` exits
//!   with it);
//! * `state.orchestrate_single`, `state.orchestrate_high`: `{id: running}`;
//! * `state.orchestrate_show_sls` / `state.orch_show_sls`: `{id: high data}`.
//!
//! The pillar is compiled for the master's id from `pillar_roots` (`pillar=` overrides it);
//! the grains are `{id}` only (Salt's master minion loads every grain). `pillar_enc` is
//! refused by name; the `salt/run/<jid>/args` and progress events are not fired.

mod batch;
mod parallel;
mod salt_state;
pub(crate) mod saltmod;
mod templates;

use std::sync::Arc;

use rmpv::Value as Mp;
use salt_compat::json::{json_to_msgpack, msgpack_to_json};
use serde_json::{Value, json};

use crate::runners::ctx::{Args, Ctx};

/// The runner functions of this module, as Salt names them.
pub(crate) const FUNS: &[&str] = &[
    "state.orchestrate",
    "state.orch",
    "state.sls",
    "state.orchestrate_single",
    "state.orchestrate_high",
    "state.orchestrate_show_sls",
    "state.orch_show_sls",
];

/// Run orchestrate runner `fun`; `raw` are the call's arguments as sent (for the `**kwargs`
/// of `orchestrate_single`/`orchestrate_high`); `user` runs it (Salt's `__user__`).
pub(crate) async fn call(
    ctx: &Ctx,
    fun: &str,
    a: &Args,
    raw: &[Value],
    user: &str,
) -> Result<Value, String> {
    if a.get("pillar").is_some_and(|p| !p.is_object()) {
        // Salt's runner raises; `salt-run` prints the exception (with its traceback, which
        // salt-rs does not have) as the return and exits 0.
        return Ok(json!(format!(
            "Exception occurred in runner {fun}: salt.exceptions.SaltInvocationError: \
             Pillar data must be formatted as a dictionary"
        )));
    }
    let id = ctx.shared.cfg.id.clone();
    let jid = a
        .text("orchestration_jid")
        .unwrap_or_else(|| ctx.shared.jids.next());
    let hook = saltmod::SaltMod {
        shared: ctx.shared.clone(),
        publisher: ctx.publisher.clone(),
        stop: ctx.stop.clone(),
        rt: tokio::runtime::Handle::current(),
        jid,
        user: user.to_owned(),
        console: ctx.console.clone(),
    };
    let (fun, a, extra) = (fun.to_owned(), a.clone(), extra_kwargs(raw));
    let work = tokio::task::spawn_blocking(move || run(hook, &fun, &a, &extra));
    let (fun_done, out) = work.await.map_err(|e| format!("orchestrate: {e}"))?;
    let data = json!({ id: out });
    Ok(match fun_done {
        Kind::Orchestrate => {
            let retcode = if saltmod::check_result(&data, false) {
                0
            } else {
                1
            };
            json!({"data": data, "outputter": "highstate", "retcode": retcode})
        }
        Kind::Other => data,
    })
}

enum Kind {
    Orchestrate,
    Other,
}

/// The keyword arguments of the call that are not parameters of the runner.
fn extra_kwargs(raw: &[Value]) -> Vec<(String, Value)> {
    const NAMED: &[&str] = &[
        "fun",
        "name",
        "data",
        "test",
        "queue",
        "pillar",
        "__kwarg__",
    ];
    raw.iter()
        .filter_map(Value::as_object)
        .filter(|m| m.get("__kwarg__") == Some(&Value::Bool(true)))
        .flat_map(|m| m.iter())
        .filter(|(k, _)| !NAMED.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The master minion's state options for this call.
fn opts(hook: saltmod::SaltMod, a: &Args, test: bool) -> salt_states::Opts {
    let hook = Arc::new(hook);
    let cfg = &hook.shared.cfg;
    let id = cfg.id.clone();
    let saltenv = a.text("saltenv").unwrap_or_else(|| "base".into());
    let grains = salt_states::map(vec![("id", Mp::from(id.as_str()))]);
    let req = salt_pillar::Request {
        id: id.clone(),
        grains: grains.clone(),
        saltenv: Some(saltenv.clone()),
        pillarenv: a.text("pillarenv").or_else(|| cfg.pillarenv.clone()),
        pillar_override: a.get("pillar").map_or(Mp::Nil, json_to_msgpack),
        ext: None,
        salt: salt_render::SaltHook::default(),
    };
    let pillar = salt_pillar::compile(&salt_pillar::Options::from(cfg), &req);
    let exclude = match a.get("exclude") {
        Some(Value::String(s)) => s.split(',').map(|e| Mp::from(e.trim())).collect(),
        Some(Value::Array(v)) => v.iter().map(json_to_msgpack).collect(),
        _ => Vec::new(),
    };
    salt_states::Opts {
        id: id.clone(),
        grains,
        pillar,
        // `orchestrate_single`/`orchestrate_high` pass `test=None` whatever they are given
        // (Salt 3007's runner), so they run for real.
        test: test && a.flag("test", false),
        failhard: false,
        opts: salt_states::map(vec![
            ("id", Mp::from(id.as_str())),
            ("saltenv", Mp::from(saltenv.as_str())),
            ("__role", Mp::from("master")),
        ]),
        saltenv,
        exclude,
        salt: salt_render::SaltHook(Some(Arc::new(templates::MasterFuns(hook.clone())))),
        extra: salt_states::ExtraHook(Some(hook)),
    }
}

/// The master's `file_roots` as the state engine's file client.
fn file_client(cfg: &salt_config::MasterConfig) -> Arc<dyn salt_states::FileClient> {
    Arc::new(salt_states::LocalFileClient {
        roots: cfg
            .fileserver
            .file_roots
            .iter()
            .map(|(env, dirs)| (env.clone(), dirs.clone()))
            .collect(),
    })
}

/// `mods` as a list (a comma-separated string or a list).
fn mods(a: &Args, key: &str) -> Vec<String> {
    match a.get(key) {
        Some(Value::Array(v)) => v.iter().map(salt_compat::py_json_str).collect(),
        Some(v) => salt_compat::py_json_str(v)
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        None => Vec::new(),
    }
}

/// Run on the blocking pool (the engine is synchronous; `salt.*` states hand their jobs to
/// the runtime).
fn run(hook: saltmod::SaltMod, fun: &str, a: &Args, extra: &[(String, Value)]) -> (Kind, Value) {
    let client = file_client(&hook.shared.cfg);
    let takes_test = !matches!(fun, "state.orchestrate_single" | "state.orchestrate_high");
    let opts = opts(hook, a, takes_test);
    let outcome = match fun {
        "state.orchestrate_show_sls" | "state.orch_show_sls" => {
            salt_states::show_sls(client, &opts, &mods(a, "mods"))
        }
        "state.orchestrate_single" => {
            let mut kw: Vec<(String, Mp)> = vec![(
                "name".into(),
                a.get("name").map_or(Mp::Nil, json_to_msgpack),
            )];
            kw.extend(extra.iter().map(|(k, v)| (k.clone(), json_to_msgpack(v))));
            if let Some(p) = a.get("pillar") {
                kw.push(("pillar".into(), json_to_msgpack(p)));
            }
            let f = a.text("fun").unwrap_or_default();
            salt_states::single(client, &opts, &f, &kw)
        }
        "state.orchestrate_high" => {
            let data = a.get("data").map_or(Mp::Nil, json_to_msgpack);
            salt_states::high(client, &opts, &data)
        }
        _ => {
            let out = salt_states::sls(client, &opts, &mods(a, "mods"));
            return (Kind::Orchestrate, outcome_json(out));
        }
    };
    (Kind::Other, outcome_json(outcome))
}

fn outcome_json(o: salt_states::Outcome) -> Value {
    match o {
        Ok(v) => msgpack_to_json(&v),
        Err(errors) => Value::Array(errors.into_iter().map(Value::String).collect()),
    }
}
