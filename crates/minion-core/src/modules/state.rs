//! `state.*` on the minion daemon and in `salt-call`: the state system of `salt-states` with
//! the remote file client and the master's pillar, or, masterless (`salt-call --local`,
//! `file_client: local`), with `file_roots` and the pillar compiled here.
//!
//! Each run compiles a fresh pillar from the master (`_pillar` with grains, `saltenv`,
//! `pillarenv` and `pillar=` overrides) when asked for another environment or an override,
//! else uses the minion's pillar; a pillar with `_errors` stops the run with Salt's
//! "Pillar failed to render" list and retcode 5 (the `show_*` functions and `template`:
//! Salt's `CommandExecutionError` text with the errors, retcode 1). Returns carry Salt's retcodes (0, 1 for
//! compile errors, 2 for a failed state) and `out: highstate` like Salt's `__outputter__`.

use std::sync::Arc;

use rmpv::Value;
use salt_states::{FileClient, Opts};

use super::{Call, CallOutcome, Func, Run, Spec, text};
use crate::fileclient::RemoteFileClient;

const RUN: Spec = Spec::of(&["mods"], 0).kw();

const fn f(name: &'static str, spec: Spec) -> Func {
    Func {
        name,
        spec,
        run: Run::Blocking(run),
    }
}

/// The functions of this file.
pub const FUNCS: &[Func] = &[
    f("state.apply", RUN),
    f("state.sls", Spec::of(&["mods"], 1).kw()),
    f("state.highstate", Spec::NONE.kw()),
    f("state.single", Spec::of(&["fun", "name"], 1).kw()),
    f("state.show_sls", Spec::of(&["mods"], 1).kw()),
    f("state.show_top", Spec::NONE.kw()),
    f("state.show_lowstate", Spec::NONE.kw()),
    f("state.show_highstate", Spec::NONE.kw()),
];

/// Salt's exit codes of the state system.
const EX_STATE_COMPILER_ERROR: i64 = 1;
const EX_STATE_FAILURE: i64 = 2;
const EX_PILLAR_FAILURE: i64 = 5;

/// Keyword arguments the state functions take (others are refused by name).
const KNOWN: &[&str] = &[
    "mods",
    "test",
    "saltenv",
    "pillarenv",
    "pillar",
    "exclude",
    "queue",
    "concurrent",
    "fun",
    "name",
];

/// The templates' `salt[...]`: this minion's execution modules (less the modules of
/// `refused`, which answer as absent).
struct MinionSalt {
    ctx: super::ExecContext,
    refused: &'static [&'static str],
}

impl salt_render::SaltFunctions for MinionSalt {
    fn call(
        &self,
        fun: &str,
        args: &[Value],
        kwargs: &[(String, Value)],
    ) -> Option<Result<Value, String>> {
        let module = fun.split_once('.').map_or(fun, |(m, _)| m);
        if self.refused.contains(&module) {
            return None;
        }
        let out = super::call_blocking(fun, args, kwargs, &self.ctx)?;
        Some(if out.success() {
            Ok(out.ret)
        } else {
            Err(text(&out.ret))
        })
    }

    fn has(&self, fun: &str) -> bool {
        let module = fun.split_once('.').map_or(fun, |(m, _)| m);
        !self.refused.contains(&module) && super::is_known(fun)
    }

    fn argspec(&self, fun: &str) -> Option<salt_render::ArgSpec> {
        super::spec_of(fun).map(|s| salt_render::ArgSpec {
            params: s.params,
            required: s.required,
            varargs: s.varargs,
            varkw: s.varkw,
        })
    }
}

/// The hook that gives templates this minion's modules.
pub fn salt_hook(ctx: &super::ExecContext) -> salt_render::SaltHook {
    salt_render::SaltHook(Some(Arc::new(MinionSalt {
        ctx: ctx.clone(),
        refused: &[],
    })))
}

/// The modules a master's pillar renderer does not offer: they act on a minion's jobs, state
/// system, file client or pillar (a master has none of these; Salt's would recurse or reach
/// for a master of its own).
pub const NOT_ON_MASTER: &[&str] = &["saltutil", "state", "cp", "pillar"];

/// The hook of a master's pillar renderer: this crate's execution modules run on the
/// master host, as Salt's master loads its minion modules (`salt.loader.minion_mods`) with
/// its options, `grains` set to the grains of the minion whose pillar is compiled and `id`
/// to its id (`Pillar.__gen_opts`). The modules of [`NOT_ON_MASTER`] answer as absent.
pub fn master_salt_hook(id: &str, grains: Value, opts: Value) -> salt_render::SaltHook {
    let mut ctx = super::ExecContext::new(id, Arc::new(grains));
    ctx.opts = Arc::new(opts);
    salt_render::SaltHook(Some(Arc::new(MinionSalt {
        ctx,
        refused: NOT_ON_MASTER,
    })))
}

