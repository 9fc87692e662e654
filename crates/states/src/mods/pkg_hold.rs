//! `pkg.held` and `pkg.unheld` (`salt/states/pkg.py` of 3007) on APT: the held packages are
//! `dpkg --get-selections`' `hold` ones (Salt's `get_selections` path: no version locks), set
//! through `salt-execmods`' `pkg_hold`.

use rmpv::Value;
use salt_compat::map_get;
use salt_execmods::pkg_hold;

use super::args::Args;
use super::{base_ret, name_of, ret};
use crate::engine::Ctx;
use crate::{map, set, truthy};

/// `pkg.held`.
pub const PKG_HELD: Args = Args {
    honoured: &["name", "version", "pkgs", "replace"],
    refused: &[],
    apply_only: &[],
};
/// `pkg.unheld`.
pub const PKG_UNHELD: Args = Args {
    honoured: &["name", "version", "pkgs", "all"],
    refused: &[],
    apply_only: &[],
};

/// `(name, version)` of each `pkgs` entry (a name, or a one-key `{name: version}`).
fn entries(pkgs: &[Value]) -> Vec<(String, Option<Value>)> {
    pkgs.iter()
        .map(|p| match p {
            Value::Map(m) if !m.is_empty() => (
                salt_compat::py_str(&m[0].0),
                Some(m[0].1.clone()).filter(|v| !v.is_nil()),
            ),
            other => (salt_compat::py_str(other), None),
        })
        .collect()
}

/// The held packages (`get_selections(state="hold")`).
fn locks() -> Result<Vec<String>, String> {
    Ok(pkg_hold::get_selections(None)?
        .into_iter()
        .filter(|(s, _)| s == "hold")
        .flat_map(|(_, l)| l)
        .collect())
}

fn version_note(v: Option<&Value>, shown: &str) -> String {
    match v {
        Some(v) if truthy(v) => format!(" (version = {shown})"),
        _ => String::new(),
    }
}

fn finish(mut r: Value, comments: &[String], changes: Vec<(String, Value)>) -> Value {
    let mut c = comments.join("\n");
    if changes.is_empty() && c.is_empty() {
        c = "No changes made".into();
    }
    set(
        &mut r,
        "changes",
        Value::Map(
            changes
                .into_iter()
                .map(|(k, v)| (Value::from(k), v))
                .collect(),
        ),
    );
    ret::comment(&mut r, c);
    r
}

fn result_of(v: &Value) -> bool {
    map_get(v, "result").is_some_and(truthy)
}

/// Apply `hold` (or unhold) to one package; its entry and whether it worked.
fn one(pkg: &str, hold: bool, test: bool) -> Result<(Value, bool), String> {
    let out = pkg_hold::hold(&[pkg.to_owned()], hold, test)?;
    let v = out.into_iter().next().map(|(_, v)| v).unwrap_or(Value::Nil);
    let ok = result_of(&v);
    Ok((v, ok))
}

