//! `module.run` (and its alias `module.mod_watch`), `module.wait`/`module.watch`
//! (`salt/states/module.py`), on this minion's execution modules (`Opts::salt`).
//!
//! Salt 3007 picks the syntax from the arguments (`use_superseded` no longer matters): any
//! argument without a dot means the old syntax (`name: test.echo` with the function's own
//! parameter names, `m_name` etc. for the clashing ones, `args`/`kwargs` for `*args`/
//! `**kwargs`), else each dotted argument is a function with its argument list.

use rmpv::Value;

use super::args::Args;
use crate::compile::STATE_INTERNAL_KEYWORDS;
use crate::engine::Ctx;
use crate::{empty, map, set};
use salt_compat::{map_get, py_str};
use salt_render::ArgSpec;

/// `module.run(**kwargs)`: no parameters of its own.
pub const MODULE_RUN: Args = Args {
    honoured: &[],
    refused: &[],
    apply_only: &[],
};

/// `module.wait(name, **kwargs)`.
pub const MODULE_WAIT: Args = Args {
    honoured: &["name"],
    refused: &[],
    apply_only: &[],
};

/// Dispatch `module.<fun>`.
pub fn call(ctx: &Ctx<'_>, fun: &str, low: &Value) -> Value {
    match fun {
        "run" | "mod_watch" => run(ctx, low),
        _ => map(vec![
            ("name", map_get(low, "name").cloned().unwrap_or(Value::Nil)),
            ("changes", empty()),
            ("result", Value::Boolean(true)),
            ("comment", Value::from("")),
        ]),
    }
}

/// The keyword arguments the state system passes (`format_call` with `**kwargs`); under
/// `mod_watch` Salt's low chunk also has `sfun` and `__reqs__` (the requisites), which
/// `module.run` lists in its `name`.
fn kwargs_of(low: &Value) -> Vec<(String, Value)> {
    let Value::Map(m) = low else {
        return Vec::new();
    };
    let mut out: Vec<(String, Value)> = m
        .iter()
        .filter_map(|(k, v)| {
            let k = k.as_str()?;
            (!k.starts_with("__") && !STATE_INTERNAL_KEYWORDS.contains(&k))
                .then(|| (k.to_owned(), v.clone()))
        })
        .collect();
    if out.iter().any(|(k, _)| k == "sfun") {
        out.push(("__reqs__".to_owned(), Value::Map(Vec::new())));
    }
    out
}

fn has(ctx: &Ctx<'_>, fun: &str) -> bool {
    ctx.opts.salt.0.as_ref().is_some_and(|h| h.has(fun))
}

fn argspec(ctx: &Ctx<'_>, fun: &str) -> Option<ArgSpec> {
    ctx.opts.salt.0.as_ref().and_then(|h| h.argspec(fun))
}

fn invoke(
    ctx: &Ctx<'_>,
    fun: &str,
    args: &[Value],
    kw: &[(String, Value)],
) -> Result<Value, String> {
    match ctx.opts.salt.0.as_ref().and_then(|h| h.call(fun, args, kw)) {
        Some(r) => r,
        None => Err(format!("'{fun}' is not available.")),
    }
}

/// `module.run`.
fn run(ctx: &Ctx<'_>, low: &Value) -> Value {
    let kwargs = kwargs_of(low);
    let keys: Vec<&str> = kwargs
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !["name", "__reqs__", "sfun"].contains(k))
        .collect();
    let legacy = keys.iter().any(|k| !k.contains('.')) || (keys.is_empty() && !kwargs.is_empty());
    if legacy {
        legacy_run(ctx, low, kwargs)
    } else {
        new_run(ctx, kwargs)
    }
}

/// `_get_result`: a bool as such; a dict false when any `result: False` or nonzero
/// `retcode` is in it (at any depth).
fn get_result(v: &Value) -> bool {
    match v {
        Value::Boolean(b) => *b,
        Value::Map(m) => m.iter().all(|(k, val)| {
            let k = k.as_str();
            !(k == Some("result") && *val == Value::Boolean(false)
                || k == Some("retcode") && val.as_i64() != Some(0)
                || matches!(val, Value::Map(_)) && !get_result(val))
        }),
        _ => true,
    }
}

/// Positional and keyword arguments.
type Bound = (Vec<Value>, Vec<(String, Value)>);