/// The remote file client of a call (`None`: not connected to a master).
pub fn remote_client(c: &Call) -> Result<Arc<RemoteFileClient>, CallOutcome> {
    match &c.ctx.master {
        Some(link) => Ok(Arc::new(RemoteFileClient::new(
            link.clone(),
            c.ctx.cachedir.clone(),
        ))),
        None if c.ctx.local.is_some() => Err(CallOutcome::error(format!(
            "{}: not supported by salt-rs with file_client: local (it needs the master's \
             file server)",
            c.fun
        ))),
        None => Err(CallOutcome::error(format!(
            "{}: this salt-rs minion is not connected to a master (no file server)",
            c.fun
        ))),
    }
}

/// The state system's file client: `file_roots` when masterless, else the master's.
fn file_client(c: &Call) -> Result<Arc<dyn FileClient>, CallOutcome> {
    match &c.ctx.local {
        Some(local) => Ok(Arc::new(local.file_client())),
        None => remote_client(c).map(|cl| cl as Arc<dyn FileClient>),
    }
}

/// The pillar a run sees: the minion's, or a fresh one (`_pillar`, or compiled here when
/// masterless) for another environment or an override.
pub fn run_pillar(c: &Call) -> Result<Value, String> {
    let kw_str = |k: &str| c.args.kw(k).filter(|v| !v.is_nil()).map(text);
    let override_ = match c.args.kw("pillar") {
        None | Some(Value::Nil) => None,
        Some(m @ Value::Map(_)) => Some(m.clone()),
        Some(_) => {
            return Err(
                "Pillar data must be formatted as a dictionary, unless pillar_enc is specified."
                    .into(),
            );
        }
    };
    let (saltenv, pillarenv) = (kw_str("saltenv"), kw_str("pillarenv"));
    let cached = c
        .ctx
        .pillar
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    if let (Some(p), None, None, None) = (&cached, &override_, &saltenv, &pillarenv) {
        return Ok(p.clone());
    }
    c.ctx
        .fresh_pillar(
            saltenv.as_deref(),
            pillarenv.as_deref(),
            override_.unwrap_or_else(|| Value::Map(Vec::new())),
        )
        .unwrap_or_else(|| Ok(cached.unwrap_or_else(|| Value::Map(Vec::new()))))
}

fn exclude(v: Option<&Value>) -> Vec<Value> {
    match v {
        None | Some(Value::Nil) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(Value::String(x)) => {
            let s = x.as_str().unwrap_or("");
            match salt_render::yaml::load(s) {
                Ok(Some(Value::Array(a))) => a,
                _ => s.split(',').map(Value::from).collect(),
            }
        }
        Some(other) => vec![other.clone()],
    }
}

fn mods(c: &Call) -> Vec<String> {
    let raw = match c.args.param(0, "mods") {
        None | Some(Value::Nil) => return Vec::new(),
        Some(Value::Array(a)) => a.iter().map(text).collect::<Vec<_>>(),
        Some(v) => vec![text(v)],
    };
    raw.iter()
        .flat_map(|m| {
            m.split(',')
                .map(|s| s.trim().to_owned())
                .collect::<Vec<_>>()
        })
        .filter(|m| !m.is_empty())
        .collect()
}

