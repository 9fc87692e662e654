//! `user.present`, `user.absent` (`salt/states/user.py`; groups in `group.rs`) on `salt-execmods`' `user`/`group` modules (shadow-utils). Refused by name:
//! passwords and shadow fields (`password`, `empty_password`, `date`, `mindays`,
//! `maxdays`, `inactdays`, `warndays`, `expire`, `password_lock`), `optional_groups`,
//! the other GECOS fields, `loginclass`, `nologinit`, `local`, `unique: False`;
//! (`group.present` refuses `members`, `non_unique`, `local`.)

use rmpv::Value;
use salt_execmods::{Args, user as ex};

use super::ret::{self, comment, would};
use crate::engine::Ctx;
use crate::{set, truthy};
use salt_compat::map_get;
use salt_compat::py_str;

pub(super) fn strs(low: &Value, key: &str) -> Option<Vec<String>> {
    match map_get(low, key)? {
        Value::Array(a) => Some(a.iter().map(py_str).collect()),
        Value::Nil => None,
        v => Some(py_str(v).split(',').map(str::to_owned).collect()),
    }
}

pub(super) fn opt(low: &Value, key: &str) -> Option<String> {
    map_get(low, key).filter(|v| !v.is_nil()).map(py_str)
}

pub(super) fn py_list(v: &[String]) -> String {
    let items: Vec<String> = v.iter().map(|s| format!("'{s}'")).collect();
    format!("[{}]", items.join(", "))
}

fn gid_of(group: &str) -> Option<u32> {
    group
        .parse()
        .ok()
        .or_else(|| ex::group(group).map(|g| g.gid))
}

fn group_name(gid: u32) -> String {
    ex::groups()
        .into_iter()
        .find(|g| g.gid == gid)
        .map(|g| g.name)
        .unwrap_or_else(|| gid.to_string())
}