fn held(ctx: &Ctx<'_>, low: &Value) -> Result<Value, String> {
    let name = name_of(low);
    let test = ctx.opts.test;
    let replace = map_get(low, "replace").is_some_and(truthy);
    let mut r = base_ret(low);
    set(&mut r, "result", Value::Boolean(true));
    let pkgs = match map_get(low, "pkgs") {
        Some(Value::Array(a)) if a.is_empty() && !replace => {
            return Ok(finish(
                r,
                &["No packages to be held provided".into()],
                vec![],
            ));
        }
        Some(Value::Array(a)) => entries(a),
        Some(v) if !v.is_nil() => return Err("pkgs must be a list".into()),
        _ => {
            let v = map_get(low, "version").filter(|v| truthy(v)).cloned();
            if name.is_empty() {
                Vec::new()
            } else {
                vec![(name.clone(), v)]
            }
        }
    };
    let locks = locks()?;
    let mut comments = Vec::new();
    let mut changes: Vec<(String, Value)> = Vec::new();
    let mut held_pkgs: Vec<String> = Vec::new();
    for (pkg, ver) in &pkgs {
        held_pkgs.push(pkg.clone());
        if locks.contains(pkg) {
            continue;
        }
        if test {
            let shown = ver.as_ref().map(salt_compat::py_str).unwrap_or_default();
            comments.push(format!(
                "The following package would be held: {pkg}{}",
                version_note(ver.as_ref(), &shown)
            ));
            continue;
        }
        let (v, ok) = one(pkg, true, false)?;
        if !ok {
            set(&mut r, "result", Value::Boolean(false));
        }
        comments.push(if ok {
            format!("Package {pkg} is now being held")
        } else {
            format!("Package {pkg} was not held")
        });
        changes.retain(|(k, _)| k != pkg);
        changes.push((pkg.clone(), v));
    }
    if replace {
        for lock in locks.iter().filter(|l| !held_pkgs.contains(l)) {
            if test {
                comments.push(format!("The following package would be unheld: {lock}"));
                continue;
            }
            let (v, ok) = one(lock, false, false)?;
            if !ok {
                set(&mut r, "result", Value::Boolean(false));
            }
            if let Some(c) = map_get(&v, "comment").filter(|c| truthy(c)) {
                comments.push(salt_compat::py_str(c));
            }
            changes.retain(|(k, _)| k != lock);
            changes.push((lock.clone(), v));
        }
    }
    Ok(finish(r, &comments, changes))
}

fn unheld(ctx: &Ctx<'_>, low: &Value) -> Result<Value, String> {
    let name = name_of(low);
    let test = ctx.opts.test;
    let all = map_get(low, "all").is_some_and(truthy);
    let mut r = base_ret(low);
    set(&mut r, "result", Value::Boolean(true));
    let pkgs = match map_get(low, "pkgs") {
        Some(Value::Array(a)) if a.is_empty() && !all => {
            return Ok(finish(
                r,
                &["No packages to be unheld provided".into()],
                vec![],
            ));
        }
        Some(Value::Array(a)) => entries(a),
        Some(v) if !v.is_nil() => return Err("pkgs must be a list".into()),
        _ if name.is_empty() => Vec::new(),
        _ => vec![(
            name.clone(),
            map_get(low, "version").filter(|v| !v.is_nil()).cloned(),
        )],
    };
    let mut comments = Vec::new();
    let mut changes: Vec<(String, Value)> = Vec::new();
    for lock in locks()? {
        let want = pkgs.iter().rev().find(|(p, _)| *p == lock);
        if !all && want.is_none() {
            continue;
        }
        if test {
            // Salt names the lock's version, which apt's holds do not have.
            comments.push(format!(
                "The following package would be unheld: {lock}{}",
                version_note(want.and_then(|(_, v)| v.as_ref()), "None")
            ));
            continue;
        }
        let (v, ok) = one(&lock, false, false)?;
        if !ok {
            set(&mut r, "result", Value::Boolean(false));
        }
        if let Some(c) = map_get(&v, "comment").filter(|c| truthy(c)) {
            comments.push(salt_compat::py_str(c));
        }
        changes.retain(|(k, _)| *k != lock);
        changes.push((lock.clone(), v));
    }
    Ok(finish(r, &comments, changes))
}

/// Dispatch `pkg.held` / `pkg.unheld`.
pub fn call(ctx: &Ctx<'_>, fun: &str, low: &Value) -> Value {
    let out = match fun {
        "held" => held(ctx, low),
        _ => unheld(ctx, low),
    };
    out.unwrap_or_else(|e| {
        let mut r = base_ret(low);
        set(&mut r, "changes", map(vec![]));
        ret::comment(&mut r, e);
        r
    })
}

