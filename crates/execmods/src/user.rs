//! `user.*` (`salt/modules/useradd.py`) and `group.*` (`groupadd.py`): local accounts read
//! from `/etc/passwd`/`/etc/group`, changed with shadow-utils (`useradd`, `usermod`,
//! `userdel`, `groupadd`, `groupdel`, `gpasswd`) as Salt runs them.

use rmpv::Value;

use crate::run::run;
use crate::{Args, Ret, map, text};

/// A `/etc/passwd` entry.
#[derive(Debug, Clone)]
pub struct Passwd {
    /// Login name.
    pub name: String,
    /// Password field.
    pub passwd: String,
    /// Uid.
    pub uid: u32,
    /// Primary gid.
    pub gid: u32,
    /// GECOS.
    pub gecos: String,
    /// Home directory.
    pub home: String,
    /// Login shell.
    pub shell: String,
}

/// A `/etc/group` entry.
#[derive(Debug, Clone)]
pub struct Group {
    /// Group name.
    pub name: String,
    /// Password field.
    pub passwd: String,
    /// Gid.
    pub gid: u32,
    /// Members.
    pub members: Vec<String>,
}

fn read(path: &str) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(':').map(str::to_owned).collect())
        .collect()
}

/// Every local user.
pub fn users() -> Vec<Passwd> {
    read("/etc/passwd")
        .into_iter()
        .filter(|f| f.len() >= 7)
        .map(|f| Passwd {
            name: f[0].clone(),
            passwd: f[1].clone(),
            uid: f[2].parse().unwrap_or(0),
            gid: f[3].parse().unwrap_or(0),
            gecos: f[4].clone(),
            home: f[5].clone(),
            shell: f[6].clone(),
        })
        .collect()
}

/// Every local group.
pub fn groups() -> Vec<Group> {
    read("/etc/group")
        .into_iter()
        .filter(|f| f.len() >= 4)
        .map(|f| Group {
            name: f[0].clone(),
            passwd: f[1].clone(),
            gid: f[2].parse().unwrap_or(0),
            members: f[3]
                .split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
        })
        .collect()
}

/// The user `name`.
pub fn user(name: &str) -> Option<Passwd> {
    users().into_iter().find(|u| u.name == name)
}

/// The group `name`.
pub fn group(name: &str) -> Option<Group> {
    groups().into_iter().find(|g| g.name == name)
}

/// `user.list_groups`: the primary group and every group listing the user, sorted.
pub fn list_groups(name: &str) -> Vec<String> {
    let gid = user(name).map(|u| u.gid);
    let mut v: Vec<String> = groups()
        .into_iter()
        .filter(|g| Some(g.gid) == gid || g.members.iter().any(|m| m == name))
        .map(|g| g.name)
        .collect();
    v.sort();
    v.dedup();
    v
}

fn strs(v: Vec<String>) -> Value {
    Value::Array(v.into_iter().map(Value::from).collect())
}

/// `user.info` as Salt formats it (`{}` when there is no such user).
pub fn user_info(name: &str) -> Value {
    let Some(u) = user(name) else {
        return Value::Map(vec![]);
    };
    let mut g: Vec<String> = u.gecos.splitn(5, ',').map(str::to_owned).collect();
    g.resize(5, String::new());
    map(vec![
        ("gid", Value::from(u.gid)),
        ("groups", strs(list_groups(name))),
        ("home", Value::from(u.home)),
        ("name", Value::from(u.name)),
        ("passwd", Value::from(u.passwd)),
        ("shell", Value::from(u.shell)),
        ("uid", Value::from(u.uid)),
        ("fullname", Value::from(g[0].clone())),
        ("roomnumber", Value::from(g[1].clone())),
        ("workphone", Value::from(g[2].clone())),
        ("homephone", Value::from(g[3].clone())),
        ("other", Value::from(g[4].clone())),
    ])
}