/// One wanted change: key, value as Salt prints it, value to apply.
type Change = (&'static str, String, Value);

/// `_changes`: `None` when the user does not exist.
fn changes(low: &Value, name: &str, allow: bool) -> Result<Option<Vec<Change>>, String> {
    let Some(u) = ex::user(name) else {
        return Ok(None);
    };
    let groups = strs(low, "groups");
    let remove = map_get(low, "remove_groups").is_none_or(truthy);
    let mut cur = ex::list_groups(name);
    let mut wanted: Vec<String> = groups.clone().unwrap_or_default();
    if !remove || groups.is_none() {
        wanted.extend(cur.iter().cloned());
    }
    wanted.sort();
    wanted.dedup();
    let mut out: Vec<Change> = Vec::new();
    let uid = opt(low, "uid");
    if let Some(x) = &uid
        && x != &u.uid.to_string()
    {
        out.push(("uid", x.clone(), Value::from(x.as_str())));
    }
    let gid = opt(low, "gid");
    if let Some(g) = &gid
        && g != &u.gid.to_string()
        && gid_of(g) != Some(u.gid)
    {
        out.push(("gid", g.clone(), Value::from(g.as_str())));
    }
    let default_grp = group_name(gid.as_deref().and_then(gid_of).unwrap_or(u.gid));
    let old_default = group_name(u.gid);
    cur.retain(|g| *g != default_grp);
    wanted.retain(|g| *g != default_grp);
    if old_default != default_grp {
        cur.retain(|g| *g != old_default);
    }
    if !wanted.contains(&name.to_owned()) {
        cur.retain(|g| g != name);
    }
    let differ = {
        let (mut c, mut w) = (cur.clone(), wanted.clone());
        c.sort();
        c.dedup();
        w.sort();
        if c == w || (!remove && w.iter().all(|x| c.contains(x))) {
            false
        } else if remove {
            true
        } else {
            w.iter().any(|x| !c.contains(x))
        }
    };
    if differ && (!wanted.is_empty() || remove) {
        let v = Value::Array(wanted.iter().cloned().map(Value::from).collect());
        out.push(("groups", py_list(&wanted), v));
    }
    let home = opt(low, "home");
    if let Some(h) = &home
        && *h != u.home
    {
        out.push(("home", h.clone(), Value::from(h.as_str())));
    }
    if map_get(low, "createhome").is_none_or(truthy) {
        let newhome = home.clone().unwrap_or(u.home.clone());
        if !std::path::Path::new(&newhome).is_dir() {
            out.push(("homeDoesNotExist", newhome.clone(), Value::from(newhome)));
        }
    }
    if let Some(s) = opt(low, "shell")
        && s != u.shell
    {
        out.push(("shell", s.clone(), Value::from(s)));
    }
    if let Some(f) = opt(low, "fullname") {
        let cur_full = u.gecos.split(',').next().unwrap_or("").to_owned();
        if f != cur_full {
            out.push(("fullname", f.clone(), Value::from(f)));
        }
    }
    if !allow {
        let mut errs = Vec::new();
        for (k, v, _) in &out {
            let (cur, flag) = match *k {
                "uid" => (u.uid, "allow_uid_change"),
                "gid" => (u.gid, "allow_gid_change"),
                _ => continue,
            };
            let allowed = map_get(low, flag).is_some_and(truthy);
            if !allowed {
                errs.push(format!(
                    "Changing {k} ({cur} -> {v}) not permitted, set {flag} to True to force this change. Note that this will not change file ownership."
                ));
            }
        }
        if !errs.is_empty() {
            return Err(format!(
                "Encountered error checking for needed changes\nAdditional info follows:\n\n- {}",
                errs.join("\n- ")
            ));
        }
    }
    Ok(Some(out))
}

fn exec_user(fun: &str, pos: &[Value], kw: &[(String, Value)]) -> Result<Value, String> {
    salt_execmods::user::call_user(fun, &Args::new(&format!("user.{fun}"), pos, kw))
}

fn user_present(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name = super::name_of(low);
    let mut r = ret::new(
        name.as_str(),
        true,
        &format!("User {name} is present and up to date"),
    );
    for k in [
        "password",
        "hash_password",
        "empty_password",
        "date",
        "mindays",
        "maxdays",
        "inactdays",
        "warndays",
        "expire",
        "password_lock",
        "optional_groups",
        "roomnumber",
        "workphone",
        "homephone",
        "other",
        "loginclass",
        "nologinit",
        "local",
        "win_homedrive",
        "win_profile",
        "win_logonscript",
        "win_description",
    ] {
        if map_get(low, k).is_some_and(|v| truthy(v) || *v == Value::from("")) {
            set(&mut r, "result", Value::Boolean(false));
            let msg = format!("user.present option '{k}' is not supported by salt-rs");
            comment(&mut r, msg);
            return r;
        }
    }
    if let Some(f) = opt(low, "fullname")
        && f.contains(',')
    {
        comment(&mut r, format!("Unsupported char ',' in {f}"));
        set(&mut r, "result", Value::Boolean(false));
        return r;
    }
    let groups = strs(low, "groups");
    let missing: Vec<String> = groups
        .iter()
        .flatten()
        .filter(|g| ex::group(g).is_none())
        .cloned()
        .collect();
    if !missing.is_empty() && !ctx.opts.test {
        let msg = format!(
            "The following group(s) are not present: {}",
            missing.join(",")
        );
        comment(&mut r, msg);
        set(&mut r, "result", Value::Boolean(false));
        return r;
    }
    let ch = match changes(low, &name, false) {
        Ok(c) => c,
        Err(e) => {
            set(&mut r, "result", Value::Boolean(false));
            comment(&mut r, e);
            return r;
        }
    };
    let remove = map_get(low, "remove_groups").is_none_or(truthy);
    match ch {
        Some(ch) if !ch.is_empty() => {
            if ctx.opts.test {
                set(&mut r, "result", Value::Nil);
                let mut c = String::from("The following user attributes are set to be changed:\n");
                for (k, v, _) in &ch {
                    let k = if *k == "group" && !remove {
                        "ensure groups"
                    } else {
                        k
                    };
                    c.push_str(&format!("{k}: {v}\n"));
                }
                if !missing.is_empty() {
                    c.push_str(&format!(
                        "groups (pending creation): {}\n",
                        missing.join(",")
                    ));
                }
                comment(&mut r, c);
                return r;
            }
            let pre = ex::user_info(&name);
            let n = Value::from(name.as_str());
            let has = |k: &str| ch.iter().any(|(x, _, _)| *x == k);
            let val = |k: &str| {
                ch.iter()
                    .find(|(x, _, _)| *x == k)
                    .map(|(_, _, v)| v.clone())
            };
            let persist = vec![(
                "persist".to_owned(),
                map_get(low, "persist_home")
                    .cloned()
                    .unwrap_or(Value::Boolean(false)),
            )];
            if let Some(h) = val("home").filter(|_| !has("homeDoesNotExist")) {
                let _ = exec_user("chhome", &[n.clone(), h], &persist);
            }
            if let Some(h) = val("homeDoesNotExist") {
                let _ = exec_user("chhome", &[n.clone(), h.clone()], &persist);
                let dir = py_str(&h);
                if !std::path::Path::new(&dir).is_dir() && std::fs::create_dir_all(&dir).is_ok() {
                    use std::os::unix::fs::PermissionsExt;
                    let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755));
                    let (uid, gid) = (
                        map_get(&pre, "uid").and_then(Value::as_u64),
                        map_get(&pre, "gid").and_then(Value::as_u64),
                    );
                    let _ = nix::unistd::chown(
                        dir.as_str(),
                        uid.map(|u| nix::unistd::Uid::from_raw(u as u32)),
                        gid.map(|g| nix::unistd::Gid::from_raw(g as u32)),
                    );
                }
            }
            for (k, f) in [("uid", "chuid"), ("gid", "chgid"), ("shell", "chshell")] {
                if let Some(v) = val(k) {
                    let _ = exec_user(f, &[n.clone(), v], &[]);
                }
            }
            if let Some(v) = val("fullname") {
                let _ = salt_execmods::run::run(&["usermod", "-c", &py_str(&v), &name]);
            }
            if let Some(v) = val("groups") {
                let kw = vec![("append".to_owned(), Value::Boolean(!remove))];
                let _ = exec_user("chgroups", &[n.clone(), v], &kw);
            }
            let post = ex::user_info(&name);
            let mut diff = Vec::new();
            if let Value::Map(m) = &post {
                for (k, v) in m {
                    let key = k.as_str().unwrap_or("");
                    if map_get(&pre, key) != Some(v) {
                        diff.push((key.to_owned(), v.clone()));
                    }
                }
            }
            if !diff.is_empty() {
                comment(&mut r, format!("Updated user {name}"));
                set(
                    &mut r,
                    "changes",
                    Value::Map(diff.into_iter().map(|(k, v)| (Value::from(k), v)).collect()),
                );
            }
            if let Ok(Some(left)) = changes(low, &name, true)
                && !left.is_empty()
            {
                let items: Vec<String> = left
                    .iter()
                    .map(|(k, v, _)| format!("'{k}': '{v}'"))
                    .collect();
                let msg = format!(
                    "These values could not be changed: {{{}}}",
                    items.join(", ")
                );
                comment(&mut r, msg);
                set(&mut r, "result", Value::Boolean(false));
            }
            r
        }
        Some(_) => r,
        None => {
            if ctx.opts.test {
                set(&mut r, "result", Value::Nil);
                let mut c = format!("User {name} set to be added");
                if !missing.is_empty() {
                    c.push_str(&format!(" (pending groups: {})", missing.join(",")));
                }
                comment(&mut r, c);
                return r;
            }
            let mut kw: Vec<(String, Value)> = Vec::new();
            for k in [
                "uid",
                "gid",
                "groups",
                "home",
                "shell",
                "unique",
                "system",
                "fullname",
                "createhome",
                "usergroup",
            ] {
                if let Some(v) = map_get(low, k).filter(|v| !v.is_nil()) {
                    kw.push((k.to_owned(), v.clone()));
                }
            }
            let created = exec_user("add", &[Value::from(name.as_str())], &kw);
            if created.as_ref().is_ok_and(truthy) {
                comment(&mut r, format!("New user {name} created"));
                let mut info = ex::user_info(&name);
                if map_get(low, "createhome").is_some_and(|v| !truthy(v)) {
                    set(&mut info, "home", Value::from(""));
                }
                set(&mut r, "changes", info);
            } else {
                set(&mut r, "result", Value::Boolean(false));
                comment(&mut r, format!("Failed to create new user {name}"));
            }
            r
        }
    }
}