/// `pkg.installed`'s `hold` (given at all, `False` meaning unhold): each package's
/// `pkg.hold`/`pkg.unhold` entry, split as Salt splits them.
#[derive(Default)]
pub(crate) struct Holds {
    /// Entries with changes.
    pub modified: Vec<Value>,
    /// Entries without changes that succeeded.
    pub not_modified: Vec<Value>,
    /// The others (under `test`, those that would change).
    pub failed: Vec<Value>,
}

/// `hold`/`unhold` of `names` when `low` has `hold`.
pub(crate) fn installed_hold(
    low: &Value,
    names: &[String],
    test: bool,
) -> Result<Option<Holds>, String> {
    let Some(h) = map_get(low, "hold") else {
        return Ok(None);
    };
    let mut out = Holds::default();
    for (_, v) in pkg_hold::hold(names, truthy(h), test)? {
        let changed = map_get(&v, "changes").is_some_and(truthy);
        if changed {
            out.modified.push(v);
        } else if result_of(&v) {
            out.not_modified.push(v);
        } else {
            out.failed.push(v);
        }
    }
    Ok(Some(out))
}

fn comment_of(v: &Value) -> String {
    map_get(v, "comment")
        .map(salt_compat::py_str)
        .unwrap_or_default()
}

/// The "all installed" return with the holds' comments, results and changes (Salt's
/// `ValueError` branch of `pkg.installed`).
pub(crate) fn noop_with_holds(mut r: Value, h: &Holds) -> Value {
    let mut comment = map_get(&r, "comment")
        .map(salt_compat::py_str)
        .unwrap_or_default();
    let mut changes: Vec<(Value, Value)> = match map_get(&r, "changes") {
        Some(Value::Map(m)) => m.clone(),
        _ => Vec::new(),
    };
    for (i, v) in h
        .modified
        .iter()
        .chain(&h.not_modified)
        .chain(&h.failed)
        .enumerate()
    {
        comment.push_str(&format!(".\n{}", comment_of(v)));
        set(
            &mut r,
            "result",
            map_get(v, "result").cloned().unwrap_or(Value::Nil),
        );
        if i < h.modified.len() {
            let n = map_get(v, "name").cloned().unwrap_or(Value::Nil);
            changes.retain(|(k, _)| *k != n);
            changes.push((n, map_get(v, "changes").cloned().unwrap_or(Value::Nil)));
        }
    }
    set(&mut r, "changes", Value::Map(changes));
    ret::comment(&mut r, comment);
    r
}

/// After an install: the modified holds' comments, and their changes merged into the
/// install's (`new`/`old` joined with a newline).
pub(crate) fn merge_modified(changes: &mut Value, comment: &mut Vec<String>, h: &Holds) {
    for v in &h.modified {
        let name = map_get(v, "name")
            .map(salt_compat::py_str)
            .unwrap_or_default();
        let ch = map_get(v, "changes").cloned().unwrap_or(Value::Nil);
        let text = |k: &str| map_get(&ch, k).map(salt_compat::py_str).unwrap_or_default();
        comment.push(comment_of(v));
        match map_get(changes, &name).cloned() {
            Some(mut cur) => {
                for k in ["new", "old"] {
                    let mut s = map_get(&cur, k)
                        .map(salt_compat::py_str)
                        .unwrap_or_default();
                    if !s.is_empty() {
                        s.push('\n');
                    }
                    s.push_str(&text(k));
                    set(&mut cur, k, Value::from(s));
                }
                set(changes, &name, cur);
            }
            None => set(changes, &name, map(vec![("new", Value::from(text("new")))])),
        }
    }
}

/// Comments of the holds that changed nothing, then of the failed ones; whether none failed.
pub(crate) fn rest_comments(h: &Holds, comment: &mut Vec<String>) -> bool {
    comment.extend(h.not_modified.iter().map(comment_of));
    comment.extend(h.failed.iter().map(comment_of));
    h.failed.is_empty()
}
