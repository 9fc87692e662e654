//! `cron.present`, `cron.absent` (`salt/states/cron.py`) on `salt-execmods`' `cron`
//! module: standard five-field jobs with Salt's identifier comments (`identifier`
//! defaults to the command); `cron.env_present`, `cron.env_absent`. `special` (`@daily`...)
//! and `cron.file` are not available.

use rmpv::Value;
use salt_execmods::cron::{self as ex, Job};

use super::ret::comment;
use crate::engine::Ctx;
use crate::{map, set};
use salt_compat::map_get;
use salt_compat::py_str;

fn field(low: &Value, k: &str) -> String {
    map_get(low, k)
        .filter(|v| !v.is_nil())
        .map(|v| py_str(v).to_lowercase())
        .unwrap_or_else(|| "*".into())
}

fn job(low: &Value, name: &str) -> Job {
    let identifier = match map_get(low, "identifier") {
        None | Some(Value::Boolean(false)) => Some(name.to_owned()),
        Some(Value::Nil) => None,
        Some(v) => Some(py_str(v)),
    };
    Job {
        when: ["minute", "hour", "daymonth", "month", "dayweek"].map(|k| field(low, k)),
        cmd: name.to_owned(),
        identifier,
        comment: map_get(low, "comment").filter(|v| !v.is_nil()).map(py_str),
        commented: map_get(low, "commented") == Some(&Value::Boolean(true)),
    }
}

fn present(ctx: &Ctx<'_>, low: &Value, name: &str, user: &str) -> Value {
    let mut r = map(vec![
        ("changes", Value::Map(vec![])),
        ("comment", Value::from("")),
        ("name", Value::from(name)),
        ("result", Value::Boolean(true)),
    ]);
    let want = job(low, name);
    if ctx.opts.test {
        set(&mut r, "result", Value::Nil);
        let c = match ex::check(user, &want, true) {
            Ok("absent") => format!("Cron {name} is set to be added"),
            Ok("present") => {
                set(&mut r, "result", Value::Boolean(true));
                format!("Cron {name} already present")
            }
            Ok(_) => format!("Cron {name} is set to be updated"),
            Err(e) => {
                set(&mut r, "result", Value::Boolean(false));
                e
            }
        };
        comment(&mut r, c);
        return r;
    }
    let c = match ex::set_job(user, want) {
        Ok("present") => format!("Cron {name} already present"),
        Ok(status) => {
            set(&mut r, "changes", map(vec![(user, Value::from(name))]));
            if status == "new" {
                format!("Cron {name} added to {user}'s crontab")
            } else {
                format!("Cron {name} updated")
            }
        }
        Err(e) => {
            set(&mut r, "result", Value::Boolean(false));
            format!("Cron {name} for user {user} failed to commit with error \n{e}")
        }
    };
    comment(&mut r, c);
    r
}

fn absent(ctx: &Ctx<'_>, low: &Value, name: &str, user: &str) -> Value {
    let mut r = map(vec![
        ("name", Value::from(name)),
        ("result", Value::Boolean(true)),
        ("changes", Value::Map(vec![])),
        ("comment", Value::from("")),
    ]);
    let want = job(low, name);
    if ctx.opts.test {
        set(&mut r, "result", Value::Nil);
        let c = match ex::check(user, &want, false) {
            Ok("absent") => {
                set(&mut r, "result", Value::Boolean(true));
                format!("Cron {name} is absent")
            }
            Ok(_) => format!("Cron {name} is set to be removed"),
            Err(e) => e,
        };
        comment(&mut r, c);
        return r;
    }
    let c = match ex::rm_job(user, name, want.identifier.as_deref()) {
        Ok("absent") => format!("Cron {name} already absent"),
        Ok(_) => {
            set(&mut r, "changes", map(vec![(user, Value::from(name))]));
            format!("Cron {name} removed from {user}'s crontab")
        }
        Err(e) => {
            set(&mut r, "result", Value::Boolean(false));
            format!("Cron {name} for user {user} failed to commit with error {e}")
        }
    };
    comment(&mut r, c);
    r
}

