//! Execution modules: the functions a job can call, with Python-minion return shapes.
//!
//! One registry ([`Func`]: name, argument spec, handler) per module file ([`basic`]: `test`,
//! `grains`, `sys`, `cmd`, `saltutil` job control; [`state`]; [`cp`]; [`pillar`]) is the single
//! source of truth: [`call`] looks functions up in it, `sys.list_functions`/`list_modules`
//! list it. Arguments are bound the way `salt.minion.load_args_and_kwargs` does (positional
//! values, keyword maps marked `"__kwarg__": True`, `key=value` strings) and checked against
//! the spec with Python's wording; the [`CallOutcome`] `retcode`/`success`/`out` follow
//! `Minion._thread_return`. Handlers are inline, async (shell commands through
//! `tokio::process`), or blocking (state runs, file transfers: on a blocking thread, so a long
//! state job never holds up the driver).
//!
//! The state/exec modules crate (`salt-execmods`: `pkg`, `service`, `user`, `file`, ...) is
//! the default [`Provider`] ([`ext`]); another can be plugged in with [`set_provider`]. Its
//! functions are listed and called like the built-in ones (on a blocking thread).

pub mod basic;
pub mod cp;
pub mod ext;
pub mod pillar;
pub mod state;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, OnceLock, RwLock};

use rmpv::Value;

use crate::master_link::MasterLink;
use crate::matcher::fnmatch;
use salt_compat::map_get;
use salt_render::args::{parse_kwarg, yamlify_arg};

/// Salt's `EX_GENERIC`, the retcode of a failed function call.
pub const EX_GENERIC: i64 = 1;

/// What a function needs from the minion besides its arguments.
#[derive(Debug, Clone)]
pub struct ExecContext {
    /// The minion id.
    pub id: String,
    /// The grains map.
    pub grains: Arc<Value>,
    /// The master in use (file server, `_pillar`), when connected to one.
    pub master: Option<MasterLink>,
    /// The minion's pillar (shared with the driver's targeting; `saltutil.refresh_pillar`
    /// replaces it).
    pub pillar: Arc<RwLock<Option<Value>>>,
    /// `cachedir` (the file client caches under `cachedir/files/<saltenv>/`).
    pub cachedir: PathBuf,
    /// Minion options visible to templates as `opts` (a map).
    pub opts: Arc<Value>,
    /// Masterless (`file_client: local`, `salt-call --local`): files from `file_roots`, the
    /// pillar compiled here from `pillar_roots`.
    pub local: Option<Arc<crate::masterless::Masterless>>,
}

impl ExecContext {
    /// A context with no master, no pillar, `cachedir` `/var/cache/salt/minion`.
    pub fn new(id: &str, grains: Arc<Value>) -> Self {
        Self {
            id: id.to_owned(),
            grains,
            master: None,
            pillar: Arc::default(),
            cachedir: PathBuf::from("/var/cache/salt/minion"),
            opts: Arc::new(Value::Map(Vec::new())),
            local: None,
        }
    }

    /// A pillar compiled for this call: a `_pillar` from the master, or compiled here when
    /// masterless; `None` with neither (the cached pillar is all there is).
    pub fn fresh_pillar(
        &self,
        saltenv: Option<&str>,
        pillarenv: Option<&str>,
        pillar_override: Value,
    ) -> Option<Result<Value, String>> {
        if let Some(local) = &self.local {
            return Some(Ok(local.pillar(
                &self.id,
                &self.grains,
                saltenv,
                pillarenv,
                pillar_override,
                state::salt_hook(self),
            )));
        }
        let link = self.master.as_ref()?;
        Some(
            crate::blocking::wait(link.pillar(&self.grains, saltenv, pillarenv, pillar_override))
                .and_then(|r| r),
        )
    }

    /// The pillar as last compiled (`{}` before the first `_pillar`).
    pub fn pillar_now(&self) -> Value {
        self.pillar
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_else(|| Value::Map(Vec::new()))
    }
}

/// The result of one function call, before the job wrapper adds jid/fun/fun_args.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// The `return` value.
    pub ret: Value,
    /// Salt's `retcode` (0 = success).
    pub retcode: i64,
    /// The outputter hint (`out`), when Salt sets one.
    pub out: Option<&'static str>,
}

impl CallOutcome {
    /// A successful return.
    pub fn ok(ret: Value) -> Self {
        Self {
            ret,
            retcode: 0,
            out: None,
        }
    }

    /// A failed call: the message as the return, `EX_GENERIC`, `out: nested`.
    pub fn error(msg: String) -> Self {
        Self {
            ret: Value::from(msg),
            retcode: EX_GENERIC,
            out: Some("nested"),
        }
    }

