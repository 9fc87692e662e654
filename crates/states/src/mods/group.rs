//! `group.present`, `group.absent` (`salt/states/group.py`) on `salt-execmods`' `group`
//! module: `gid`, `system`, `addusers`, `delusers`; `members`, `non_unique`, `local` are
//! refused by name.

use rmpv::Value;
use salt_execmods::{Args, user as ex};

use super::ret::{self, comment, would};
use super::user::{opt, py_list, strs};
use crate::engine::Ctx;
use crate::{map, set, truthy};
use salt_compat::map_get;

fn group_changes(low: &Value, name: &str) -> Option<Vec<(String, String)>> {
    let g = ex::group(name)?;
    let mut out = Vec::new();
    if let Some(gid) = opt(low, "gid")
        && gid.parse::<u32>().ok() != Some(g.gid)
    {
        out.push(("gid".to_owned(), gid));
    }
    if let Some(add) = strs(low, "addusers") {
        let a: Vec<String> = add.into_iter().filter(|u| !g.members.contains(u)).collect();
        if !a.is_empty() {
            out.push(("addusers".to_owned(), py_list(&a)));
        }
    }
    if let Some(del) = strs(low, "delusers") {
        let d: Vec<String> = del.into_iter().filter(|u| g.members.contains(u)).collect();
        if !d.is_empty() {
            out.push(("delusers".to_owned(), py_list(&d)));
        }
    }
    Some(out)
}

/// `group.present`.
pub fn present(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name = super::name_of(low);
    let mut r = ret::new(
        name.as_str(),
        true,
        &format!("Group {name} is present and up to date"),
    );
    for k in ["members", "non_unique", "local"] {
        if map_get(low, k).is_some_and(|v| !v.is_nil() && *v != Value::Boolean(false)) {
            set(&mut r, "result", Value::Boolean(false));
            let msg = format!("group.present option '{k}' is not supported by salt-rs");
            comment(&mut r, msg);
            return r;
        }
    }
    let g = |f: &str, pos: Vec<Value>, kw: Vec<(String, Value)>| {
        salt_execmods::user::call_group(f, &Args::new(&format!("group.{f}"), &pos, &kw))
    };
    match group_changes(low, &name) {
        Some(ch) if !ch.is_empty() => {
            let mut c = String::from("The following group attributes are set to be changed:\n");
            for (k, v) in &ch {
                c.push_str(&format!("{k}: {v}\n"));
            }
            comment(&mut r, c.clone());
            if ctx.opts.test {
                set(&mut r, "result", Value::Nil);
                return r;
            }
            let n = Value::from(name.as_str());
            for (k, _) in &ch {
                match k.as_str() {
                    "gid" => {
                        let gid = opt(low, "gid").unwrap_or_default();
                        let _ = salt_execmods::run::run(&["groupmod", "-g", &gid, &name]);
                    }
                    "addusers" | "delusers" => {
                        let f = if k == "addusers" {
                            "adduser"
                        } else {
                            "deluser"
                        };
                        for u in strs(low, k).unwrap_or_default() {
                            let _ = g(f, vec![n.clone(), Value::from(u)], vec![]);
                        }
                    }
                    _ => {}
                }
            }
            match group_changes(low, &name) {
                Some(left) if !left.is_empty() => {
                    set(&mut r, "result", Value::Boolean(false));
                    comment(&mut r, format!("{c}Some changes could not be applied"));
                    let m = left
                        .into_iter()
                        .map(|(k, v)| (Value::from(k), Value::from(v)))
                        .collect();
                    set(&mut r, "changes", map(vec![("Failed", Value::Map(m))]));
                }
                _ => set(
                    &mut r,
                    "changes",
                    map(vec![(
                        "Final",
                        Value::from("All changes applied successfully"),
                    )]),
                ),
            }
            r
        }
        Some(_) => r,
        None => {
            if ctx.opts.test {
                return would(r, format!("Group {name} set to be added"));
            }
            if let Some(gid) = opt(low, "gid")
                && let Some(other) = ex::groups().into_iter().find(|x| x.gid.to_string() == gid)
            {
                set(&mut r, "result", Value::Boolean(false));
                let msg = format!(
                    "Group {name} is not present but gid {gid} is already taken by group {}",
                    other.name
                );
                comment(&mut r, msg);
                return r;
            }
            let mut kw = Vec::new();
            for k in ["gid", "system"] {
                if let Some(v) = map_get(low, k).filter(|v| !v.is_nil()) {
                    kw.push((k.to_owned(), v.clone()));
                }
            }
            if g("add", vec![Value::from(name.as_str())], kw).is_ok_and(|v| truthy(&v)) {
                for u in strs(low, "addusers").unwrap_or_default() {
                    let _ = g(
                        "adduser",
                        vec![Value::from(name.as_str()), Value::from(u)],
                        vec![],
                    );
                }
                comment(&mut r, format!("New group {name} created"));
                set(&mut r, "changes", ex::group_info(&name));
            } else {
                set(&mut r, "result", Value::Boolean(false));
                comment(&mut r, format!("Failed to create new group {name}"));
            }
            r
        }
    }
}

/// `group.absent`.
pub fn absent(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name = super::name_of(low);
    let mut r = ret::new(name.as_str(), true, "");
    if ex::group(&name).is_none() {
        comment(&mut r, "Group not present");
        return r;
    }
    if ctx.opts.test {
        return would(r, format!("Group {name} is set for removal"));
    }
    let ok = salt_execmods::run::run(&["groupdel", &name]).is_ok_and(|o| o.retcode == 0);
    set(&mut r, "result", Value::Boolean(ok));
    if ok {
        set(
            &mut r,
            "changes",
            map(vec![(name.as_str(), Value::from(""))]),
        );
        comment(&mut r, format!("Removed group {name}"));
    } else {
        comment(&mut r, format!("Failed to remove group {name}"));
    }
    r
}
