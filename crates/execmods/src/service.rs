//! `service.*` on systemd (`salt/modules/systemd_service.py`): the same `systemctl`
//! command lines (without `systemd-run --scope`, which salt-rs never uses: Salt's
//! `systemd.scope: False`). SysV init scripts are not handled.

use rmpv::Value;

use crate::run::{Out, run};
use crate::{Args, Ret};

const UNIT_TYPES: &[&str] = &[
    ".service",
    ".socket",
    ".device",
    ".mount",
    ".automount",
    ".swap",
    ".target",
    ".path",
    ".timer",
];

fn unit(name: &str) -> String {
    if UNIT_TYPES.iter().any(|s| name.ends_with(s)) {
        name.to_owned()
    } else {
        format!("{name}.service")
    }
}

fn systemctl(action: &[&str], name: Option<&str>, no_block: bool) -> Result<Out, String> {
    let mut argv: Vec<String> = vec!["systemctl".into()];
    if no_block {
        argv.push("--no-block".into());
    }
    argv.extend(action.iter().map(|s| s.to_string()));
    if let Some(n) = name {
        argv.push(unit(n));
    }
    if argv.iter().any(|a| a == "status") {
        argv.extend(["-n".into(), "0".into()]);
    }
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    run(&refs)
}

/// `_check_available`: `systemctl status` exits 0..3 (systemd >= 231).
pub fn available(name: &str) -> Result<bool, String> {
    let out = systemctl(&["status"], Some(name), false)?;
    Ok((0..4).contains(&out.retcode))
}

fn check_for_unit_changes(name: &str) -> Result<(), String> {
    let path = format!("/etc/systemd/system/{}", unit(name));
    let untracked = std::path::Path::new(&path).is_file() && !available(name)?;
    let changed = || -> Result<bool, String> {
        let out = systemctl(&["status"], Some(name), false)?;
        Ok(out
            .stdout
            .to_lowercase()
            .contains("'systemctl daemon-reload'"))
    };
    if untracked || changed()? {
        let out = systemctl(&["--system", "daemon-reload"], None, false)?;
        if out.retcode != 0 {
            return Err(format!(
                "Problem performing systemctl daemon-reload: {}",
                out.stdout
            ));
        }
    }
    Ok(())
}

fn check_unmask(a: &Args<'_>) -> Result<(), String> {
    a.refuse(&["unmask", "unmask_runtime", "root"])
}

fn act(action: &str, name: &str, no_block: bool, raise: bool) -> Ret {
    check_for_unit_changes(name)?;
    let out = systemctl(&[action], Some(name), no_block)?;
    if raise && out.retcode != 0 {
        return Err(out.stderr);
    }
    Ok(Value::Boolean(out.retcode == 0))
}

/// `service.enabled`.
pub fn enabled(name: &str) -> Result<bool, String> {
    let out = systemctl(&["is-enabled"], Some(name), false)?;
    if out.retcode == 0 && out.stdout != "alias" {
        return Ok(true);
    }
    if out.stdout == "alias" {
        let id = systemctl(&["show"], Some(name), false)
            .and_then(|_| run(&["systemctl", "show", &unit(name), "-P", "Id"]))?;
        return Ok(systemctl(&["is-enabled"], Some(&id.stdout), false)?.retcode == 0);
    }
    Ok(false)
}

/// `service.status` of one unit (`systemctl is-active`).
pub fn status(name: &str) -> Result<bool, String> {
    check_for_unit_changes(name)?;
    Ok(systemctl(&["is-active"], Some(name), false)?.retcode == 0)
}

fn all_units() -> Result<Vec<String>, String> {
    let out = run(&[
        "systemctl",
        "--full",
        "--no-legend",
        "--no-pager",
        "list-unit-files",
    ])?;
    let mut v: Vec<String> = out
        .stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|u| u.strip_suffix(".service").map(str::to_owned))
        .collect();
    v.sort();
    v.dedup();
    Ok(v)
}

/// Dispatch `service.<f>`.
pub fn call(f: &str, a: &Args<'_>) -> Ret {
    if f == "get_all" {
        return Ok(Value::Array(
            all_units()?.into_iter().map(Value::from).collect(),
        ));
    }
    let name = a.req(0, "name")?;
    let minion = unit(&name) == "salt-minion.service";
    match f {
        "start" | "restart" | "reload" => {
            check_unmask(a)?;
            let default = f == "restart" && minion;
            act(f, &name, a.flag("no_block", default), true)
        }
        "stop" => act("stop", &name, a.flag("no_block", minion), false),
        "enable" => {
            check_unmask(a)?;
            act("enable", &name, a.flag("no_block", false), true)
        }
        "disable" => {
            a.refuse(&["root"])?;
            act("disable", &name, a.flag("no_block", false), false)
        }
        "status" => {
            if name.contains(['*', '?', '[']) {
                return Err("service.status: globs are not supported by salt-rs".into());
            }
            status(&name).map(Value::Boolean)
        }
        "enabled" => enabled(&name).map(Value::Boolean),
        "disabled" => enabled(&name).map(|e| Value::Boolean(!e)),
        "available" => available(&name).map(Value::Boolean),
        "missing" => available(&name).map(|e| Value::Boolean(!e)),
        _ => Err(format!("'service.{f}' is not available.")),
    }
}
