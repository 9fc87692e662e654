//! `sysctl.present` (`salt/states/sysctl.py`) on `salt-execmods`' `sysctl` module
//! (`linux_sysctl`).

use rmpv::Value;
use salt_execmods::sysctl as ex;

use super::ret::comment;
use crate::engine::Ctx;
use crate::{map, set};
use salt_compat::{map_get, py_str};

/// Salt's `re.sub(" +|\t+", " ", s)`.
fn squeeze(s: &str) -> String {
    let mut out = String::new();
    let mut prev: Option<char> = None;
    for c in s.chars() {
        let blank = c == ' ' || c == '\t';
        if !(blank && prev == Some(c)) {
            out.push(if blank { ' ' } else { c });
        }
        prev = Some(c);
    }
    out
}

/// The test-mode answer: (result, comment).
fn test_answer(name: &str, value: &str, config: &str) -> (Value, String) {
    let configured = match ex::show_config(config) {
        Ok(c) => c.unwrap_or_default(),
        Err(_) => {
            let c = format!(
                "Sysctl option {name} might be changed, we failed to check config file at \
                 {config}. The file is either unreadable, or missing."
            );
            return (Value::Nil, c);
        }
    };
    let current = match ex::get(name) {
        Ok(c) => c,
        Err(e) => return (Value::Boolean(false), e),
    };
    let in_config = configured.iter().any(|(k, _)| k == name);
    if !current.is_empty() {
        if in_config {
            let same = value.split_whitespace().eq(current.split_whitespace());
            if same {
                let c = format!("Sysctl value {name} = {value} is already set");
                return (Value::Boolean(true), c);
            }
        } else if squeeze(&current) != squeeze(value) {
            let c = format!("Sysctl option {name} set to be changed to {value}");
            return (Value::Nil, c);
        } else {
            let c = format!(
                "Sysctl value is currently set on the running system but not in a config \
                 file. Sysctl option {name} set to be changed to {value} in config file."
            );
            return (Value::Nil, c);
        }
    } else if in_config {
        let c = format!(
            "Sysctl value {name} is present in configuration file but is not present in \
             the running config. The value {name} is set to be changed to {value}"
        );
        return (Value::Nil, c);
    }
    let c = format!("Sysctl option {name} would be changed to {value}");
    (Value::Nil, c)
}

fn present(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name = super::name_of(low);
    let mut r = map(vec![
        ("name", Value::from(name.as_str())),
        ("result", Value::Boolean(true)),
        ("changes", Value::Map(vec![])),
        ("comment", Value::from("")),
    ]);
    let Some(raw) = map_get(low, "value") else {
        set(&mut r, "result", Value::Boolean(false));
        comment(&mut r, "Missing parameter value for state sysctl.present");
        return r;
    };
    let value = py_str(raw);
    let config = match map_get(low, "config").filter(|v| !v.is_nil()) {
        Some(c) => py_str(c),
        None => ex::default_config(),
    };
    if ctx.opts.test {
        let (result, c) = test_answer(&name, &value, &config);
        set(&mut r, "result", result);
        comment(&mut r, c);
        return r;
    }
    match ex::persist(&name, &value, Some(&config)) {
        Ok("Updated") => {
            set(&mut r, "changes", map(vec![(name.as_str(), raw.clone())]));
            comment(&mut r, format!("Updated sysctl value {name} = {value}"));
        }
        Ok(_) => comment(
            &mut r,
            format!("Sysctl value {name} = {value} is already set"),
        ),
        Err(e) => {
            set(&mut r, "result", Value::Boolean(false));
            comment(&mut r, format!("Failed to set {name} to {value}: {e}"));
        }
    }
    r
}

/// Dispatch `sysctl.<fun>`.
pub fn call(ctx: &Ctx<'_>, fun: &str, low: &Value) -> Value {
    match fun {
        "present" => present(ctx, low),
        other => {
            let mut r = super::base_ret(low);
            comment(&mut r, format!("'sysctl.{other}' is not available."));
            r
        }
    }
}