/// `salt.utils.functools.call_function`: the argument list of a new-style entry split into
/// positional and keyword arguments, required ones checked by the signature.
fn bind_new(spec: Option<ArgSpec>, items: &[Value]) -> Result<Bound, String> {
    let expected: &[&str] = spec.map_or(&[], |s| &s.params[..s.required]);
    let mut pos = Vec::new();
    let mut kw: Vec<(String, Value)> = Vec::new();
    let mut as_pos: Vec<(String, Value)> = Vec::new();
    for item in items {
        match item {
            Value::Map(m) => {
                for (k, v) in m {
                    let k = py_str(k);
                    let slot = if expected.contains(&k.as_str()) {
                        &mut as_pos
                    } else {
                        &mut kw
                    };
                    match slot.iter_mut().find(|(e, _)| *e == k) {
                        Some(e) => e.1 = v.clone(),
                        None => slot.push((k, v.clone())),
                    }
                }
            }
            other => pos.push(other.clone()),
        }
    }
    for e in expected {
        if let Some((_, v)) = as_pos.iter().find(|(k, _)| k == e) {
            pos.push(v.clone());
        }
    }
    let passed = pos.len();
    if expected.len() > passed {
        let missing: Vec<&str> = expected[passed..]
            .iter()
            .copied()
            .filter(|a| !kw.iter().any(|(k, _)| k == a))
            .collect();
        if !missing.is_empty() {
            return Err(format!("Missing arguments: {}", missing.join(", ")));
        }
    }
    Ok((pos, kw))
}

/// `_run`: the new syntax.
fn new_run(ctx: &Ctx<'_>, mut kwargs: Vec<(String, Value)>) -> Value {
    kwargs.retain(|(k, _)| k != "name");
    let names: Vec<Value> = kwargs
        .iter()
        .map(|(k, _)| Value::from(k.as_str()))
        .collect();
    let mut r = map(vec![
        ("name", Value::Array(names)),
        ("changes", empty()),
        ("comment", Value::from("")),
        ("result", Value::Nil),
    ]);
    let functions: Vec<&(String, Value)> = kwargs.iter().filter(|(k, _)| k.contains('.')).collect();
    if functions.is_empty() {
        set(&mut r, "comment", Value::from("No function provided."));
        set(&mut r, "result", Value::Boolean(false));
        return r;
    }
    if kwargs.iter().any(|(k, v)| k == "returner" && !v.is_nil()) {
        set(
            &mut r,
            "comment",
            Value::from("module.run argument 'returner' is not supported by salt-rs"),
        );
        set(&mut r, "result", Value::Boolean(false));
        return r;
    }
    let short = |f: &str| f.split(':').next().unwrap_or(f).to_owned();
    let missing: Vec<String> = functions
        .iter()
        .map(|(f, _)| short(f))
        .filter(|f| !has(ctx, f))
        .collect();
    let tests: Vec<String> = if ctx.opts.test {
        functions
            .iter()
            .map(|(f, _)| short(f))
            .filter(|f| has(ctx, f))
            .collect()
    } else {
        Vec::new()
    };
    if !missing.is_empty() || !tests.is_empty() {
        // Salt's `plr=(len(x) > 1 or "")` writes `True` for more than one.
        let plr = |n: usize| if n > 1 { "True" } else { "" };
        let mut parts = Vec::new();
        if !missing.is_empty() {
            parts.push(format!(
                "Unavailable function{}: {}.",
                plr(missing.len()),
                missing.join(", ")
            ));
        }
        if !tests.is_empty() {
            parts.push(format!(
                "Function{} {} to be executed.",
                plr(tests.len()),
                tests.join(", ")
            ));
        }
        set(&mut r, "comment", Value::from(parts.join(" ")));
        if !missing.is_empty() {
            set(&mut r, "result", Value::Boolean(false));
        }
        return r;
    }
    let (mut failures, mut success) = (Vec::new(), Vec::new());
    let mut changes = empty();
    for (func, args) in functions {
        let fun = short(func);
        let items: Vec<Value> = match args {
            Value::Nil => Vec::new(),
            Value::Array(a) => a.clone(),
            other => vec![other.clone()],
        };
        let out = bind_new(argspec(ctx, &fun), &items).and_then(|(p, k)| invoke(ctx, &fun, &p, &k));
        match out {
            Err(e) => failures.push(format!("'{func}' failed: {e}")),
            Ok(ret) if !get_result(&ret) => {
                if let Value::Map(_) = ret {
                    let c = map_get(&ret, "comment")
                        .map_or_else(|| "(error message N/A)".to_owned(), py_str);
                    failures.push(format!("'{func}' failed: {c}"));
                }
                if ret == Value::Boolean(false) {
                    failures.push(format!("'{func}': False"));
                }
            }
            Ok(ret) => {
                let shown = match &ret {
                    Value::Map(_) => {
                        map_get(&ret, "comment").map_or_else(|| "Success".to_owned(), py_str)
                    }
                    other => py_str(other),
                };
                success.push(format!("{func}: {shown}"));
                set(&mut changes, func, ret);
            }
        }
    }
    set(&mut r, "changes", changes);
    let ok = failures.is_empty();
    failures.extend(success);
    set(&mut r, "comment", Value::from(failures.join(", ")));
    set(&mut r, "result", Value::Boolean(ok));
    r
}

