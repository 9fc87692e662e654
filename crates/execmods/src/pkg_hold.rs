//! `pkg.get_selections`, `pkg.set_selections` (one selection), `pkg.hold`, `pkg.unhold`
//! of Salt's `aptpkg` (3007): `dpkg --get-selections` / `dpkg --set-selections`, with
//! Salt's per-package return dicts.

use rmpv::Value;

use crate::map;
use crate::run::{run, run_env};

/// `state -> packages` from `dpkg --get-selections PATTERN` (Salt's `_parse_selections`).
pub fn get_selections(pattern: Option<&str>) -> Result<Vec<(String, Vec<String>)>, String> {
    let out = run(&["dpkg", "--get-selections", pattern.unwrap_or("*")])?;
    let mut ret: Vec<(String, Vec<String>)> = Vec::new();
    for line in out.stdout.lines().filter(|l| !l.is_empty()) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let [pkg, state] = cols[..] else {
            return Err(format!(
                "ValueError: unexpected dpkg --get-selections line: {line}"
            ));
        };
        match ret.iter_mut().find(|(s, _)| s == state) {
            Some((_, l)) => l.push(pkg.to_owned()),
            None => ret.push((state.to_owned(), vec![pkg.to_owned()])),
        }
    }
    Ok(ret)
}

fn selection_of(sel: &[(String, Vec<String>)], pkg: &str) -> Option<String> {
    sel.iter()
        .rev()
        .find(|(_, l)| l.iter().any(|p| p == pkg))
        .map(|(s, _)| s.clone())
}

/// `set_selections(selection={state: [pkg]})`: `{old, new}` when dpkg took it, else `None`.
fn set_selection(pkg: &str, state: &str) -> Result<Option<Value>, String> {
    let old = selection_of(&get_selections(None)?, pkg);
    if old.as_deref() == Some(state) {
        return Ok(None);
    }
    let out = run_env(
        &["dpkg", "--set-selections"],
        &[],
        Some(&format!("{pkg} {state}")),
    )?;
    if out.retcode != 0 {
        return Ok(None);
    }
    Ok(Some(map(vec![
        ("old", old.map_or(Value::Nil, Value::from)),
        ("new", Value::from(state)),
    ])))
}

fn entry(target: &str, changes: Value, result: Value, comment: String) -> Value {
    map(vec![
        ("name", Value::from(target)),
        ("changes", changes),
        ("result", result),
        ("comment", Value::from(comment)),
    ])
}

/// `pkg.hold` / `pkg.unhold` (`hold`) of `targets`: `{target: {name, changes, result,
/// comment}}`.
pub fn hold(targets: &[String], hold: bool, test: bool) -> Result<Vec<(String, Value)>, String> {
    let mut ret = Vec::new();
    for t in targets {
        let sel = get_selections(Some(t))?;
        let held = sel.iter().any(|(s, l)| s == "hold" && !l.is_empty());
        let empty = || Value::Map(Vec::new());
        let r = if !hold && sel.is_empty() {
            entry(
                t,
                empty(),
                Value::Boolean(false),
                format!("Package {t} does not have a state."),
            )
        } else if held != hold {
            let (verb, done, state) = if hold {
                ("is set to be held", "is now being held", "hold")
            } else {
                (
                    "is set not to be held",
                    "is no longer being held",
                    "install",
                )
            };
            if test {
                entry(t, empty(), Value::Nil, format!("Package {t} {verb}."))
            } else {
                // Salt indexes the result by the package: a refused selection raises.
                let ch = set_selection(t, state)?.ok_or_else(|| format!("KeyError: '{t}'"))?;
                entry(t, ch, Value::Boolean(true), format!("Package {t} {done}."))
            }
        } else {
            let what = if hold { "" } else { " not" };
            entry(
                t,
                empty(),
                Value::Boolean(true),
                format!("Package {t} is already set{what} to be held."),
            )
        };
        ret.push((t.clone(), r));
    }
    Ok(ret)
}
