//! The `retry` and `check_cmd` state arguments (`State.call`, `verify_retry_data`,
//! `_run_check_cmd` in `salt/state.py`).

use rmpv::Value;

use super::ret;
use crate::{map, set};
use salt_compat::map_get;
use salt_compat::py_str;

/// Validated `retry` data (Salt's defaults for missing or mistyped keys).
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    /// The result to wait for.
    pub until: bool,
    /// Maximum attempts.
    pub attempts: i64,
    /// Seconds between attempts.
    pub interval: i64,
    /// Random extra seconds (0..=splay).
    pub splay: i64,
}

const DEFAULT: Retry = Retry {
    until: true,
    attempts: 2,
    interval: 30,
    splay: 0,
};

/// `verify_retry_data` of `low["retry"]`, `None` without `retry`.
pub fn verify(low: &Value) -> Option<Retry> {
    match map_get(low, "retry")? {
        Value::Map(_) => {
            let v = map_get(low, "retry")?;
            let int = |k: &str, d: i64| match map_get(v, k) {
                Some(Value::Integer(i)) => i.as_i64().unwrap_or(d),
                _ => d,
            };
            Some(Retry {
                until: match map_get(v, "until") {
                    Some(Value::Boolean(b)) => *b,
                    _ => DEFAULT.until,
                },
                attempts: int("attempts", DEFAULT.attempts),
                interval: int("interval", DEFAULT.interval),
                splay: int("splay", DEFAULT.splay),
            })
        }
        Value::Boolean(false) => Some(Retry {
            attempts: 0,
            ..DEFAULT
        }),
        _ => Some(DEFAULT),
    }
}

/// The interval before the next attempt, with the splay added.
pub fn interval(r: &Retry) -> i64 {
    if r.splay <= 0 {
        return r.interval;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    r.interval + i64::from(nanos) % (r.splay + 1)
}

/// Whether the result is not yet the wanted one.
pub fn wants_retry(r: &Retry, ret: &Value) -> bool {
    map_get(ret, "result") != Some(&Value::Boolean(r.until))
}

fn f64_of(v: Option<&Value>) -> f64 {
    match v {
        Some(Value::F64(f)) => *f,
        Some(Value::Integer(i)) => i.as_f64().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// Fold attempt `retries`'s return `orig` into the next attempt's `new`.
pub fn merge(orig: &Value, mut new: Value, retries: i64, interval: i64) -> Value {
    let comment = map_get(&new, "comment").map(py_str).unwrap_or_default();
    let c = format!(
        "Attempt {retries}: Returned a result of \"{}\", with the following comment: \"{}\"\n{}",
        py_str(map_get(orig, "result").unwrap_or(&Value::Nil)),
        py_str(map_get(orig, "comment").unwrap_or(&Value::Nil)),
        if map_get(&new, "comment").is_some_and(crate::truthy) {
            comment
        } else {
            String::new()
        }
    );
    ret::comment(&mut new, c);
    let d = f64_of(map_get(&new, "duration"))
        + f64_of(map_get(orig, "duration"))
        + (interval * 1000) as f64;
    set(&mut new, "duration", Value::F64(d));
    if retries == 1
        && let Some(st) = map_get(orig, "start_time")
    {
        set(&mut new, "start_time", st.clone());
    }
    new
}

/// The `test=True` note.
pub fn test_comment(ret: &mut Value, r: &Retry) {
    let c = map_get(ret, "comment")
        .filter(|c| crate::truthy(c))
        .map(py_str)
        .unwrap_or_default();
    let py = |b: bool| if b { "True" } else { "False" };
    set(
        ret,
        "comment",
        Value::from(format!(
            "{c}  The state would be retried every {} seconds (with a splay of up to {} seconds) a maximum of {} times or until a result of {} is returned",
            r.interval,
            r.splay,
            r.attempts,
            py(r.until)
        )),
    );
}

/// Call the state function, then `check_cmd` (left to the function where it takes it itself).
pub fn call_checked(
    ctx: &crate::engine::Ctx<'_>,
    full: &str,
    low: &Value,
    watch: Option<&[Value]>,
) -> Value {
    if map_get(low, "check_cmd").is_none_or(|v| matches!(v, Value::Nil)) {
        return super::call(ctx, full, low, watch);
    }
    if own_check_cmd(full) {
        // Its own argument: the function reads it (or refuses it by name) itself.
        return super::call(ctx, full, low, watch);
    }
    let mut ret = super::call(ctx, full, low, watch);
    check_cmd(low, &mut ret);
    ret
}

/// States whose function takes `check_cmd` itself (`file.managed`, `file.serialize`:
/// unused under `test`, refused by name otherwise).
pub fn own_check_cmd(full: &str) -> bool {
    matches!(full, "file.managed" | "file.serialize")
}

/// `_run_check_cmd`: each command through `/bin/sh -c`; merged into `ret` as Salt's
/// `ret.update(...)` (new keys appended).
pub fn check_cmd(low: &Value, ret: &mut Value) {
    let cmds: Vec<String> = match map_get(low, "check_cmd") {
        Some(Value::Array(a)) => a.iter().map(py_str).collect(),
        Some(v) => vec![py_str(v)],
        None => return,
    };
    let mut out = map(vec![("result", Value::Boolean(false))]);
    for k in ["__sls__", "__id__", "name"] {
        set(&mut out, k, map_get(low, k).cloned().unwrap_or(Value::Nil));
    }
    for c in cmds {
        let rc = super::cmd::run_all(&c, None)
            .ok()
            .and_then(|r| map_get(&r, "retcode").and_then(Value::as_i64))
            .unwrap_or(1);
        if rc == 0 && map_get(&out, "result") == Some(&Value::Boolean(false)) {
            ret::comment(&mut out, "check_cmd determined the state succeeded");
            set(&mut out, "result", Value::Boolean(true));
        } else if rc != 0 {
            ret::comment(&mut out, "check_cmd determined the state failed");
            set(&mut out, "result", Value::Boolean(false));
            break;
        }
    }
    if let Value::Map(m) = out {
        for (k, v) in m {
            set(ret, k.as_str().unwrap_or(""), v);
        }
    }
}
