//! `host.present`, `host.absent` (`salt/states/host.py`) on `salt-execmods`' `hosts`
//! module (the `hosts.file` option, default `/etc/hosts`). Salt walks Python sets here,
//! so with several addresses its message order varies from run to run; salt-rs keeps the
//! order of `ip`.

use rmpv::Value;
use salt_execmods::hosts as ex;

use super::ret;
use crate::engine::Ctx;
use crate::{map, set};
use salt_compat::map_get;
use salt_compat::py_str;

/// `{kind: {addr: [values]}}` in insertion order.
type Changes = Vec<(String, Vec<(String, Vec<String>)>)>;

fn exctx<'a>(ctx: &Ctx<'a>) -> salt_execmods::Ctx<'a> {
    salt_execmods::Ctx {
        opts: &ctx.opts.opts,
        grains: &ctx.opts.grains,
    }
}

fn ips(low: &Value) -> Vec<String> {
    match map_get(low, "ip") {
        Some(Value::Array(a)) => a.iter().map(py_str).collect(),
        Some(Value::Nil) | None => Vec::new(),
        Some(v) => vec![py_str(v)],
    }
}

fn push(changes: &mut Changes, kind: &str, addr: &str, what: &str) {
    let pos = changes
        .iter()
        .position(|(k, _)| k == kind)
        .unwrap_or_else(|| {
            changes.push((kind.to_owned(), Vec::new()));
            changes.len() - 1
        });
    let list = &mut changes[pos].1;
    match list.iter_mut().find(|(a, _)| a == addr) {
        Some((_, v)) => v.push(what.to_owned()),
        None => list.push((addr.to_owned(), vec![what.to_owned()])),
    }
}

fn to_value(changes: Changes) -> Value {
    Value::Map(
        changes
            .into_iter()
            .map(|(k, v)| {
                let inner = v
                    .into_iter()
                    .map(|(a, l)| {
                        (
                            Value::from(a),
                            Value::Array(l.into_iter().map(Value::from).collect()),
                        )
                    })
                    .collect();
                (Value::from(k), Value::Map(inner))
            })
            .collect(),
    )
}

fn add_unique<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
    }
}

fn present(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name = super::name_of(low);
    let ip = ips(low);
    let comment = map_get(low, "comment")
        .map(py_str)
        .filter(|c| !c.is_empty() && c != "None");
    let clean = map_get(low, "clean").is_some_and(crate::truthy);
    let e = exctx(ctx);
    let all = ex::list(&e);
    let mut r = ret::new(name.as_str(), true, "");
    let mut comments = Vec::new();
    let mut to_add: Vec<(String, String)> = Vec::new();
    let mut to_remove: Vec<(String, String)> = Vec::new();
    let mut upd: Vec<(String, String)> = Vec::new();
    let mut warnings = Vec::new();
    for a in &ip {
        if !all.iter().any(|(x, _, _)| x == a) {
            add_unique(&mut to_add, (a.clone(), name.clone()));
            if let Some(c) = &comment {
                add_unique(&mut upd, (a.clone(), c.clone()));
            }
        }
    }
    for (addr, aliases, hc) in &all {
        let has = aliases.contains(&name);
        if !ip.contains(addr) {
            if has {
                if clean {
                    add_unique(&mut to_remove, (addr.clone(), name.clone()));
                } else {
                    warnings.push(Value::from(format!(
                        "Host {name} present for IP address {addr}. To get rid of this warning, either run this state with 'clean' set to True to remove {name} from {addr}, or add {addr} to the 'ip' argument."
                    )));
                }
            }
        } else if has {
            match (&comment, hc) {
                (Some(c), Some(h)) if c != h => add_unique(&mut upd, (addr.clone(), c.clone())),
                (Some(c), None) => add_unique(&mut upd, (addr.clone(), c.clone())),
                _ => comments.push(format!("Host {name} ({addr}) already present")),
            }
        } else if addr.parse::<std::net::IpAddr>().is_ok() {
            add_unique(&mut to_add, (addr.clone(), name.clone()));
            if let Some(c) = &comment {
                add_unique(&mut upd, (addr.clone(), c.clone()));
            }
        } else {
            set(&mut r, "result", Value::Boolean(false));
            comments.push(format!("Invalid IP Address for {name} ({addr})"));
        }
    }
    if !warnings.is_empty() {
        set(&mut r, "warnings", Value::Array(warnings));
    }
    let mut changes = Vec::new();
    let test = ctx.opts.test;
    for (addr, n) in &to_add {
        if test {
            set(&mut r, "result", Value::Nil);
            comments.push(format!("Host {n} ({addr}) would be added"));
        } else if ex::add_host(&e, addr, n).unwrap_or(false) {
            comments.push(format!("Added host {n} ({addr})"));
        } else {
            set(&mut r, "result", Value::Boolean(false));
            comments.push(format!("Failed to add host {n} ({addr})"));
            continue;
        }
        push(&mut changes, "added", addr, n);
    }
    for (addr, c) in &upd {
        if test {
            comments.push(format!("Comment for {addr} ({c}) would be added"));
        } else if ex::set_comment(&e, addr, c).unwrap_or(false) {
            comments.push(format!("Set comment for host {addr} ({c})"));
        } else {
            set(&mut r, "result", Value::Boolean(false));
            comments.push(format!("Failed to add comment for host {addr} ({c})"));
            continue;
        }
        push(&mut changes, "comment_added", addr, c);
    }
    for (addr, n) in &to_remove {
        if test {
            set(&mut r, "result", Value::Nil);
            comments.push(format!("Host {n} ({addr}) would be removed"));
        } else if ex::rm_host(&e, addr, n).unwrap_or(false) {
            comments.push(format!("Removed host {n} ({addr})"));
        } else {
            set(&mut r, "result", Value::Boolean(false));
            comments.push(format!("Failed to remove host {n} ({addr})"));
            continue;
        }
        push(&mut changes, "removed", addr, n);
    }
    set(&mut r, "changes", to_value(changes));
    ret::comment(&mut r, comments.join("\n"));
    r
}

fn absent(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name = super::name_of(low);
    let e = exctx(ctx);
    let mut r = map(vec![
        ("name", Value::from(name.as_str())),
        ("changes", Value::Map(vec![])),
        ("result", Value::Nil),
        ("comment", Value::from("")),
    ]);
    let mut comments = Vec::new();
    for ip in ips(low) {
        if !ex::has_pair(&e, &ip, &name) {
            set(&mut r, "result", Value::Boolean(true));
            comments.push(format!("Host {name} ({ip}) already absent"));
        } else if ctx.opts.test {
            comments.push(format!("Host {name} ({ip}) needs to be removed"));
        } else if ex::rm_host(&e, &ip, &name).unwrap_or(false) {
            set(
                &mut r,
                "changes",
                map(vec![("host", Value::from(name.as_str()))]),
            );
            set(&mut r, "result", Value::Boolean(true));
            comments.push(format!("Removed host {name} ({ip})"));
        } else {
            set(&mut r, "result", Value::Boolean(false));
            comments.push("Failed to remove host".into());
        }
    }
    ret::comment(&mut r, comments.join("\n"));
    r
}

/// Dispatch `host.<fun>`.
pub fn call(ctx: &Ctx<'_>, fun: &str, low: &Value) -> Value {
    match fun {
        "present" => present(ctx, low),
        "absent" => absent(ctx, low),
        other => {
            let mut r = super::base_ret(low);
            ret::comment(&mut r, format!("'host.{other}' is not available."));
            r
        }
    }
}
