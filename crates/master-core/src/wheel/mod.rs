//! Wheel: the functions that manage the master itself (Salt's `salt/wheel/`), called by the
//! clear `wheel` command (salt-api, pepper, `WheelClient.cmd_sync`), and by the reactor's
//! `wheel.*` reactions and orchestrate's `salt.wheel` through [`call`] / [`call_low`].
//!
//! * [`key`]: `key.list_all`, `list`, `name_match`, `accept`, `accept_dict`, `reject`,
//!   `reject_dict`, `delete`, `delete_dict`, `print`, `finger`, `finger_master`,
//!   `master_key_str`, `gen`, `gen_accept`, through the master's own key store (with a
//!   group: its database), firing Salt's `salt/key` events;
//! * [`roots`]: `file_roots.*` and `pillar_roots.*` (`find`, `list_env`, `list_roots`,
//!   `read`, `write`);
//! * `config.values` (the master's configuration as Salt's `master_config()` gives it:
//!   `salt_config::master_values`), `minions.connected`, `error.error`.
//!
//! Return values have Salt 3007's shapes; a call that does not fit the function's Python
//! signature answers Salt's texts; what Salt raises is answered as Salt's client does
//! (`Exception occurred in wheel <fun>: ...`, `success: False`), the Python traceback
//! replaced by one line saying so. Functions salt-rs does not implement (`config.apply`,
//! `config.update_config`, `key.gen_keys`, `key.gen_signature`) are refused by name. Each
//! call is stored in the job cache as Salt stores it (a job of the master,
//! [`crate::jobs::store_master_job`]; `wheelclient_returns: False` turns that off).

pub(crate) mod key;
pub(crate) mod roots;

use serde_json::{Map, Value, json};

use salt_client::args::Sig;

use crate::shared::Shared;

/// A wheel function salt-rs has: its name, Salt 3007's Python signature (`sig.fun` is the
/// Python name, `key.list_` for `key.list`), and the defaults of its optional parameters
/// (JSON, in order) for the `fun_args` Salt reports.
struct Wheel {
    name: &'static str,
    sig: Sig,
    defaults: &'static [&'static str],
}

const fn wheel(
    name: &'static str,
    py: &'static str,
    params: &'static [&'static str],
    required: usize,
    defaults: &'static [&'static str],
) -> Wheel {
    Wheel {
        name,
        sig: Sig {
            fun: py,
            params,
            required,
            var_kw: false,
        },
        defaults,
    }
}

const MATCH: &[&str] = &["match"];
const ACCEPT: &[&str] = &["match", "include_rejected", "include_denied"];
const REJECT: &[&str] = &["match", "include_accepted", "include_denied"];
const NO: &[&str] = &["false", "false"];
const FIND: &[&str] = &["path", "saltenv"];
const WRITE: &[&str] = &["data", "path", "saltenv", "index"];
const BASE: &[&str] = &["\"base\""];