/// `group.info` (`{}` when there is no such group).
pub fn group_info(name: &str) -> Value {
    match group(name) {
        None => Value::Map(vec![]),
        Some(g) => map(vec![
            ("name", Value::from(g.name)),
            ("passwd", Value::from(g.passwd)),
            ("gid", Value::from(g.gid)),
            ("members", strs(g.members)),
        ]),
    }
}

fn ok(argv: &[&str]) -> Ret {
    let out = run(argv)?;
    Ok(Value::Boolean(out.retcode == 0))
}

fn usermod(name: &str, flag: &str, val: &str) -> Ret {
    let out = run(&["usermod", flag, val, name])?;
    if out.retcode != 0 {
        return Err(out.stderr);
    }
    Ok(Value::Boolean(true))
}

/// `user.add`.
pub fn add(a: &Args<'_>) -> Ret {
    a.refuse(&["root", "loginclass", "nologinit", "local"])?;
    if a.kwarg("unique").is_some_and(|v| !crate::is_true(v)) {
        return Err("user.add: unique=False is not supported by salt-rs".into());
    }
    let name = a.req(0, "name")?;
    let mut argv: Vec<String> = vec!["useradd".into()];
    if let Some(s) = a.str(4, "shell") {
        argv.extend(["-s".into(), s]);
    }
    if let Some(u) = a.str(1, "uid") {
        argv.extend(["-u".into(), u]);
    }
    let groups: Vec<String> = match a.get(3, "groups") {
        Some(Value::Array(gs)) => gs.iter().map(text).collect(),
        _ => Vec::new(),
    };
    let usergroup = a
        .kwarg("usergroup")
        .filter(|v| !v.is_nil())
        .map(crate::is_true);
    if let Some(g) = a.str(2, "gid") {
        argv.extend(["-g".into(), g]);
    } else if usergroup == Some(true) {
        argv.push("-U".into());
    } else if groups.contains(&name) && usergroups_enab() {
        let gid = group(&name).map(|g| g.gid.to_string()).unwrap_or_default();
        argv.extend(["-g".into(), gid]);
    }
    if usergroup == Some(false) {
        argv.push("-N".into());
    }
    let create = a.kwarg("createhome").map(crate::is_true).unwrap_or(true);
    argv.push(if create { "-m" } else { "-M" }.into());
    if let Some(h) = a.str(5, "home") {
        argv.extend(["-d".into(), h]);
    }
    if a.flag("system", false) {
        argv.push("-r".into());
    }
    let gecos: Vec<String> = ["fullname", "roomnumber", "workphone", "homephone", "other"]
        .iter()
        .map(|k| a.str(99, k).unwrap_or_default())
        .collect();
    if gecos.iter().any(|g| !g.is_empty()) {
        argv.extend([
            "-c".into(),
            gecos.join(",").trim_end_matches(',').to_owned(),
        ]);
    }
    argv.push(name.clone());
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    if run(&refs)?.retcode != 0 {
        return Ok(Value::Boolean(false));
    }
    if !groups.is_empty() {
        chgroups(&name, &groups, false)?;
    }
    Ok(Value::Boolean(true))
}

/// `/etc/login.defs` says `USERGROUPS_ENAB yes`.
fn usergroups_enab() -> bool {
    std::fs::read_to_string("/etc/login.defs")
        .unwrap_or_default()
        .lines()
        .find(|l| l.get(..15).is_some_and(|h| h.contains("USERGROUPS_ENAB")))
        .is_some_and(|l| l.contains("yes"))
}

/// `user.chgroups`: `usermod [-a] -G` unless the groups are already those.
pub fn chgroups(name: &str, groups: &[String], append: bool) -> Ret {
    let mut have = list_groups(name);
    have.sort();
    let mut want = groups.to_vec();
    want.sort();
    want.dedup();
    if have == want {
        return Ok(Value::Boolean(true));
    }
    let mut argv = vec!["usermod"];
    if append {
        argv.push("-a");
    }
    let joined = groups.join(",");
    argv.extend(["-G", joined.as_str(), name]);
    ok(&argv)
}

