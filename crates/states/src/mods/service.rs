//! `service.running`, `dead`, `enabled`, `disabled`, `mod_watch` (`salt/states/service.py`)
//! on systemd, through `salt-execmods`' `service` module. Like Salt, a system with
//! `systemctl` but not booted with systemd is "OFFLINE mode" for `running`/`dead`.

use rmpv::Value;
use salt_execmods::{Args, service as ex};

use super::ret::{self, comment, fail, would};
use crate::engine::Ctx;
use crate::{get_str, map, set, truthy};
use salt_compat::map_get;

type R = Result<Value, String>;

fn offline() -> bool {
    !std::path::Path::new("/run/systemd/system").exists() && salt_execmods::run::which("systemctl")
}

fn exec(fun: &str, name: &str, low: &Value) -> R {
    let mut kw = Vec::new();
    if let Some(v) = map_get(low, "no_block") {
        kw.push(("no_block".to_owned(), v.clone()));
    }
    let pos = [Value::from(name)];
    ex::call(fun, &Args::new(&format!("service.{fun}"), &pos, &kw))
}

fn ok(v: R) -> Result<bool, String> {
    v.map(|v| truthy(&v))
}

fn upd(r: &mut Value, other: Value) {
    if let Value::Map(m) = other {
        for (k, v) in m {
            if let Some(k) = k.as_str() {
                set(r, k, v);
            }
        }
    }
}

/// `_enable`/`_disable`: `on` chooses which.
fn toggle(
    ctx: &Ctx<'_>,
    name: &str,
    on: bool,
    started: Option<bool>,
    result: bool,
    low: &Value,
) -> Value {
    let mut r = Value::Map(vec![]);
    let avail = match ex::available(name) {
        Ok(a) => a,
        Err(e) => return fail(r, e),
    };
    if !avail {
        set(&mut r, "result", Value::Boolean(!on));
        comment(&mut r, format!("The named service {name} is not available"));
        return r;
    }
    set(&mut r, "result", Value::Boolean(result));
    let (word, undo) = if on {
        ("enabled", "start")
    } else {
        ("disabled", "not start")
    };
    let before = match ex::enabled(name) {
        Ok(e) => e == on,
        Err(e) => return fail(r, e),
    };
    let tail = |s: Option<bool>| match s {
        Some(true) => "is running".to_owned(),
        None => "is in the desired state".to_owned(),
        Some(false) => "is dead".to_owned(),
    };
    if before {
        if started.is_none() {
            set(&mut r, "changes", Value::Map(vec![]));
        }
        comment(
            &mut r,
            format!("Service {name} is already {word}, and {}", tail(started)),
        );
        return r;
    }
    if ctx.opts.test {
        return would(r, format!("Service {name} set to be {word}"));
    }
    let done = exec(if on { "enable" } else { "disable" }, name, low);
    let err = match done {
        Ok(v) if truthy(&v) => {
            let after = ex::enabled(name).map(|e| e == on).unwrap_or(false);
            let ch = if after != before {
                map(vec![(name, Value::Boolean(true))])
            } else {
                Value::Map(vec![])
            };
            set(&mut r, "changes", ch);
            comment(
                &mut r,
                format!("Service {name} has been {word}, and {}", tail(started)),
            );
            return r;
        }
        Ok(_) => None,
        Err(e) => Some(e),
    };
    set(&mut r, "result", Value::Boolean(false));
    let c = match (on, started) {
        (true, Some(true)) => format!(
            "Failed when setting service {name} to start at boot, but the service is running"
        ),
        (true, None) => format!(
            "Failed when setting service {name} to start at boot, but the service was already running"
        ),
        (true, Some(false)) => {
            format!("Failed when setting service {name} to start at boot, and the service is dead")
        }
        (false, Some(true)) => {
            format!("Failed when setting service {name} to not start at boot, and is running")
        }
        (false, None) => format!(
            "Failed when setting service {name} to {undo} at boot, but the service was already running"
        ),
        (false, Some(false)) => {
            format!("Failed when setting service {name} to {undo} at boot, and the service is dead")
        }
    };
    let c = match err {
        Some(e) if on => format!("{c}. Additional information follows:\n\n{e}"),
        _ => c,
    };
    comment(&mut r, c);
    r
}

fn enable_opt(low: &Value) -> Option<bool> {
    map_get(low, "enable").filter(|v| !v.is_nil()).map(truthy)
}