const WHEELS: &[Wheel] = &[
    wheel("key.list", "list_", MATCH, 1, &[]),
    wheel("key.list_all", "list_all", &[], 0, &[]),
    wheel("key.name_match", "name_match", MATCH, 1, &[]),
    wheel("key.accept", "accept", ACCEPT, 1, NO),
    wheel("key.accept_dict", "accept_dict", ACCEPT, 1, NO),
    wheel("key.delete", "delete", MATCH, 1, &[]),
    wheel("key.delete_dict", "delete_dict", MATCH, 1, &[]),
    wheel("key.reject", "reject", REJECT, 1, NO),
    wheel("key.reject_dict", "reject_dict", REJECT, 1, NO),
    wheel("key.print", "key_str", MATCH, 1, &[]),
    wheel("key.master_key_str", "master_key_str", &[], 0, &[]),
    wheel(
        "key.finger",
        "finger",
        &["match", "hash_type"],
        1,
        &["null"],
    ),
    wheel(
        "key.finger_master",
        "finger_master",
        &["hash_type"],
        0,
        &["null"],
    ),
    wheel("key.gen", "gen", &["id_", "keysize"], 0, &["null", "2048"]),
    wheel(
        "key.gen_accept",
        "gen_accept",
        &["id_", "keysize", "force"],
        1,
        &["2048", "false"],
    ),
    wheel("minions.connected", "connected", &[], 0, &[]),
    wheel(
        "error.error",
        "error",
        &["name", "message"],
        0,
        &["null", "\"\""],
    ),
    wheel("file_roots.find", "find", FIND, 1, BASE),
    wheel("file_roots.list_env", "list_env", &["saltenv"], 0, BASE),
    wheel("file_roots.list_roots", "list_roots", &[], 0, &[]),
    wheel("file_roots.read", "read", FIND, 1, BASE),
    wheel("file_roots.write", "write", WRITE, 2, &["\"base\"", "0"]),
    wheel("pillar_roots.find", "find", FIND, 1, BASE),
    wheel("pillar_roots.list_env", "list_env", &["saltenv"], 0, BASE),
    wheel("pillar_roots.list_roots", "list_roots", &[], 0, &[]),
    wheel("pillar_roots.read", "read", FIND, 1, BASE),
    wheel("pillar_roots.write", "write", WRITE, 2, &["\"base\"", "0"]),
    wheel("config.values", "values", &[], 0, &[]),
];

/// Salt 3007 wheel functions salt-rs does not implement: refused by name.
const NOT_IMPLEMENTED: &[&str] = &[
    "config.apply",
    "config.update_config",
    "key.gen_keys",
    "key.gen_signature",
];

/// Keys of a low chunk that are the client's, not the function's (Salt's
/// `CLIENT_INTERNAL_KEYWORDS`).
const CLIENT_INTERNAL_KEYWORDS: &[&str] = &[
    "client",
    "cmd",
    "eauth",
    "fun",
    "kwarg",
    "match",
    "token",
    "__jid__",
    "__tag__",
    "__user__",
    "username",
    "password",
    "full_return",
    "print_event",
];

/// How a wheel function failed, as Salt's client reports it.
#[derive(Debug)]
pub(crate) enum Fail {
    /// The function raised: the exception's Python name (`salt.exceptions.X`, `OSError`)
    /// and message.
    Raise(String, String),
    /// Python's `TypeError` calling the function (its text).
    Call(String),
}

impl Fail {
    /// `salt.exceptions.SaltInvocationError`.
    pub(crate) fn invocation(msg: impl Into<String>) -> Self {
        Self::Raise("salt.exceptions.SaltInvocationError".into(), msg.into())
    }
}

/// A wheel function's bound arguments.
pub(crate) type Args = salt_client::args::Bound;

/// What a wheel function answers.
pub(crate) type Answer = Result<Value, Fail>;

/// Salt's `Exception occurred in wheel <fun>: <traceback>` (the traceback's last line, the
/// exception, is kept: clients read it).
fn raised(fun: &str, exc: &str, msg: &str) -> String {
    let last = if msg.is_empty() {
        exc.to_owned()
    } else {
        format!("{exc}: {msg}")
    };
    format!(
        "Exception occurred in wheel {fun}: Traceback (most recent call last):\n  \
         (salt-rs: no Python traceback)\n{last}\n"
    )
}

/// Run wheel function `fun` with Python call semantics, `fun(*args, **kwargs)`, as Salt's
/// `WheelClient.cmd` / `low()` with `arg` and `kwarg` do (orchestrate's `salt.wheel`, a
/// clear `wheel` load carrying both `arg` and `kwarg`). Fires Salt's
/// `salt/wheel/<jid>/new` and `salt/wheel/<jid>/ret` (with `user`) and returns
/// `(return, success)` as Salt's `data["return"]`, `data["success"]`.
///
/// Blocking (key files, the group's database, file roots): async callers run it on the
/// blocking pool (`tokio::task::spawn_blocking`).
pub(crate) fn call(
    shared: &Shared,
    fun: &str,
    args: &[Value],
    kwargs: &Map<String, Value>,
    user: &str,
) -> (Value, bool) {
    run(shared, fun, user, |w| bind_call(w, args, kwargs))
}

