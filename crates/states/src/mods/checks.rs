//! `unless`, `onlyif`, `creates` (`State._run_check`).

use std::path::Path;

use rmpv::Value;

use super::ret::comment;
use crate::{map, set};
use salt_compat::map_get;
use salt_compat::py_str;

/// Run a shell condition; its exit code (100 when it cannot start, like Salt's onlyif).
pub fn retcode(cmd: &str, cwd: Option<&str>) -> i64 {
    let spec = salt_execmods::run::Spec {
        cwd: cwd.map(str::to_owned),
        ..salt_execmods::run::Spec::shell("/bin/sh", cmd)
    };
    let Ok(mut c) = spec.command() else {
        return 100;
    };
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    match c.status() {
        Ok(s) => i64::from(s.code().unwrap_or(-1)),
        Err(_) => 100,
    }
}

fn entries(v: &Value) -> Vec<Value> {
    match v {
        Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    }
}

fn head(low: &Value) -> Value {
    let mut r = map(vec![("result", Value::Boolean(false))]);
    for key in ["__sls__", "__id__", "name"] {
        set(
            &mut r,
            key,
            map_get(low, key).cloned().unwrap_or(Value::Nil),
        );
    }
    r
}

fn onlyif(low: &Value, cwd: Option<&str>) -> Value {
    let mut r = head(low);
    for e in entries(map_get(low, "onlyif").unwrap_or(&Value::Nil)) {
        let Value::String(s) = &e else {
            comment(
                &mut r,
                format!(
                    "onlyif with {} is not supported by salt-rs (only shell commands)",
                    py_str(&e)
                ),
            );
            set(&mut r, "result", Value::Boolean(true));
            set(&mut r, "skip_watch", Value::Boolean(true));
            return r;
        };
        let rc = retcode(s.as_str().unwrap_or(""), cwd);
        if rc != 0 && map_get(&r, "result") == Some(&Value::Boolean(false)) {
            comment(&mut r, "onlyif condition is false");
            set(&mut r, "skip_watch", Value::Boolean(true));
            set(&mut r, "result", Value::Boolean(true));
            return r;
        } else if rc == 0 {
            comment(&mut r, "onlyif condition is true");
            set(&mut r, "result", Value::Boolean(false));
        }
    }
    r
}

fn unless(low: &Value, cwd: Option<&str>) -> Value {
    let mut r = head(low);
    for e in entries(map_get(low, "unless").unwrap_or(&Value::Nil)) {
        let Value::String(s) = &e else {
            comment(
                &mut r,
                format!(
                    "unless with {} is not supported by salt-rs (only shell commands)",
                    py_str(&e)
                ),
            );
            set(&mut r, "result", Value::Boolean(true));
            set(&mut r, "skip_watch", Value::Boolean(true));
            return r;
        };
        if retcode(s.as_str().unwrap_or(""), cwd) == 0 {
            comment(&mut r, "unless condition is true");
            set(&mut r, "skip_watch", Value::Boolean(true));
            set(&mut r, "result", Value::Boolean(true));
        } else {
            crate::pop(&mut r, "skip_watch");
            comment(&mut r, "unless condition is false");
            set(&mut r, "result", Value::Boolean(false));
            return r;
        }
    }
    r
}

fn creates(low: &Value) -> Value {
    let mut r = head(low);
    match map_get(low, "creates") {
        Some(Value::String(s)) if Path::new(s.as_str().unwrap_or("")).exists() => {
            comment(&mut r, format!("{} exists", s.as_str().unwrap_or("")));
            set(&mut r, "result", Value::Boolean(true));
            set(&mut r, "skip_watch", Value::Boolean(true));
        }
        Some(Value::Array(a)) if a.iter().all(|p| Path::new(&py_str(p)).exists()) => {
            comment(&mut r, "All files in creates exist");
            set(&mut r, "result", Value::Boolean(true));
            set(&mut r, "skip_watch", Value::Boolean(true));
        }
        _ => {
            comment(&mut r, "Creates files not found");
            set(&mut r, "result", Value::Boolean(false));
        }
    }
    r
}

fn truth(v: Option<&Value>) -> bool {
    v == Some(&Value::Boolean(true))
}

/// `_run_check`: `{result, comment, __sls__, __id__, name[, skip_watch]}`.
pub fn run_check(low: &Value) -> Value {
    let cwd = crate::get_str(low, "cwd");
    let mut ret = map(vec![
        ("result", Value::Boolean(false)),
        ("comment", Value::Nil),
    ]);
    for key in ["__sls__", "__id__", "name"] {
        set(
            &mut ret,
            key,
            map_get(low, key).cloned().unwrap_or(Value::Nil),
        );
    }
    let mut comments: Vec<String> = Vec::new();
    let mut skip: Option<bool> = None;
    let mut merge = |sub: Value, ret: &mut Value, first: bool| {
        let res = truth(map_get(&sub, "result"));
        let prev = truth(map_get(ret, "result"));
        set(
            ret,
            "result",
            Value::Boolean(if first { res } else { res || prev }),
        );
        comments.push(py_str(map_get(&sub, "comment").unwrap_or(&Value::Nil)));
        if let Some(sw) = map_get(&sub, "skip_watch") {
            let sw = truth(Some(sw));
            skip = Some(if first {
                sw
            } else {
                sw || skip.unwrap_or(false)
            });
        }
    };
    let mut first = true;
    if map_get(low, "onlyif").is_some() {
        merge(onlyif(low, cwd), &mut ret, first);
        first = false;
    }
    if map_get(low, "unless").is_some() {
        merge(unless(low, cwd), &mut ret, first);
        first = false;
    }
    if map_get(low, "creates").is_some() {
        merge(creates(low), &mut ret, first);
    }
    comment(&mut ret, comments.join("\n"));
    if let Some(sw) = skip {
        set(&mut ret, "skip_watch", Value::Boolean(sw));
    }
    ret
}
