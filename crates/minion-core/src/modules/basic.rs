//! `test.*`, `grains.*`, `sys.*`, `cmd.*` and the job-control `saltutil.*` functions.

use std::sync::Arc;
use std::time::Duration;

use rmpv::Value;

use super::{BoxFut, Call, CallOutcome, Func, Run, Spec, list_functions, list_modules, text};
use crate::grains::SALT_VERSION;
use crate::matcher::traverse;
use salt_compat::map_get;

const fn f(name: &'static str, spec: Spec, run: Run) -> Func {
    Func { name, spec, run }
}

/// The functions of this file.
pub const FUNCS: &[Func] = &[
    f("cmd.run", Spec::ANY, Run::Async(cmd)),
    f("cmd.run_all", Spec::ANY, Run::Async(cmd)),
    f("cmd.run_stdout", Spec::ANY, Run::Async(cmd)),
    f("cmd.retcode", Spec::ANY, Run::Async(cmd)),
    f(
        "grains.get",
        Spec::of(&["key", "default", "delimiter", "ordered"], 1),
        Run::Inline(grains_get),
    ),
    f("grains.item", Spec::ANY, Run::Inline(grains_item)),
    f("grains.items", Spec::NONE, Run::Inline(grains_items)),
    f("grains.ls", Spec::NONE, Run::Inline(grains_ls)),
    f("saltutil.find_job", Spec::ANY, Run::Inline(job_control)),
    f(
        "saltutil.kill_all_jobs",
        Spec::ANY,
        Run::Inline(job_control),
    ),
    f("saltutil.kill_job", Spec::ANY, Run::Inline(job_control)),
    f("saltutil.running", Spec::ANY, Run::Inline(job_control)),
    f("saltutil.signal_job", Spec::ANY, Run::Inline(job_control)),
    f(
        "saltutil.term_all_jobs",
        Spec::ANY,
        Run::Inline(job_control),
    ),
    f("saltutil.term_job", Spec::ANY, Run::Inline(job_control)),
    f(
        "sys.list_functions",
        Spec::ANY,
        Run::Inline(sys_list_functions),
    ),
    f("sys.list_modules", Spec::ANY, Run::Inline(sys_list_modules)),
    f("test.arg", Spec::ANY, Run::Inline(test_arg)),
    f("test.echo", Spec::of(&["text"], 1), Run::Inline(test_echo)),
    f(
        "test.ping",
        Spec::NONE,
        Run::Inline(|_| CallOutcome::ok(true.into())),
    ),
    f(
        "test.sleep",
        Spec::of(&["length"], 1),
        Run::Async(test_sleep),
    ),
    f(
        "test.true",
        Spec::NONE,
        Run::Inline(|_| CallOutcome::ok(true.into())),
    ),
    f(
        "test.false",
        Spec::NONE,
        Run::Inline(|_| CallOutcome::ok(false.into())),
    ),
    f(
        "test.version",
        Spec::NONE,
        Run::Inline(|_| CallOutcome::ok(SALT_VERSION.into())),
    ),
];

fn cmd(c: Arc<Call>) -> BoxFut {
    Box::pin(async move { crate::cmdmod::call(&c.fun, &c.args).await })
}

fn nested(ret: Value) -> CallOutcome {
    CallOutcome {
        ret,
        retcode: 0,
        out: Some("nested"),
    }
}

fn grains_get(c: &Call) -> CallOutcome {
    let key = c.args.param(0, "key").map(text).unwrap_or_default();
    let default = c
        .args
        .param(1, "default")
        .cloned()
        .unwrap_or(Value::from(""));
    let delim = c.args.param(2, "delimiter").map_or(":".to_owned(), text);
    let found = traverse(&c.ctx.grains, &key, &delim).cloned();
    CallOutcome::ok(found.unwrap_or(default))
}

/// `grains.item(*args, **kwargs)`: each key traversed with `delimiter` (`:`), `default`
/// (`""`) where it is missing; `sanitize=True` is refused by name.
fn grains_item(c: &Call) -> CallOutcome {
    if c.args.kw("sanitize").is_some_and(salt_compat::py_truthy) {
        return CallOutcome::error(
            "ERROR: grains.item: argument 'sanitize' is not supported by salt-rs".to_owned(),
        );
    }
    let default = c.args.kw("default").cloned().unwrap_or(Value::from(""));
    let delim = c.args.kw("delimiter").map_or_else(|| ":".to_owned(), text);
    let mut out = Vec::new();
    for k in &c.args.args {
        let k = text(k);
        let v = traverse(&c.ctx.grains, &k, &delim).cloned();
        out.push((Value::from(k), v.unwrap_or_else(|| default.clone())));
    }
    nested(Value::Map(out))
}

fn grains_items(c: &Call) -> CallOutcome {
    nested((*c.ctx.grains).clone())
}

fn grains_ls(c: &Call) -> CallOutcome {
    let mut keys: Vec<String> = match &*c.ctx.grains {
        Value::Map(entries) => entries
            .iter()
            .filter_map(|(k, _)| k.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    keys.sort();
    CallOutcome::ok(Value::Array(keys.into_iter().map(Value::from).collect()))
}

fn job_control(c: &Call) -> CallOutcome {
    let current = map_get(&c.job, "jid").map(text);
    crate::running::call(&c.fun, &c.args, current.as_deref())
}

fn sys_list_functions(c: &Call) -> CallOutcome {
    CallOutcome::ok(list_functions(&c.args.args))
}

fn sys_list_modules(_: &Call) -> CallOutcome {
    CallOutcome::ok(Value::Array(
        list_modules().into_iter().map(Value::from).collect(),
    ))
}

fn test_echo(c: &Call) -> CallOutcome {
    match c.args.param(0, "text") {
        Some(v) => CallOutcome::ok(v.clone()),
        None => c.missing("text"),
    }
}

fn test_sleep(c: Arc<Call>) -> BoxFut {
    Box::pin(async move {
        let Some(len) = c.args.param(0, "length") else {
            return c.missing("length");
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
    })
}

fn test_arg(c: &Call) -> CallOutcome {
    let mut kwargs: Vec<(Value, Value)> = c
        .args
        .kwargs
        .iter()
        .map(|(k, v)| (Value::from(k.as_str()), v.clone()))
        .collect();
    kwargs.extend(pub_kwargs(&c.job));
    CallOutcome::ok(Value::Map(vec![
        (Value::from("args"), Value::Array(c.args.args.clone())),
        (Value::from("kwargs"), Value::Map(kwargs)),
    ]))
}

/// The `__pub_<key>` keyword arguments Salt passes to `**kwargs` functions.
pub(crate) fn pub_kwargs(job: &Value) -> Vec<(Value, Value)> {
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