/// Run wheel function `fun` from a low chunk as Salt's `low()` does: with both `arg` and
/// `kwarg` in `low`, as [`call`]; else the function's parameters are taken from `low` by
/// name (`salt.utils.args.format_call`: a missing one, or a key that is neither a parameter
/// nor one of the client's, raises). The clear `wheel` command and the reactor's `wheel.*`
/// reactions (Salt's `cmd_async(low)`) call this. Blocking, as [`call`].
pub(crate) fn call_low(
    shared: &Shared,
    fun: &str,
    low: &Map<String, Value>,
    user: &str,
) -> (Value, bool) {
    if let (Some(arg), Some(Value::Object(kw))) = (low.get("arg"), low.get("kwarg")) {
        let args = match arg {
            Value::Array(a) => a.clone(),
            Value::Null => Vec::new(),
            other => vec![other.clone()],
        };
        return call(shared, fun, &args, kw, user);
    }
    run(shared, fun, user, |w| bind_low(w, low))
}

/// The common part of [`call`] and [`call_low`]: find, bind, fire, run, fire.
fn run(
    shared: &Shared,
    fun: &str,
    user: &str,
    bind: impl FnOnce(&Wheel) -> Bound,
) -> (Value, bool) {
    let jid = shared.jids.next();
    let tag = format!("salt/wheel/{jid}");
    let mut data = Map::new();
    data.insert("fun".into(), json!(format!("wheel.{fun}")));
    data.insert("jid".into(), json!(jid));
    data.insert("user".into(), json!(user));
    let (ret, success): (Value, bool) = match WHEELS.iter().find(|w| w.name == fun) {
        // Salt's `verify_fun` raises before the `new` event.
        None if NOT_IMPLEMENTED.contains(&fun) => (
            json!(raised(
                fun,
                "salt.exceptions.CommandExecutionError",
                &format!("'{fun}' is not implemented by salt-rs"),
            )),
            false,
        ),
        None => (
            json!(raised(
                fun,
                "salt.exceptions.CommandExecutionError",
                &format!("'{fun}' is not available."),
            )),
            false,
        ),
        Some(w) => {
            let (fun_args, bound) = bind(w);
            if let Some(fun_args) = fun_args {
                data.insert("fun_args".into(), Value::Array(fun_args));
                shared
                    .events
                    .fire(format!("{tag}/new"), Value::Object(data.clone()));
                // Salt's `fire_event` stamps the data in place: the job stored keeps it.
                data.insert("_stamp".into(), json!(salt_compat::time::event_stamp_now()));
                tracing::info!("Wheel {fun} called by {user}");
            }
            match bound.and_then(|args| {
                dispatch(shared, fun, &args).map_err(|f| match f {
                    // Salt's client catches `TypeError` from the call itself, and
                    // `SaltInvocationError` is one.
                    Fail::Raise(exc, msg)
                        if exc == "TypeError" || exc == "salt.exceptions.SaltInvocationError" =>
                    {
                        Fail::Call(msg)
                    }
                    f => f,
                })
            }) {
                Ok(v) => (v, true),
                Err(f) => failed(fun, f),
            }
        }
    };
    data.insert("return".into(), ret.clone());
    data.insert("success".into(), json!(success));
    if !success {
        // Salt's client marks what raised.
        data.insert("retcode".into(), json!(1));
    }
    shared
        .events
        .fire(format!("{tag}/ret"), Value::Object(data.clone()));
    if shared.cfg.wheelclient_returns {
        crate::jobs::store_master_job(shared, &jid, &data);
    }
    (ret, success)
}

/// Salt's `(return, success)` for a failure: a `TypeError` calling the function is reported
/// with success (`Passed invalid arguments`), `NotImplemented` as its text, anything else
/// raised as `Exception occurred in wheel ...`.
fn failed(fun: &str, f: Fail) -> (Value, bool) {
    match f {
        Fail::Call(msg) => (
            json!(format!("\nPassed invalid arguments: {msg}\n\nUsage:\nNone")),
            true,
        ),
        Fail::Raise(exc, msg) if exc == "salt.exceptions.NotImplemented" => (json!(msg), false),
        Fail::Raise(exc, msg) => (json!(raised(fun, &exc, &msg)), false),
    }
}