/// The keyword an old-style `module.run` gives parameter `arg` as (`m_name` for `name`...).
fn renamed(arg: &str) -> String {
    match arg {
        "name" | "fun" | "names" | "state" | "saltenv" => format!("m_{arg}"),
        other => other.to_owned(),
    }
}

/// `_legacy_run`: the old syntax.
fn legacy_run(ctx: &Ctx<'_>, low: &Value, mut kwargs: Vec<(String, Value)>) -> Value {
    let name = py_str(map_get(low, "name").unwrap_or(&Value::Nil));
    kwargs.retain(|(k, _)| k != "name");
    let mut r = map(vec![
        ("name", Value::from(name.as_str())),
        ("changes", empty()),
        ("comment", Value::from("")),
        ("result", Value::Nil),
    ]);
    let done = |r: &mut Value, comment: String, result: bool| {
        set(r, "comment", Value::from(comment));
        set(r, "result", Value::Boolean(result));
    };
    if !has(ctx, &name) {
        done(
            &mut r,
            format!("Module function {name} is not available"),
            false,
        );
        return r;
    }
    if ctx.opts.test {
        set(
            &mut r,
            "comment",
            Value::from(format!("Module function {name} is set to execute")),
        );
        return r;
    }
    let Some(spec) = argspec(ctx, &name).filter(|s| !(s.params.is_empty() && s.varargs && s.varkw))
    else {
        done(
            &mut r,
            format!(
                "module.run: the old syntax (name: {name}) is not supported by salt-rs for {name} \
                 (its signature is not known here); use the new syntax (module.run: - {name}: [...])"
            ),
            false,
        );
        return r;
    };
    if kwargs.iter().any(|(k, _)| k == "returner") {
        done(
            &mut r,
            "module.run argument 'returner' is not supported by salt-rs".into(),
            false,
        );
        return r;
    }
    let take = |kw: &mut Vec<(String, Value)>, k: &str| -> Option<Value> {
        let i = kw.iter().position(|(e, _)| e == k)?;
        Some(kw.remove(i).1)
    };
    // The parameters given, by name (defaults not given are left to the function).
    let mut bound: Vec<(String, Value)> = Vec::new();
    let mut missing = Vec::new();
    for (i, arg) in spec.params.iter().enumerate() {
        let rarg = renamed(arg);
        let v = if i >= spec.required {
            // A defaulted parameter: its `m_` form, then its own name.
            let m = (rarg != *arg).then(|| take(&mut kwargs, &rarg)).flatten();
            take(&mut kwargs, arg).or(m)
        } else {
            take(&mut kwargs, &rarg)
        };
        match v {
            Some(v) => bound.push(((*arg).to_owned(), v)),
            None if i < spec.required => missing.push(rarg),
            None => {}
        }
    }
    if !missing.is_empty() {
        let list: String = missing.iter().map(|a| format!(" {a}")).collect();
        done(
            &mut r,
            format!("The following arguments are missing:{list}"),
            false,
        );
        return r;
    }
    let mut pos: Vec<Value> = Vec::new();
    if spec.varargs
        && let Some(v) = take(&mut kwargs, "args")
    {
        let Value::Array(items) = v else {
            done(&mut r, "'args' must be a list.".into(), false);
            return r;
        };
        if bound.len() != spec.params.len() {
            done(
                &mut r,
                format!(
                    "module.run: 'args' for {name} with defaulted parameters left out is not supported by salt-rs"
                ),
                false,
            );
            return r;
        }
        pos = bound.drain(..).map(|(_, v)| v).collect();
        pos.extend(items);
    }
    if spec.varkw
        && let Some(v) = take(&mut kwargs, "kwargs")
    {
        let Value::Map(m) = v else {
            done(&mut r, "'kwargs' must be a dict.".into(), false);
            return r;
        };
        bound.extend(m.into_iter().map(|(k, v)| (py_str(&k), v)));
    }
    match invoke(ctx, &name, &pos, &bound) {
        Err(e) => {
            done(
                &mut r,
                format!("Module function {name} threw an exception. Exception: {e}"),
                false,
            );
        }
        Ok(mret) => {
            set(&mut r, "changes", map(vec![("ret", mret.clone())]));
            done(
                &mut r,
                format!("Module function {name} executed"),
                get_result(&mret),
            );
        }
    }
    r
}