fn running_or_dead(ctx: &Ctx<'_>, name: &str, low: &Value, run: bool) -> R {
    let mut r = ret::new(name, true, "");
    for k in ["unmask", "unmask_runtime", "sig", "timeout", "init_delay"] {
        if map_get(low, k).is_some_and(truthy) {
            let msg = format!("service option '{k}' is not supported by salt-rs");
            return Ok(fail(r, msg));
        }
    }
    let enable = enable_opt(low);
    if offline() {
        comment(&mut r, "Running in OFFLINE mode. Nothing to do");
        return Ok(r);
    }
    if !ex::available(name)? {
        set(&mut r, "result", Value::Boolean(false));
        comment(&mut r, format!("The named service {name} is not available"));
        if ctx.opts.test {
            set(&mut r, "result", Value::Nil);
            let verb = if run { "started" } else { "stopped" };
            set(
                &mut r,
                "comment",
                Value::from(format!(
                    "Service {name} not present; if created in this state run, it would have been {verb}"
                )),
            );
        } else if !run {
            set(&mut r, "result", Value::Boolean(true));
        }
        return Ok(r);
    }
    let before = ex::status(name)?;
    let before_en = ex::enabled(name)?;
    if before == run {
        let c = if run {
            format!("The service {name} is already running")
        } else {
            format!("The service {name} is already dead")
        };
        comment(&mut r, c);
        if enable == Some(true) && !before_en {
            upd(&mut r, toggle(ctx, name, true, None, true, low));
        } else if enable == Some(false) && before_en {
            upd(&mut r, toggle(ctx, name, false, None, true, low));
        }
        return Ok(r);
    }
    if ctx.opts.test {
        set(&mut r, "result", Value::Nil);
        let c = if run {
            format!("Service {name} is set to start")
        } else {
            format!("Service {name} is set to be killed")
        };
        comment(&mut r, c);
        return Ok(r);
    }
    let done = if run {
        match exec("start", name, low) {
            Ok(v) => truthy(&v),
            Err(e) => {
                set(&mut r, "result", Value::Boolean(false));
                comment(&mut r, e);
                return Ok(r);
            }
        }
    } else {
        ok(exec("stop", name, low))?
    };
    if !done {
        set(&mut r, "result", Value::Boolean(false));
        let c = if run {
            format!("Service {name} failed to start")
        } else {
            format!("Service {name} failed to die")
        };
        comment(&mut r, c);
        let started = Some(!run);
        match enable {
            Some(true) => upd(&mut r, toggle(ctx, name, true, started, false, low)),
            Some(false) => upd(&mut r, toggle(ctx, name, false, started, false, low)),
            None => {}
        }
        return Ok(r);
    }
    let after = ex::status(name)?;
    let after_en = ex::enabled(name)?;
    if before_en != after_en || before != after {
        set(&mut r, "changes", map(vec![(name, Value::Boolean(after))]));
    }
    let good = after == run;
    let c = match (run, good) {
        (true, true) => format!("Started service {name}"),
        (true, false) => format!("Service {name} failed to start"),
        (false, true) => format!("Service {name} was killed"),
        (false, false) => format!("Service {name} failed to die"),
    };
    if !good {
        set(&mut r, "result", Value::Boolean(false));
    }
    comment(&mut r, c);
    match enable {
        Some(true) => upd(&mut r, toggle(ctx, name, true, Some(after), good, low)),
        Some(false) => upd(&mut r, toggle(ctx, name, false, Some(after), good, low)),
        None => {}
    }
    Ok(r)
}

fn mod_watch(ctx: &Ctx<'_>, name: &str, low: &Value) -> R {
    let mut r = ret::new(name, true, "");
    let sfun = get_str(low, "sfun").unwrap_or("");
    let (func, verb, past) = match sfun {
        "dead" => {
            if !ex::status(name)? {
                comment(&mut r, "Service is already stopped");
                return Ok(r);
            }
            ("stop", "stop", "stopped".to_owned())
        }
        "running" => {
            if map_get(low, "full_restart").is_some_and(truthy)
                || map_get(low, "force").is_some_and(truthy)
            {
                set(&mut r, "result", Value::Boolean(false));
                comment(
                    &mut r,
                    "service mod_watch: 'full_restart'/'force' are not supported by salt-rs",
                );
                return Ok(r);
            }
            let (f, v) = if !ex::status(name)? {
                ("start", "start")
            } else if map_get(low, "reload").is_some_and(truthy) {
                ("reload", "reload")
            } else {
                ("restart", "restart")
            };
            (f, v, format!("{v}ed"))
        }
        other => {
            comment(
                &mut r,
                format!("Unable to trigger watch for service.{other}"),
            );
            set(&mut r, "result", Value::Boolean(false));
            return Ok(r);
        }
    };
    if ctx.opts.test {
        return Ok(would(r, format!("Service is set to be {past}")));
    }
    if verb == "start" {
        let _ = exec("stop", name, low);
    }
    let res = match exec(func, name, low) {
        Ok(v) => truthy(&v),
        Err(e) => {
            set(&mut r, "result", Value::Boolean(false));
            comment(&mut r, e);
            return Ok(r);
        }
    };
    set(&mut r, "changes", map(vec![(name, Value::Boolean(res))]));
    set(&mut r, "result", Value::Boolean(res));
    let c = if res {
        format!("Service {past}")
    } else {
        format!("Failed to {verb} the service")
    };
    comment(&mut r, c);
    Ok(r)
}

/// Dispatch `service.<fun>`.
pub fn call(ctx: &Ctx<'_>, fun: &str, low: &Value) -> Value {
    let name = super::name_of(low);
    let out = match fun {
        "running" => running_or_dead(ctx, &name, low, true),
        "dead" => running_or_dead(ctx, &name, low, false),
        "enabled" | "disabled" => {
            let on = fun == "enabled";
            let mut r = ret::new(name.as_str(), true, "");
            upd(&mut r, toggle(ctx, &name, on, None, true, low));
            if on
                && ctx.opts.test
                && get_str(&r, "comment")
                    == Some(&format!("The named service {name} is not available"))
            {
                set(&mut r, "result", Value::Nil);
                set(
                    &mut r,
                    "comment",
                    Value::from(format!(
                        "Service {name} not present; if created in this state run, it would have been enabled"
                    )),
                );
            }
            Ok(r)
        }
        "mod_watch" => mod_watch(ctx, &name, low),
        other => Err(format!("'service.{other}' is not available.")),
    };
    out.unwrap_or_else(|e| {
        let mut r = ret::new(name.as_str(), true, "");
        set(&mut r, "result", Value::Boolean(false));
        comment(&mut r, e);
        r
    })
}