/// A call bound: the `fun_args` Salt reports once the function is about to be called
/// (`None`: it failed before), and the arguments or how binding failed.
type Bound = (Option<Vec<Value>>, Result<Args, Fail>);

/// `fun(*args, **kwargs)`: Python's binding and its `TypeError` texts (raised by the call,
/// after Salt's `new` event).
fn bind_call(w: &Wheel, args: &[Value], kwargs: &Map<String, Value>) -> Bound {
    let short = w.sig.fun;
    let mut raw: Vec<Value> = args.to_vec();
    let mut kw: Map<String, Value> = kwargs
        .iter()
        .filter(|(k, _)| !k.starts_with("__"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let fun_args: Vec<Value> = raw
        .iter()
        .cloned()
        .chain((!kw.is_empty()).then(|| Value::Object(kw.clone())))
        .collect();
    if let Some(k) = kw.keys().find(|k| !w.sig.params.contains(&k.as_str())) {
        let msg = format!("{short}() got an unexpected keyword argument '{k}'");
        return (Some(fun_args), Err(Fail::Call(msg)));
    }
    if !kw.is_empty() {
        kw.insert("__kwarg__".into(), json!(true));
        raw.push(Value::Object(kw));
    }
    let bound = salt_client::args::bind(&w.sig, &raw).map_err(|e| {
        Fail::Call(
            e.strip_prefix("Passed invalid arguments: ")
                .unwrap_or(&e)
                .to_owned(),
        )
    });
    (Some(fun_args), bound)
}

/// `salt.utils.args.format_call(fun, low, expected_extra_kws=CLIENT_INTERNAL_KEYWORDS)`
/// (what it raises comes before Salt's `new` event).
fn bind_low(w: &Wheel, low: &Map<String, Value>) -> Bound {
    match format_call(w, low) {
        Ok((args, fun_args)) => (Some(fun_args), Ok(args)),
        Err(f) => (None, Err(f)),
    }
}

fn format_call(w: &Wheel, low: &Map<String, Value>) -> Result<(Args, Vec<Value>), Fail> {
    let (required, optional) = w.sig.params.split_at(w.sig.required);
    let mut args = Vec::new();
    let mut missing = 0;
    for p in required {
        match low.get(*p) {
            Some(v) => args.push(v.clone()),
            None => missing += 1,
        }
    }
    if missing > 0 {
        let n = required.len();
        return Err(Fail::invocation(format!(
            "{} takes at least {n} argument{} ({} given)",
            w.sig.fun,
            if n > 1 { "s" } else { "" },
            args.len()
        )));
    }
    let mut kwargs = Map::new();
    for (p, d) in optional.iter().zip(w.defaults) {
        let v = low
            .get(*p)
            .cloned()
            .unwrap_or_else(|| serde_json::from_str(d).unwrap_or(Value::Null));
        kwargs.insert((*p).to_owned(), v);
    }
    let extra: Vec<&String> = low
        .keys()
        .filter(|k| !w.sig.params.contains(&k.as_str()))
        .filter(|k| !CLIENT_INTERNAL_KEYWORDS.contains(&k.as_str()))
        .collect();
    let module = w.name.split('.').next().unwrap_or_default();
    let full = format!("salt.loaded.int.wheel.{module}.{}", w.sig.fun);
    match extra.as_slice() {
        [] => {}
        [one] => {
            return Err(Fail::invocation(format!(
                "'{one}' is an invalid keyword argument for '{full}'"
            )));
        }
        [rest @ .., last] => {
            let rest: Vec<String> = rest.iter().map(|e| format!("'{e}'")).collect();
            return Err(Fail::invocation(format!(
                "{} and '{last}' are invalid keyword arguments for '{full}'",
                rest.join(", ")
            )));
        }
    }
    let fun_args: Vec<Value> = args
        .iter()
        .cloned()
        .chain((!kwargs.is_empty()).then(|| Value::Object(kwargs.clone())))
        .collect();
    let mut raw = args;
    if !kwargs.is_empty() {
        kwargs.insert("__kwarg__".into(), json!(true));
        raw.push(Value::Object(kwargs));
    }
    let bound = salt_client::args::bind(&w.sig, &raw).map_err(Fail::invocation)?;
    Ok((bound, fun_args))
}

fn dispatch(shared: &Shared, fun: &str, a: &Args) -> Answer {
    match fun.split_once('.') {
        Some(("key", f)) => key::call(shared, f, a),
        Some(("file_roots", f)) => {
            let roots = shared.cfg.fileserver.file_roots.clone();
            roots::call(&roots::Roots::new(roots, true), f, a)
        }
        Some(("pillar_roots", f)) => {
            let roots = shared
                .cfg
                .pillar_roots
                .iter()
                .map(|(env, dirs)| (env.clone(), dirs.iter().map(Into::into).collect()))
                .collect();
            roots::call(&roots::Roots::new(roots, false), f, a)
        }
        Some(("minions", "connected")) => {
            let mut v: Vec<String> = shared
                .connected
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .cloned()
                .collect();
            v.sort();
            Ok(json!(v))
        }
        Some(("error", "error")) => error(a),
        Some(("config", "values")) => config_values(shared),
        _ => Err(Fail::Raise(
            "salt.exceptions.CommandExecutionError".into(),
            format!("'{fun}' is not available."),
        )),
    }
}

/// `config.values()`: `salt.config.master_config(conf_file)`, the files re-read now
/// (`salt_config::master_values`). The answer holds the configuration's secrets, as Salt's
/// does: it is never logged.
fn config_values(shared: &Shared) -> Answer {
    salt_config::master_values(&shared.cfg.load_options).map_err(|e| {
        Fail::Raise(
            "salt.exceptions.SaltConfigurationError".into(),
            e.to_string(),
        )
    })
}

/// `error.error(name=None, message="")`: `{}`, or raise exception `name` (Salt's
/// `salt.utils.error.raise_error`: a Salt exception, a Python builtin one, else
/// `SaltException`).
fn error(a: &Args) -> Answer {
    let Some(name) = a.text("name").filter(|n| !n.is_empty()) else {
        return Ok(json!({}));
    };
    let message = a.text("message").unwrap_or_default();
    let exc = if SALT_EXCEPTIONS.contains(&name.as_str()) {
        format!("salt.exceptions.{name}")
    } else if PY_EXCEPTIONS.contains(&name.as_str()) {
        name
    } else {
        "salt.exceptions.SaltException".to_owned()
    };
    Err(Fail::Raise(exc, message))
}

/// Exceptions of `salt.exceptions` a caller may name.
const SALT_EXCEPTIONS: &[&str] = &[
    "SaltException",
    "SaltClientError",
    "SaltMasterError",
    "SaltSystemExit",
    "SaltInvocationError",
    "CommandExecutionError",
    "CommandNotFoundError",
    "AuthenticationError",
    "AuthorizationError",
    "EauthAuthenticationError",
    "TokenAuthenticationError",
    "UserAuthenticationError",
    "SaltRenderError",
    "SaltReqTimeoutError",
    "TimedProcTimeoutError",
    "MinionError",
    "FileserverConfigError",
    "SaltCacheError",
    "NotImplemented",
    "TimeoutError",
    "SaltRunnerError",
    "SaltWheelError",
];

/// Python builtin exceptions a caller may name.
const PY_EXCEPTIONS: &[&str] = &[
    "Exception",
    "ValueError",
    "TypeError",
    "KeyError",
    "IndexError",
    "RuntimeError",
    "OSError",
    "IOError",
    "AttributeError",
    "NotImplementedError",
    "ZeroDivisionError",
    "AssertionError",
    "LookupError",
    "PermissionError",
    "FileNotFoundError",
];

#[cfg(test)]
mod tests;