fn user_absent(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name = super::name_of(low);
    let mut r = ret::new(name.as_str(), true, "");
    if ex::user(&name).is_none() {
        comment(&mut r, format!("User {name} is not present"));
        return r;
    }
    if ctx.opts.test {
        return would(r, format!("User {name} set for removal"));
    }
    let before = ex::list_groups(&name);
    let kw = vec![
        (
            "remove".to_owned(),
            map_get(low, "purge")
                .cloned()
                .unwrap_or(Value::Boolean(false)),
        ),
        (
            "force".to_owned(),
            map_get(low, "force")
                .cloned()
                .unwrap_or(Value::Boolean(false)),
        ),
    ];
    let ok = exec_user("delete", &[Value::from(name.as_str())], &kw).is_ok_and(|v| truthy(&v));
    set(&mut r, "result", Value::Boolean(ok));
    if ok {
        let mut ch: Vec<(Value, Value)> = before
            .iter()
            .filter(|g| ex::group(g).is_none())
            .map(|g| (Value::from(format!("{g} group")), Value::from("removed")))
            .collect();
        ch.push((Value::from(name.as_str()), Value::from("removed")));
        set(&mut r, "changes", Value::Map(ch));
        comment(&mut r, format!("Removed user {name}"));
    } else {
        comment(&mut r, format!("Failed to remove user {name}"));
    }
    r
}

/// Dispatch `user.<fun>` and `group.<fun>`.
pub fn call(ctx: &Ctx<'_>, full: &str, low: &Value) -> Value {
    match full {
        "user.present" => user_present(ctx, low),
        "user.absent" => user_absent(ctx, low),
        "group.present" => super::group::present(ctx, low),
        "group.absent" => super::group::absent(ctx, low),
        other => {
            let mut r = super::base_ret(low);
            comment(&mut r, format!("'{other}' is not available."));
            r
        }
    }
}