fn env_present(ctx: &Ctx<'_>, low: &Value, user: &str) -> Value {
    let name = super::name_of(low);
    let value = map_get(low, "value").unwrap_or(&Value::Nil);
    let mut r = map(vec![
        ("changes", Value::Map(vec![])),
        ("comment", Value::from("")),
        ("name", Value::from(name.as_str())),
        ("result", Value::Boolean(true)),
    ]);
    if ctx.opts.test {
        let (result, c) = match ex::check_env(user, &name, value) {
            Ok("absent") => (Value::Nil, format!("Cron env {name} is set to be added")),
            Ok("present") => (
                Value::Boolean(true),
                format!("Cron env {name} already present"),
            ),
            Ok(_) => (Value::Nil, format!("Cron env {name} is set to be updated")),
            Err(e) => (Value::Boolean(false), e),
        };
        set(&mut r, "result", result);
        comment(&mut r, c);
        return r;
    }
    let c = match ex::set_env(user, &name, value) {
        Ok("present") => format!("Cron env {name} already present"),
        Ok(status) => {
            set(
                &mut r,
                "changes",
                map(vec![(user, Value::from(name.as_str()))]),
            );
            if status == "new" {
                format!("Cron env {name} added to {user}'s crontab")
            } else {
                format!("Cron env {name} updated")
            }
        }
        Err(e) => {
            set(&mut r, "result", Value::Boolean(false));
            format!("Cron env {name} for user {user} failed to commit with error \n{e}")
        }
    };
    comment(&mut r, c);
    r
}

fn env_absent(ctx: &Ctx<'_>, name: &str, user: &str) -> Value {
    let mut r = map(vec![
        ("name", Value::from(name)),
        ("result", Value::Boolean(true)),
        ("changes", Value::Map(vec![])),
        ("comment", Value::from("")),
    ]);
    if ctx.opts.test {
        let (result, c) = match ex::check_env(user, name, &Value::Nil) {
            Ok("absent") => (Value::Boolean(true), format!("Cron env {name} is absent")),
            Ok(_) => (Value::Nil, format!("Cron env {name} is set to be removed")),
            Err(e) => (Value::Boolean(false), e),
        };
        set(&mut r, "result", result);
        comment(&mut r, c);
        return r;
    }
    let c = match ex::rm_env(user, name) {
        Ok("absent") => format!("Cron env {name} already absent"),
        Ok(_) => {
            set(&mut r, "changes", map(vec![(user, Value::from(name))]));
            format!("Cron env {name} removed from {user}'s crontab")
        }
        Err(e) => {
            set(&mut r, "result", Value::Boolean(false));
            format!("Cron env {name} for user {user} failed to commit with error {e}")
        }
    };
    comment(&mut r, c);
    r
}

/// Dispatch `cron.<fun>`.
pub fn call(ctx: &Ctx<'_>, fun: &str, low: &Value) -> Value {
    let name = super::name_of(low).trim().to_owned();
    let user = map_get(low, "user")
        .filter(|v| !v.is_nil())
        .map(py_str)
        .unwrap_or_else(|| "root".into());
    match fun {
        "env_present" => return env_present(ctx, low, &user),
        "env_absent" => return env_absent(ctx, &name, &user),
        _ => {}
    }
    if map_get(low, "special").is_some_and(|v| !v.is_nil()) {
        let mut r = super::base_ret(low);
        let msg = "cron option 'special' is not supported by salt-rs";
        comment(&mut r, msg);
        return r;
    }
    match fun {
        "present" => present(ctx, low, &name, &user),
        "absent" => absent(ctx, low, &name, &user),
        other => {
            let mut r = super::base_ret(low);
            comment(&mut r, format!("'cron.{other}' is not available."));
            r
        }
    }
}