    /// `success` as Salt computes it: retcode 0.
    pub fn success(&self) -> bool {
        self.retcode == 0
    }
}

// ---------------------------------------------------------------- registry

/// A Python signature, enough to bind and check arguments as Salt does.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Named parameters in order.
    pub params: &'static [&'static str],
    /// How many of them are required (the first ones).
    pub required: usize,
    /// `*args`.
    pub varargs: bool,
    /// `**kwargs`.
    pub varkw: bool,
}

impl Spec {
    /// `def f()`.
    pub const NONE: Spec = Spec::of(&[], 0);
    /// `def f(*args, **kwargs)`: no checks (the handler binds what it needs).
    pub const ANY: Spec = Spec {
        params: &[],
        required: 0,
        varargs: true,
        varkw: true,
    };

    /// `def f(p0, p1=..., ...)` with `required` required parameters.
    pub const fn of(params: &'static [&'static str], required: usize) -> Spec {
        Spec {
            params,
            required,
            varargs: false,
            varkw: false,
        }
    }

    /// The same with `**kwargs`.
    pub const fn kw(self) -> Spec {
        Spec {
            varkw: true,
            ..self
        }
    }
}

/// A boxed handler future.
pub type BoxFut = Pin<Box<dyn Future<Output = CallOutcome> + Send>>;

/// How a function runs.
#[derive(Clone, Copy)]
pub enum Run {
    /// Quick and non-blocking: called on the runtime.
    Inline(fn(&Call) -> CallOutcome),
    /// Asynchronous (shell commands, sleeps).
    Async(fn(Arc<Call>) -> BoxFut),
    /// Blocking (master requests, state runs): on a blocking thread.
    Blocking(fn(&Call) -> CallOutcome),
}

/// One execution function.
#[derive(Clone, Copy)]
pub struct Func {
    /// `module.function`.
    pub name: &'static str,
    /// Its signature.
    pub spec: Spec,
    /// Its handler.
    pub run: Run,
}

/// A call in progress: the function, its bound arguments, the job load and the context.
#[derive(Debug, Clone)]
pub struct Call {
    /// `module.function`.
    pub fun: String,
    /// The arguments.
    pub args: Args,
    /// The publish load (`__pub_*`, the current jid).
    pub job: Value,
    /// The minion's context.
    pub ctx: ExecContext,
}

impl Call {
    /// The function's short name (`ping` of `test.ping`).
    pub fn short(&self) -> &str {
        self.fun.rsplit('.').next().unwrap_or(&self.fun)
    }

    /// `module.function` called with the wrong arguments: Salt's message.
    pub fn missing(&self, name: &str) -> CallOutcome {
        missing(&self.fun, self.short(), name)
    }
}

/// Execution functions from another crate (the state/exec modules crate).
pub trait Provider: Send + Sync {
    /// Every function provided (`module.function`).
    fn functions(&self) -> Vec<&'static str>;
    /// Call `fun` (on a blocking thread); `None` when it is not one of [`Self::functions`].
    fn call(
        &self,
        fun: &str,
        args: &[Value],
        kwargs: &[(String, Value)],
        ctx: &ExecContext,
    ) -> Option<Result<Value, String>>;

    /// Salt's signature of `fun` (`None`: not checked), for Salt's arity and
    /// unknown-keyword errors before [`Self::call`].
    fn signature(&self, _fun: &str) -> Option<OwnedSpec> {
        None
    }
}

/// A [`Spec`] whose names are not `'static`.
#[derive(Debug, Clone, Default)]
pub struct OwnedSpec {
    /// Named parameters in order.
    pub params: Vec<&'static str>,
    /// How many of them are required (the first ones).
    pub required: usize,
    /// `*args`.
    pub varargs: bool,
    /// `**kwargs`.
    pub varkw: bool,
}

static PROVIDER: OnceLock<Arc<dyn Provider>> = OnceLock::new();

/// Plug in another crate's functions instead of the default ([`ext::Execmods`]); only before
/// the first call (later calls are ignored).
pub fn set_provider(p: Arc<dyn Provider>) {
    let _ = PROVIDER.set(p);
}

fn provider() -> &'static Arc<dyn Provider> {
    PROVIDER.get_or_init(|| Arc::new(ext::Execmods))
}

/// The built-in functions, every module.
fn builtin() -> impl Iterator<Item = &'static Func> {
    basic::FUNCS
        .iter()
        .chain(state::FUNCS)
        .chain(cp::FUNCS)
        .chain(pillar::FUNCS)
}

fn lookup(fun: &str) -> Option<&'static Func> {
    builtin().find(|f| f.name == fun)
}

