//! Execution modules: the functions a job can call, with Python-minion return shapes.
//!
//! Each function binds Salt-style arguments (positional values, keyword maps marked
//! `"__kwarg__": True`, and `key=value` strings) the way `salt.minion.load_args_and_kwargs`
//! does, then returns a [`CallOutcome`] whose `retcode`/`success`/`out` follow
//! `Minion._thread_return`. Shell commands run through `tokio::process`, so a long
//! `cmd.run` never blocks the runtime.

use std::sync::Arc;
use std::time::Duration;

use rmpv::Value;

use crate::grains::SALT_VERSION;
use crate::matcher::{fnmatch, map_lookup, traverse};

/// Salt's `EX_GENERIC`, the retcode of a failed function call.
pub const EX_GENERIC: i64 = 1;

/// Every function this minion provides, sorted (the `sys.list_functions` answer).
pub const FUNCTIONS: &[&str] = &[
    "cmd.run",
    "cmd.run_all",
    "cmd.run_stdout",
    "cmd.retcode",
    "grains.get",
    "grains.item",
    "grains.items",
    "grains.ls",
    "saltutil.find_job",
    "saltutil.kill_all_jobs",
    "saltutil.kill_job",
    "saltutil.running",
    "saltutil.signal_job",
    "saltutil.term_all_jobs",
    "saltutil.term_job",
    "sys.list_functions",
    "sys.list_modules",
    "test.arg",
    "test.echo",
    "test.ping",
    "test.sleep",
    "test.true",
    "test.false",
    "test.version",
];

/// What a function needs from the minion besides its arguments.
#[derive(Debug, Clone)]
pub struct ExecContext {
    /// The minion id.
    pub id: String,
    /// The grains map.
    pub grains: Arc<Value>,
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
    pub(crate) fn ok(ret: Value) -> Self {
        Self {
            ret,
            retcode: 0,
            out: None,
        }
    }