fn run(c: &Call) -> CallOutcome {
    if c.fun != "state.single" {
        let bad: Vec<&str> = c
            .args
            .kwargs
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| !KNOWN.contains(k))
            .collect();
        if !bad.is_empty() {
            return CallOutcome::error(format!(
                "{}: argument(s) {} not supported by salt-rs",
                c.fun,
                bad.join(", ")
            ));
        }
    }
    let _queued = match check_queue(c) {
        Ok(guard) => guard,
        Err(conflict) => return conflict,
    };
    let client = match file_client(c) {
        Ok(cl) => cl,
        Err(e) => return e,
    };
    let pillar = match run_pillar(c) {
        Ok(p) => p,
        Err(e) => return CallOutcome::error(e),
    };
    if let Some(Value::Array(errs)) = salt_compat::map_get(&pillar, "_errors") {
        if c.fun.starts_with("state.show_") || c.fun == "state.template" {
            // These raise CommandExecutionError("Pillar failed to render", info=errors).
            let mut msg = "ERROR: Pillar failed to render. Additional info follows:\n".to_owned();
            for e in errs {
                msg.push_str(&format!("\n- {}", text(e).replace('\n', "\n  ")));
            }
            return CallOutcome::error(msg);
        }
        let mut lines = vec![Value::from(
            "Pillar failed to render with the following messages:",
        )];
        lines.extend(errs.iter().cloned());
        return CallOutcome {
            ret: Value::Array(lines),
            retcode: EX_PILLAR_FAILURE,
            out: Some("highstate"),
        };
    }
    let opts_map = &*c.ctx.opts;
    let opts = Opts {
        id: c.ctx.id.clone(),
        grains: (*c.ctx.grains).clone(),
        pillar,
        test: c
            .args
            .kw("test")
            .or_else(|| salt_compat::map_get(opts_map, "test"))
            .is_some_and(salt_states::truthy),
        failhard: salt_compat::map_get(opts_map, "failhard").is_some_and(salt_states::truthy),
        saltenv: c
            .args
            .kw("saltenv")
            .filter(|v| !v.is_nil())
            .map_or_else(|| "base".to_owned(), text),
        opts: opts_map.clone(),
        exclude: exclude(c.args.kw("exclude")),
        salt: salt_hook(&c.ctx),
        extra: salt_states::ExtraHook::default(),
    };
    let mods = mods(c);
    let outcome = match c.fun.as_str() {
        "state.apply" if mods.is_empty() => salt_states::highstate(client, &opts),
        "state.highstate" => salt_states::highstate(client, &opts),
        "state.apply" | "state.sls" => salt_states::sls(client, &opts, &mods),
        "state.show_sls" => salt_states::show_sls(client, &opts, &mods),
        "state.show_top" => salt_states::show_top(client, &opts),
        "state.show_lowstate" => salt_states::show_lowstate(client, &opts),
        "state.show_highstate" => salt_states::show_highstate(client, &opts),
        "state.single" => {
            let fun = c.args.param(0, "fun").map(text).unwrap_or_default();
            let mut kw: Vec<(String, Value)> = c
                .args
                .kwargs
                .iter()
                .filter(|(k, _)| {
                    !matches!(
                        k.as_str(),
                        "test"
                            | "saltenv"
                            | "pillar"
                            | "pillarenv"
                            | "queue"
                            | "concurrent"
                            | "fun"
                    )
                })
                .cloned()
                .collect();
            if let Some(n) = c.args.args.get(1)
                && !kw.iter().any(|(k, _)| k == "name")
            {
                kw.insert(0, ("name".into(), n.clone()));
            }
            salt_states::single(client, &opts, &fun, &kw)
        }
        other => return super::not_available(other),
    };
    let show = c.fun.starts_with("state.show");
    let out = (!show).then_some("highstate");
    match outcome {
        Ok(v) => {
            let retcode = if !show && !salt_states::all_ok(&v) {
                EX_STATE_FAILURE
            } else {
                0
            };
            CallOutcome {
                ret: v,
                retcode,
                out,
            }
        }
        Err(errs) => CallOutcome {
            ret: Value::Array(errs.into_iter().map(Value::from).collect()),
            retcode: EX_STATE_COMPILER_ERROR,
            out,
        },
    }
}

/// Runs waiting with `queue=True`, one at a time (so two queued runs do not start together).
static QUEUE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Salt's `_check_queue`: with another `state.*` job running on this minion, answer its
/// `state.running` lines with retcode 1; `queue=True` (or the `state_queue` option) waits for
/// it instead, as Salt 3006 does (3007's queue files are not done: the run waits in place).
/// `concurrent=True` skips the check.
fn check_queue(c: &Call) -> Result<Option<std::sync::MutexGuard<'static, ()>>, CallOutcome> {
    if c.args.kw("concurrent").is_some_and(salt_states::truthy) {
        return Ok(None);
    }
    let current = salt_compat::map_get(&c.job, "jid").map(text);
    let queue = c
        .args
        .kw("queue")
        .or_else(|| salt_compat::map_get(&c.ctx.opts, "state_queue"))
        .is_some_and(salt_states::truthy);
    if !queue {
        let conflicts = crate::running::state_conflicts(current.as_deref());
        if conflicts.is_empty() {
            return Ok(None);
        }
        return Err(CallOutcome {
            ret: Value::Array(conflicts.into_iter().map(Value::from).collect()),
            retcode: EX_STATE_COMPILER_ERROR,
            out: (!c.fun.starts_with("state.show")).then_some("highstate"),
        });
    }
    let guard = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
    while !crate::running::state_conflicts(current.as_deref()).is_empty() {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    Ok(Some(guard))
}