/// The signature of a built-in function (`Spec::ANY` where its handler binds what it
/// needs); `None` for the provider's functions and unknown ones.
pub fn spec_of(fun: &str) -> Option<Spec> {
    lookup(fun).map(|f| f.spec)
}

/// Every function this minion provides, sorted (the `sys.list_functions` answer).
pub fn function_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = builtin().map(|f| f.name).collect();
    for f in provider().functions() {
        if !names.contains(&f) {
            names.push(f);
        }
    }
    names.sort_unstable();
    names
}

/// `sys.list_modules`: the modules of [`function_names`], sorted.
pub fn list_modules() -> Vec<&'static str> {
    let mut mods: Vec<&str> = function_names()
        .into_iter()
        .filter_map(|f| f.split_once('.').map(|(m, _)| m))
        .collect();
    mods.dedup();
    mods
}

/// `sys.list_functions`: all functions, or those of the named modules / globs.
pub fn list_functions(filters: &[Value]) -> Value {
    let names: Vec<&str> = function_names()
        .into_iter()
        .filter(|f| {
            filters.is_empty()
                || filters.iter().any(|m| {
                    let m = text(m);
                    if m.contains('*') || m.contains('.') {
                        fnmatch(f, &m)
                    } else {
                        f.starts_with(&format!("{m}."))
                    }
                })
        })
        .collect();
    Value::Array(names.into_iter().map(Value::from).collect())
}

fn check_spec(fun: &str, spec: &Spec, args: &Args) -> Option<CallOutcome> {
    check_params(
        fun,
        spec.params,
        spec.required,
        spec.varargs,
        spec.varkw,
        args,
    )
}

fn check_params(
    fun: &str,
    params: &[&str],
    required: usize,
    varargs: bool,
    varkw: bool,
    args: &Args,
) -> Option<CallOutcome> {
    let short = fun.rsplit('.').next().unwrap_or(fun);
    if !varkw && let Some(e) = unexpected_kwargs(fun, args, params) {
        return Some(e);
    }
    if !varargs && args.args.len() > params.len() {
        return Some(too_many(fun, short, params.len(), args.args.len()));
    }
    for (i, p) in params.iter().enumerate().take(required) {
        if args.param(i, p).is_none() {
            return Some(missing(fun, short, p));
        }
    }
    None
}

/// Run function `fun` with publish args `raw_args`; `job` is the publish load whose keys
/// become `__pub_*` keyword arguments for functions that take `**kwargs`.
pub async fn call(fun: &str, raw_args: &[Value], job: &Value, ctx: &ExecContext) -> CallOutcome {
    let args = Args::parse(raw_args);
    if let Some(f) = lookup(fun) {
        if let Some(e) = check_spec(fun, &f.spec, &args) {
            return e;
        }
        let call = Call {
            fun: fun.to_owned(),
            args,
            job: job.clone(),
            ctx: ctx.clone(),
        };
        return match f.run {
            Run::Inline(h) => h(&call),
            Run::Async(h) => h(Arc::new(call)).await,
            Run::Blocking(h) => tokio::task::spawn_blocking(move || h(&call))
                .await
                .unwrap_or_else(|e| {
                    CallOutcome::error(format!("The minion function caused an exception: {e}"))
                }),
        };
    }
    if provider().functions().contains(&fun) {
        if let Some(sig) = provider().signature(fun)
            && let Some(e) = check_params(
                fun,
                &sig.params,
                sig.required,
                sig.varargs,
                sig.varkw,
                &args,
            )
        {
            return e;
        }
        let (p, fun_s, ctx) = (provider().clone(), fun.to_owned(), ctx.clone());
        let done =
            tokio::task::spawn_blocking(move || p.call(&fun_s, &args.args, &args.kwargs, &ctx))
                .await;
        return match done {
            Ok(Some(Ok(v))) => CallOutcome::ok(v),
            Ok(Some(Err(e))) => CallOutcome::error(e),
            Ok(None) => not_available(fun),
            Err(e) => CallOutcome::error(format!("The minion function caused an exception: {e}")),
        };
    }
    // Salt's `saltutil.sync_*` copy `_modules`, `_states`, `_grains`... from the file
    // server and load them: Python code this minion cannot run. Said, not pretended.
    if fun.starts_with("saltutil.sync_") {
        return CallOutcome::error(format!(
            "ERROR: {fun}: salt-rs minions do not load custom Python modules (_modules, _states, \
             _grains, ...); nothing was synced"
        ));
    }
    not_available(fun)
}