/// Dispatch `user.<f>`.
pub fn call_user(f: &str, a: &Args<'_>) -> Ret {
    match f {
        "getent" => Ok(Value::Array(
            users().iter().map(|u| user_info(&u.name)).collect(),
        )),
        "add" => add(a),
        _ => {
            let name = a.req(0, "name")?;
            let Some(u) = user(&name) else {
                return match f {
                    "info" => Ok(Value::Map(vec![])),
                    "list_groups" => Ok(Value::Array(vec![])),
                    "delete" => ok(&["userdel", &name]),
                    _ => Err(format!("User '{name}' does not exist")),
                };
            };
            match f {
                "info" => Ok(user_info(&name)),
                "list_groups" => Ok(strs(list_groups(&name))),
                "delete" => {
                    let mut argv = vec!["userdel"];
                    if a.flag("remove", false) {
                        argv.push("-r");
                    }
                    if a.flag("force", false) {
                        argv.push("-f");
                    }
                    argv.push(&name);
                    ok(&argv)
                }
                "chhome" => {
                    let home = a.req(1, "home")?;
                    if home == u.home {
                        return Ok(Value::Boolean(true));
                    }
                    let flags = if a.flag("persist", false) {
                        "-md"
                    } else {
                        "-d"
                    };
                    usermod(&name, flags, &home)?;
                    Ok(Value::Boolean(user(&name).map(|x| x.home) == Some(home)))
                }
                "chshell" => {
                    let shell = a.req(1, "shell")?;
                    if shell == u.shell {
                        return Ok(Value::Boolean(true));
                    }
                    usermod(&name, "-s", &shell)?;
                    Ok(Value::Boolean(user(&name).map(|x| x.shell) == Some(shell)))
                }
                "chuid" | "chgid" => {
                    let (flag, key) = if f == "chuid" {
                        ("-u", "uid")
                    } else {
                        ("-g", "gid")
                    };
                    let val = a.req(1, key)?;
                    let cur = if f == "chuid" { u.uid } else { u.gid };
                    if val == cur.to_string() {
                        return Ok(Value::Boolean(true));
                    }
                    usermod(&name, flag, &val)?;
                    let now = user(&name).map(|x| if f == "chuid" { x.uid } else { x.gid });
                    Ok(Value::Boolean(now.map(|n| n.to_string()) == Some(val)))
                }
                "chgroups" => {
                    let gs = match a.get(1, "groups") {
                        Some(Value::Array(v)) => v.iter().map(text).collect::<Vec<_>>(),
                        Some(v) => text(v).split(',').map(str::to_owned).collect(),
                        None => Vec::new(),
                    };
                    chgroups(&name, &gs, a.flag("append", false))
                }
                _ => Err(format!("'user.{f}' is not available.")),
            }
        }
    }
}

/// Dispatch `group.<f>`.
pub fn call_group(f: &str, a: &Args<'_>) -> Ret {
    if f == "getent" {
        return Ok(Value::Array(
            groups().iter().map(|g| group_info(&g.name)).collect(),
        ));
    }
    let name = a.req(0, "name")?;
    match f {
        "info" => Ok(group_info(&name)),
        "add" => {
            a.refuse(&["root", "non_unique", "local"])?;
            let mut argv: Vec<String> = vec!["groupadd".into()];
            if let Some(g) = a.str(1, "gid") {
                argv.extend(["-g".into(), g]);
            }
            if a.flag("system", false) {
                argv.push("-r".into());
            }
            argv.push(name);
            let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
            let out = run(&refs)?;
            Ok(Value::Boolean(out.retcode == 0))
        }
        "delete" => ok(&["groupdel", &name]),
        "adduser" | "deluser" => {
            let user = a.req(1, "username")?;
            let flag = if f == "adduser" { "-a" } else { "-d" };
            let out = run(&["gpasswd", flag, &user, &name])?;
            Ok(Value::Boolean(out.retcode == 0))
        }
        _ => Err(format!("'group.{f}' is not available.")),
    }
}