    pub(crate) fn error(msg: String) -> Self {
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
                Value::Map(entries)
                    if map_lookup(a, "__kwarg__") == Some(&Value::Boolean(true)) =>
                {
                    for (k, v) in entries {
                        let Some(k) = k.as_str() else { continue };
                        if k != "__kwarg__" {
                            out.set(k, v.clone());
                        }
                    }
                }
                Value::String(s) => match s.as_str().and_then(parse_kwarg) {
                    Some((k, v)) => out.set(k, yamlify(v)),
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

    fn kw(&self, k: &str) -> Option<&Value> {
        self.kwargs.iter().find(|(key, _)| key == k).map(|(_, v)| v)
    }

    /// Bind parameter `name` at position `pos`: positional first, then keyword.
    pub(crate) fn param(&self, pos: usize, name: &str) -> Option<&Value> {
        self.args.get(pos).or_else(|| self.kw(name))
    }
}

/// Salt's `KWARG_REGEX` `^([^\d\W][\w.-]*)=(?!=)(.*)$`.
fn parse_kwarg(s: &str) -> Option<(&str, &str)> {
    let (k, v) = s.split_once('=')?;
    if v.starts_with('=') || s.contains('\n') {
        return None;
    }
    let mut chars = k.chars();
    let first = chars.next()?;
    if !(first.is_alphabetic() || first == '_') {
        return None;
    }
    if !chars.all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '-') {
        return None;
    }
    Some((k, v))
}

/// A small subset of Salt's `yamlify_arg` for `key=value` strings: ints, floats,
/// booleans and null become typed; everything else stays a string.
fn yamlify(v: &str) -> Value {
    match v {
        "True" | "true" => Value::Boolean(true),
        "False" | "false" => Value::Boolean(false),
        "None" | "null" | "~" => Value::Nil,
        _ => {
            if let Ok(i) = v.parse::<i64>() {
                Value::from(i)
            } else if v.contains('.') && v.parse::<f64>().is_ok_and(f64::is_finite) {
                Value::F64(v.parse::<f64>().unwrap_or_default())
            } else {
                Value::from(v)
            }
        }
    }
}

/// Python `str()`-like rendering for values used as text (command lines, grain keys).
pub(crate) fn text(v: &Value) -> String {
    crate::matcher::py_str(v)
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

/// Run function `fun` with publish args `raw_args`; `job` is the publish load whose keys
/// become `__pub_*` keyword arguments for functions that take `**kwargs`.
pub async fn call(fun: &str, raw_args: &[Value], job: &Value, ctx: &ExecContext) -> CallOutcome {
    let args = Args::parse(raw_args);
    let short = fun.rsplit('.').next().unwrap_or(fun);
    match fun {
        "test.ping" | "test.version" | "test.true" | "test.false" | "grains.items"
        | "grains.ls" => {
            if let Some(e) = unexpected_kwargs(fun, &args, &[]) {
                return e;
            }
            if !args.args.is_empty() {
                return too_many(fun, short, 0, args.args.len());
            }
            match fun {
                "test.ping" => CallOutcome::ok(Value::Boolean(true)),
                "test.true" => CallOutcome::ok(Value::Boolean(true)),
                "test.false" => CallOutcome::ok(Value::Boolean(false)),
                "test.version" => CallOutcome::ok(Value::from(SALT_VERSION)),
                "grains.ls" => CallOutcome::ok(grain_keys(&ctx.grains)),
                _ => CallOutcome {
                    ret: (*ctx.grains).clone(),
                    retcode: 0,
                    out: Some("nested"),
                },
            }
        }
        "test.echo" => {
            if let Some(e) = unexpected_kwargs(fun, &args, &["text"]) {
                return e;
            }
            if args.args.len() > 1 {
                return too_many(fun, short, 1, args.args.len());
            }
            match args.param(0, "text") {
                Some(v) => CallOutcome::ok(v.clone()),
                None => missing(fun, short, "text"),
            }
        }
        "test.sleep" => {
            if let Some(e) = unexpected_kwargs(fun, &args, &["length"]) {
                return e;
            }
            if args.args.len() > 1 {
                return too_many(fun, short, 1, args.args.len());
            }
            let Some(len) = args.param(0, "length") else {
                return missing(fun, short, "length");
            };
            let secs = match len {
                Value::Integer(i) => i.as_i64().unwrap_or(0),
                Value::F64(f) => *f as i64,
                Value::F32(f) => *f as i64,
                other => match text(other).trim().parse::<i64>() {
                    Ok(i) => i,
                    Err(_) => {
                        return CallOutcome::error(format!(
                            "The minion function caused an exception: ValueError: invalid literal for int() with base 10: '{}'",
                            text(other)
                        ));
                    }
                },
            };
            tokio::time::sleep(Duration::from_secs(secs.max(0).unsigned_abs())).await;
            CallOutcome::ok(Value::Boolean(true))
        }
        "test.arg" => {
            let mut kwargs: Vec<(Value, Value)> = args
                .kwargs
                .iter()
                .map(|(k, v)| (Value::from(k.as_str()), v.clone()))
                .collect();
            kwargs.extend(pub_kwargs(job));
            CallOutcome::ok(Value::Map(vec![
                (Value::from("args"), Value::Array(args.args.clone())),
                (Value::from("kwargs"), Value::Map(kwargs)),
            ]))
        }
        "cmd.run" | "cmd.run_all" | "cmd.run_stdout" | "cmd.retcode" => {
            crate::cmdmod::call(fun, &args).await
        }
        "grains.get" => {
            if let Some(e) =
                unexpected_kwargs(fun, &args, &["key", "default", "delimiter", "ordered"])
            {
                return e;
            }
            let Some(key) = args.param(0, "key") else {
                return missing(fun, short, "key");
            };
            let default = args.param(1, "default").cloned().unwrap_or(Value::from(""));
            let delim = args.param(2, "delimiter").map_or(":".to_owned(), text);
            let found = traverse(&ctx.grains, &text(key), &delim).cloned();
            CallOutcome::ok(found.unwrap_or(default))
        }
        "grains.item" => {
            let mut out = Vec::new();
            for k in &args.args {
                let k = text(k);
                if let Some(v) = traverse(&ctx.grains, &k, ":") {
                    out.push((Value::from(k), v.clone()));
                }
            }
            CallOutcome {
                ret: Value::Map(out),
                retcode: 0,
                out: Some("nested"),
            }
        }
        "saltutil.running"
        | "saltutil.find_job"
        | "saltutil.signal_job"
        | "saltutil.term_job"
        | "saltutil.kill_job"
        | "saltutil.term_all_jobs"
        | "saltutil.kill_all_jobs" => {
            let current = map_lookup(job, "jid").map(text);
            crate::running::call(fun, &args, current.as_deref())
        }
        "sys.list_functions" => CallOutcome::ok(list_functions(&args.args)),
        "sys.list_modules" => CallOutcome::ok(Value::Array(
            list_modules().into_iter().map(Value::from).collect(),
        )),
        // Salt's `saltutil.sync_*` copy `_modules`, `_states`, `_grains`... from the file
        // server and load them: Python code this minion cannot run. Said, not pretended.
        f if f.starts_with("saltutil.sync_") => CallOutcome::error(format!(
            "ERROR: {f}: salt-rs minions do not load custom Python modules (_modules, _states, \
             _grains, ...); nothing was synced"
        )),
        // Salt's words first (tools match them), then what there is.
        _ => CallOutcome::error(format!(
            "'{fun}' is not available. This salt-rs minion has the modules {} \
             (sys.list_functions lists their functions).",
            list_modules().join(", ")
        )),
    }
}

/// `sys.list_modules`: the modules of [`FUNCTIONS`], sorted.
fn list_modules() -> Vec<&'static str> {
    let mut mods: Vec<&str> = FUNCTIONS
        .iter()
        .filter_map(|f| f.split_once('.').map(|(m, _)| m))
        .collect();
    mods.sort_unstable();
    mods.dedup();
    mods
}

fn grain_keys(grains: &Value) -> Value {
    let mut keys: Vec<String> = match grains {
        Value::Map(entries) => entries
            .iter()
            .filter_map(|(k, _)| k.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    keys.sort();
    Value::Array(keys.into_iter().map(Value::from).collect())
}

/// The `__pub_<key>` keyword arguments Salt passes to `**kwargs` functions.
fn pub_kwargs(job: &Value) -> Vec<(Value, Value)> {
    match job {
        Value::Map(entries) => entries
            .iter()
            .filter_map(|(k, v)| {
                k.as_str()
                    .map(|k| (Value::from(format!("__pub_{k}")), v.clone()))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// `sys.list_functions`: all functions, or those of the named modules / globs.
pub fn list_functions(filters: &[Value]) -> Value {
    let mut names: Vec<&str> = if filters.is_empty() {
        FUNCTIONS.to_vec()
    } else {
        FUNCTIONS
            .iter()
            .copied()
            .filter(|f| {
                filters.iter().any(|m| {
                    let m = text(m);
                    if m.contains('*') || m.contains('.') {
                        fnmatch(f, &m)
                    } else {
                        f.starts_with(&format!("{m}."))
                    }
                })
            })
            .collect()
    };
    names.sort_unstable();
    Value::Array(names.into_iter().map(Value::from).collect())
}

pub(crate) fn exit_code(status: std::process::ExitStatus) -> i64 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => i64::from(c),
        (None, Some(sig)) => -i64::from(sig),
        (None, None) => 1,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ctx() -> ExecContext {
        ExecContext {
            id: "m1".into(),
            grains: Arc::new(Value::Map(vec![
                (Value::from("id"), Value::from("m1")),
                (Value::from("os"), Value::from("Debian")),
                (
                    Value::from("pkg"),
                    Value::Map(vec![(Value::from("apache"), Value::from("apache2"))]),
                ),
            ])),
        }
    }

    fn kw(pairs: &[(&str, Value)]) -> Value {
        let mut m: Vec<(Value, Value)> = pairs
            .iter()
            .map(|(k, v)| (Value::from(*k), v.clone()))
            .collect();
        m.push((Value::from("__kwarg__"), Value::Boolean(true)));
        Value::Map(m)
    }

    async fn run(fun: &str, args: Vec<Value>) -> CallOutcome {
        call(fun, &args, &Value::Map(vec![]), &ctx()).await
    }

    #[tokio::test]
    async fn test_module_functions() {
        assert_eq!(
            run("test.ping", vec![]).await,
            CallOutcome::ok(Value::Boolean(true))
        );
        assert_eq!(
            run("test.version", vec![]).await.ret,
            Value::from("3007.17")
        );
        assert_eq!(
            run("test.echo", vec![Value::from("hi")]).await.ret,
            Value::from("hi")
        );
        assert_eq!(
            run("test.echo", vec![kw(&[("text", Value::from("kw"))])])
                .await
                .ret,
            Value::from("kw")
        );
        let e = run("test.echo", vec![]).await;
        assert_eq!(e.retcode, 1);
        assert_eq!(
            e.ret,
            Value::from(
                "Passed invalid arguments to test.echo: echo() missing 1 required positional argument: 'text'\n"
            )
        );
        let e = run("test.ping", vec![Value::from(1)]).await;
        assert!(!e.success());
        assert_eq!(
            run("test.sleep", vec![Value::from(0)]).await.ret,
            Value::Boolean(true)
        );
        assert_eq!(
            run("test.sleep", vec![Value::from("0")]).await.ret,
            Value::Boolean(true)
        );
    }

    #[tokio::test]
    async fn test_arg_shape_matches_python() {
        let job = Value::Map(vec![
            (Value::from("fun"), Value::from("test.arg")),
            (Value::from("jid"), Value::from("123")),
        ]);
        let out = call(
            "test.arg",
            &[
                Value::from(1),
                Value::from("a=b"),
                kw(&[("x", Value::from(2))]),
            ],
            &job,
            &ctx(),
        )
        .await;
        assert_eq!(
            out.ret,
            Value::Map(vec![
                (Value::from("args"), Value::Array(vec![Value::from(1)])),
                (
                    Value::from("kwargs"),
                    Value::Map(vec![
                        (Value::from("a"), Value::from("b")),
                        (Value::from("x"), Value::from(2)),
                        (Value::from("__pub_fun"), Value::from("test.arg")),
                        (Value::from("__pub_jid"), Value::from("123")),
                    ])
                ),
            ])
        );
        assert!(out.success());
    }

    #[test]
    fn kwarg_strings() {
        assert_eq!(parse_kwarg("a=b"), Some(("a", "b")));
        assert_eq!(parse_kwarg("a==b"), None);
        assert_eq!(parse_kwarg("1a=b"), None);
        assert_eq!(parse_kwarg("echo a=b"), None);
        assert_eq!(parse_kwarg("x.y-z=1"), Some(("x.y-z", "1")));
        let a = Args::parse(&[
            Value::from("n=3"),
            Value::from("t=True"),
            Value::from("plain"),
        ]);
        assert_eq!(a.args, vec![Value::from("plain")]);
        assert_eq!(
            a.kwargs,
            vec![
                ("n".into(), Value::from(3)),
                ("t".into(), Value::Boolean(true))
            ]
        );
    }

    #[tokio::test]
    async fn cmd_run_combines_and_strips() {
        let out = run("cmd.run", vec![Value::from("echo hi; echo err 1>&2")]).await;
        assert_eq!(out.ret, Value::from("hi\nerr"));
        assert_eq!(out.retcode, 0);
        let out = run("cmd.run", vec![Value::from("echo bad; exit 3")]).await;
        assert_eq!(out.ret, Value::from("bad"));
        assert_eq!(out.retcode, 3);
        assert!(!out.success());
        let out = run(
            "cmd.run",
            vec![Value::from("pwd"), kw(&[("cwd", Value::from("/tmp"))])],
        )
        .await;
        assert_eq!(out.ret, Value::from("/tmp"));
    }

    #[tokio::test]
    async fn cmd_run_all_shape() {
        let out = run(
            "cmd.run_all",
            vec![Value::from("echo out; echo err >&2; exit 2")],
        )
        .await;
        let Value::Map(m) = &out.ret else {
            panic!("not a map")
        };
        let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str().unwrap()).collect();
        assert_eq!(keys, ["pid", "retcode", "stdout", "stderr"]);
        assert_eq!(map_lookup(&out.ret, "retcode"), Some(&Value::from(2)));
        assert_eq!(map_lookup(&out.ret, "stdout"), Some(&Value::from("out")));
        assert_eq!(map_lookup(&out.ret, "stderr"), Some(&Value::from("err")));
        assert!(map_lookup(&out.ret, "pid").and_then(Value::as_u64).unwrap() > 0);
        assert_eq!(out.retcode, 2);
    }

    #[tokio::test]
    async fn grains_functions() {
        assert_eq!(
            run("grains.get", vec![Value::from("os")]).await.ret,
            Value::from("Debian")
        );
        assert_eq!(
            run("grains.get", vec![Value::from("pkg:apache")]).await.ret,
            Value::from("apache2")
        );
        assert_eq!(
            run("grains.get", vec![Value::from("nope")]).await.ret,
            Value::from("")
        );
        assert_eq!(
            run("grains.get", vec![Value::from("nope"), Value::from("d")])
                .await
                .ret,
            Value::from("d")
        );
        let items = run("grains.items", vec![]).await;
        assert_eq!(items.out, Some("nested"));
        assert_eq!(map_lookup(&items.ret, "id"), Some(&Value::from("m1")));
    }

    #[tokio::test]
    async fn unknown_function_and_listing() {
        let out = run("foo.bar", vec![]).await;
        let msg = out.ret.as_str().unwrap();
        assert!(msg.starts_with("'foo.bar' is not available. "), "{msg}");
        assert!(
            msg.contains(&format!(
                "has the modules {} (sys.list_functions",
                list_modules().join(", ")
            )),
            "{msg}"
        );
        assert_eq!(out.retcode, 1);
        assert_eq!(out.out, Some("nested"));
        let l = run("sys.list_functions", vec![Value::from("test")])
            .await
            .ret;
        let Value::Array(items) = l else { panic!() };
        assert!(items.contains(&Value::from("test.ping")));
        assert!(!items.contains(&Value::from("cmd.run")));
        let all = list_functions(&[]);
        assert_eq!(all.as_array().unwrap().len(), FUNCTIONS.len());
        let globbed = list_functions(&[Value::from("cmd.run*")]);
        assert_eq!(globbed.as_array().unwrap().len(), 3);
    }
}