/// Whether [`call`] knows `fun`: a function of the registry or of the provider, or one it
/// refuses by name (`saltutil.sync_*`); `salt-call` answers the others as Salt's does.
pub fn is_known(fun: &str) -> bool {
    lookup(fun).is_some()
        || provider().functions().contains(&fun)
        || fun.starts_with("saltutil.sync_")
}

/// Salt's words first (tools match them), then what there is.
fn not_available(fun: &str) -> CallOutcome {
    CallOutcome::error(format!(
        "'{fun}' is not available. This salt-rs minion has the modules {} \
         (sys.list_functions lists their functions).",
        list_modules().join(", ")
    ))
}

/// Call a function from blocking code (a template's `salt[...]` during a state run).
pub fn call_blocking(
    fun: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
    ctx: &ExecContext,
) -> Option<CallOutcome> {
    if lookup(fun).is_none() && !provider().functions().contains(&fun) {
        return None;
    }
    let mut raw: Vec<Value> = args.to_vec();
    if !kwargs.is_empty() {
        let mut m: Vec<(Value, Value)> = kwargs
            .iter()
            .map(|(k, v)| (Value::from(k.as_str()), v.clone()))
            .collect();
        m.push((Value::from("__kwarg__"), Value::Boolean(true)));
        raw.push(Value::Map(m));
    }
    Some(
        crate::blocking::wait(call(fun, &raw, &Value::Map(Vec::new()), ctx))
            .unwrap_or_else(|e| CallOutcome::error(format!("{fun}: {e}"))),
    )
}

/// Arguments split into positional and keyword, after Salt's parsing rules.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Args {
    /// Positional arguments.
    pub args: Vec<Value>,
    /// Keyword arguments, in arrival order.
    pub kwargs: Vec<(String, Value)>,
}

impl Args {
    /// Split a publish `arg` list (Salt's `load_args_and_kwargs` without the argspec check).
    pub fn parse(raw: &[Value]) -> Self {
        let mut out = Self::default();
        for a in raw {
            match a {
                Value::Map(entries) if map_get(a, "__kwarg__") == Some(&Value::Boolean(true)) => {
                    for (k, v) in entries {
                        let Some(k) = k.as_str() else { continue };
                        if k != "__kwarg__" {
                            out.set(k, v.clone());
                        }
                    }
                }
                Value::String(s) => match s.as_str().and_then(parse_kwarg) {
                    Some((k, v)) => out.set(k, yamlify_arg(v)),
                    None => out.args.push(a.clone()),
                },
                other => out.args.push(other.clone()),
            }
        }
        out
    }

    fn set(&mut self, k: &str, v: Value) {
        match self.kwargs.iter_mut().find(|(key, _)| key == k) {
            Some(slot) => slot.1 = v,
            None => self.kwargs.push((k.to_owned(), v)),
        }
    }

    pub fn kw(&self, k: &str) -> Option<&Value> {
        self.kwargs.iter().find(|(key, _)| key == k).map(|(_, v)| v)
    }

    /// Bind parameter `name` at position `pos`: positional first, then keyword.
    pub fn param(&self, pos: usize, name: &str) -> Option<&Value> {
        self.args.get(pos).or_else(|| self.kw(name))
    }
}

/// Python `str()`-like rendering for values used as text (command lines, grain keys).
pub(crate) fn text(v: &Value) -> String {
    salt_compat::py_str(v)
}

fn arity_error(fun: &str, msg: &str) -> CallOutcome {
    CallOutcome::error(format!("Passed invalid arguments to {fun}: {msg}\n"))
}

fn too_many(fun: &str, short: &str, takes: usize, given: usize) -> CallOutcome {
    let plural = if takes == 1 { "" } else { "s" };
    let was = if given == 1 { "was" } else { "were" };
    arity_error(
        fun,
        &format!("{short}() takes {takes} positional argument{plural} but {given} {was} given"),
    )
}

fn missing(fun: &str, short: &str, name: &str) -> CallOutcome {
    arity_error(
        fun,
        &format!("{short}() missing 1 required positional argument: '{name}'"),
    )
}

fn unexpected_kwargs(fun: &str, args: &Args, allowed: &[&str]) -> Option<CallOutcome> {
    let bad: Vec<String> = args
        .kwargs
        .iter()
        .filter(|(k, _)| !allowed.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}={}", text(v)))
        .collect();
    if bad.is_empty() {
        None
    } else {
        Some(CallOutcome::error(format!(
            "ERROR executing '{fun}': The following keyword arguments are not valid: {}",
            bad.join(", ")
        )))
    }
}

pub(crate) fn exit_code(status: std::process::ExitStatus) -> i64 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => i64::from(c),
        (None, Some(sig)) => -i64::from(sig),
        (None, None) => 1,
    }
}
