//! `sysctl.*` (`salt/modules/linux_sysctl.py`): `default_config`, `show`, `get`, `assign`,
//! `persist`, through the `sysctl` tool as Salt runs it.

use std::path::Path;

use rmpv::Value;

use crate::run::{run, which_path};
use crate::{Args, Ret, map, text};

fn sysctl() -> Result<String, String> {
    which_path("sysctl")
        .map(|p| p.display().to_string())
        .ok_or_else(|| "Command 'sysctl' cannot be found".to_owned())
}

/// `sysctl.default_config`: `/etc/sysctl.d/99-salt.conf` on a host booted with systemd 207
/// or later, else `/etc/sysctl.conf`.
pub fn default_config() -> String {
    let booted = Path::new("/run/systemd/system").exists();
    let version = || {
        run(&["systemctl", "--version"])
            .ok()
            .and_then(|o| {
                let first = o.stdout.lines().next()?.to_owned();
                first.split_whitespace().nth(1)?.parse::<u32>().ok()
            })
            .unwrap_or(0)
    };
    if booted && version() >= 207 {
        "/etc/sysctl.d/99-salt.conf".into()
    } else {
        "/etc/sysctl.conf".into()
    }
}

/// `sysctl.show(config_file=...)`: the `key = value` pairs of `config` (`Ok(None)` when it
/// is missing: Salt's empty list; `Err` when unreadable: Salt's `None` after its logged error).
pub fn show_config(config: &str) -> Result<Option<Vec<(String, String)>>, String> {
    if !Path::new(config).exists() {
        return Ok(None);
    }
    let data = std::fs::read(config).map_err(|_| "Could not open sysctl file".to_owned())?;
    let mut out: Vec<(String, String)> = Vec::new();
    for line in String::from_utf8_lossy(&data).lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            let (k, v) = (k.trim_end().to_owned(), v.trim_start().to_owned());
            match out.iter_mut().find(|(x, _)| *x == k) {
                Some(slot) => slot.1 = v,
                None => out.push((k, v)),
            }
        }
    }
    Ok(Some(out))
}

/// `sysctl.show()`: the live values (`sysctl -a`).
fn show_live() -> Result<Vec<(String, String)>, String> {
    let out = run(&[&sysctl()?, "-a"])?;
    Ok(out
        .stdout
        .lines()
        .filter_map(|l| l.split_once(" = "))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect())
}

/// `sysctl.get`: `sysctl -n NAME` as `cmd.run` returns it (stderr included).
pub fn get(name: &str) -> Result<String, String> {
    let out = run(&[&sysctl()?, "-n", name])?;
    Ok(match (out.stdout.is_empty(), out.stderr.is_empty()) {
        (_, true) => out.stdout,
        (true, false) => out.stderr,
        (false, false) => format!("{}\n{}", out.stdout, out.stderr),
    })
}

/// `sysctl.assign`: `sysctl -w NAME=VALUE`, `{name: new value}`.
pub fn assign(name: &str, value: &str) -> Ret {
    let tran: String = name
        .chars()
        .map(|c| match c {
            '.' => '/',
            '/' => '.',
            c => c,
        })
        .collect();
    if !Path::new(&format!("/proc/sys/{tran}")).exists() {
        return Err(format!("sysctl {name} does not exist"));
    }
    let out = run(&[&sysctl()?, "-w", &format!("{name}={value}")])?;
    let ok = single_spaced_eq(&out.stdout, name, value);
    if !ok || out.stderr.contains("Invalid argument") {
        let error = if out.retcode != 0 && !out.stderr.is_empty() {
            out.stderr
        } else {
            out.stdout
        };
        return Err(format!("sysctl -w failed: {error}"));
    }
    let (k, v) = out.stdout.split_once(" = ").unwrap_or((&out.stdout, ""));
    Ok(map(vec![(k, Value::from(v))]))
}

/// Salt's `^NAME\s+=\s+VALUE$` on the whole output.
fn single_spaced_eq(out: &str, name: &str, value: &str) -> bool {
    let ws1 = |s: &str| s.starts_with(char::is_whitespace);
    let Some(rest) = out.strip_prefix(name).filter(|r| ws1(r)) else {
        return false;
    };
    let Some(rest) = rest.trim_start().strip_prefix('=').filter(|r| ws1(r)) else {
        return false;
    };
    rest.trim_start() == value
}

/// Salt's `_sanitize_sysctl_value`: each run of whitespace as one tab.
fn sanitize(v: &str) -> String {
    let mut s = String::new();
    let mut in_ws = false;
    for c in v.chars() {
        if !c.is_whitespace() {
            s.push(c);
        } else if !in_ws {
            s.push('\t');
        }
        in_ws = c.is_whitespace();
    }
    s
}

/// `sysctl.persist`: "Updated" or "Already set".
pub fn persist(name: &str, value: &str, config: Option<&str>) -> Result<&'static str, String> {
    let config = config.map(str::to_owned).unwrap_or_else(default_config);
    let path = Path::new(&config);
    if !path.is_file() {
        if let Some(dir) = path.parent().filter(|d| !d.exists()) {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        std::fs::write(path, "#\n# Kernel sysctl configuration\n#\n")
            .map_err(|_| format!("Could not write to file: {config}"))?;
    }
    let data = std::fs::read(path).map_err(|_| format!("Could not read from file: {config}"))?;
    let data = String::from_utf8_lossy(&data);
    let mut nlines: Vec<String> = Vec::new();
    let mut edited = false;
    for line in data.split_inclusive('\n') {
        let Some((k, v)) = line.split_once('=') else {
            nlines.push(line.to_owned());
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        if k.starts_with('#') || k != name {
            nlines.push(line.to_owned());
            continue;
        }
        let want = sanitize(value);
        if sanitize(v) == want {
            if sanitize(&get(name)?) != want {
                assign(name, value)?;
                return Ok("Updated");
            }
            return Ok("Already set");
        }
        nlines.push(format!("{name} = {value}\n"));
        edited = true;
    }
    if !edited {
        nlines.push(format!("{name} = {value}\n"));
    }
    std::fs::write(path, nlines.concat())
        .map_err(|_| format!("Could not write to file: {config}"))?;
    assign(name, value)?;
    Ok("Updated")
}

fn pairs(p: Vec<(String, String)>) -> Value {
    Value::Map(
        p.into_iter()
            .map(|(k, v)| (Value::from(k), Value::from(v)))
            .collect(),
    )
}

/// Dispatch `sysctl.<f>`.
pub fn call(f: &str, a: &Args<'_>) -> Ret {
    match f {
        "default_config" => Ok(Value::from(default_config())),
        "show" => match a.get(0, "config_file").filter(|v| crate::is_true(v)) {
            Some(c) => match show_config(&text(c)) {
                Ok(Some(p)) => Ok(pairs(p)),
                Ok(None) => Ok(Value::Array(vec![])),
                Err(_) => Ok(Value::Nil),
            },
            None => show_live().map(pairs),
        },
        "get" => get(&a.req(0, "name")?).map(Value::from),
        "assign" => assign(&a.req(0, "name")?, &a.req(1, "value")?),
        "persist" => persist(
            &a.req(0, "name")?,
            &a.req(1, "value")?,
            a.str(2, "config").as_deref(),
        )
        .map(Value::from),
        _ => Err(format!("'sysctl.{f}' is not available.")),
    }
}
