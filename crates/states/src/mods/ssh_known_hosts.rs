//! `ssh_known_hosts.present`, `ssh_known_hosts.absent` (`salt/states/ssh_known_hosts.py`)
//! on the `ssh` module's known-host functions, run with `ssh-keygen` as Salt runs them.
//! Fetching a host's keys from the network (`ssh-keyscan`, what Salt does when `present`
//! is applied without `key`) is refused by name.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use rmpv::Value;
use salt_compat::{map_get, py_str};

use super::args::Args;
use super::ret::{self, comment, fail};
use super::ssh_keys::{fingerprint, path_join, py_split};
use crate::engine::Ctx;
use crate::{map, set};

/// `ssh_known_hosts.present`.
pub const PRESENT: Args = Args {
    honoured: &[
        "name",
        "user",
        "fingerprint",
        "key",
        "port",
        "enc",
        "config",
        "hash_known_hosts",
        "timeout",
        "fingerprint_hash_type",
    ],
    refused: &[],
    apply_only: &[],
};

/// `ssh_known_hosts.absent`.
pub const ABSENT: Args = Args {
    honoured: &["name", "user", "config"],
    refused: &[],
    apply_only: &[],
};

/// An error dict of Salt's module (`{"status": "error", "error": ...}`).
type ModError = String;

/// A known-hosts entry as Salt's `_parse_openssh_output` gives it.
struct Entry {
    hostname: String,
    key: String,
    enc: String,
    fingerprint: String,
}

impl Entry {
    fn to_value(&self) -> Value {
        map(vec![
            ("hostname", Value::from(self.hostname.as_str())),
            ("key", Value::from(self.key.as_str())),
            ("enc", Value::from(self.enc.as_str())),
            ("fingerprint", Value::from(self.fingerprint.as_str())),
        ])
    }
}

fn entries_value(e: Option<&[Entry]>) -> Value {
    e.map_or(Value::Nil, |e| {
        Value::Array(e.iter().map(Entry::to_value).collect())
    })
}

/// `cmd.run` of `argv`: stdout and stderr on one pipe, trailing whitespace stripped.
fn cmd_run(argv: &[&str]) -> Result<String, String> {
    let mut full = vec!["/bin/sh", "-c", "exec \"$@\" 2>&1", "sh"];
    full.extend_from_slice(argv);
    salt_execmods::run::run(&full).map(|o| o.stdout)
}

/// Salt's `_hostname_and_port_to_ssh_hostname`.
fn ssh_hostname(host: &str, port: Option<&Value>) -> String {
    match port {
        Some(p) if !p.is_nil() && !default_port(p) && !is_falsy(p) => {
            format!("[{host}]:{}", py_str(p))
        }
        _ => host.to_owned(),
    }
}

fn default_port(p: &Value) -> bool {
    p.as_i64() == Some(22)
}

fn is_falsy(v: &Value) -> bool {
    match v {
        Value::Nil => true,
        Value::Boolean(b) => !b,
        Value::Integer(i) => i.as_i64() == Some(0),
        Value::String(s) => s.as_bytes().is_empty(),
        _ => false,
    }
}

/// Salt's `_get_known_hosts_file`.
fn known_hosts_file(config: Option<&str>, user: Option<&str>) -> Result<String, ModError> {
    let config = match (config, user) {
        (Some(c), _) if !c.is_empty() => c,
        (_, Some(_)) => ".ssh/known_hosts",
        _ => "/etc/ssh/ssh_known_hosts",
    };
    if config.starts_with('/') {
        return Ok(config.to_owned());
    }
    match user {
        Some(u) => match salt_execmods::user::user(u) {
            Some(pw) => Ok(path_join(&pw.home, config)),
            None => Err(format!("User {u} does not exist")),
        },
        None => Err("Cannot determine absolute path to file.".into()),
    }
}

/// Salt's `get_known_host_entries` (`None` when there are none).
fn host_entries(
    user: Option<&str>,
    host: &str,
    config: Option<&str>,
    port: Option<&Value>,
    hash_type: Option<&str>,
) -> Result<Result<Option<Vec<Entry>>, ModError>, String> {
    let full = match known_hosts_file(config, user) {
        Ok(f) => f,
        Err(e) => return Ok(Err(e)),
    };
    let out = cmd_run(&["ssh-keygen", "-F", &ssh_hostname(host, port), "-f", &full])?;
    let mut entries = Vec::new();
    for line in out.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parts = py_split(line, None);
        let [hostname, enc, key] = parts.as_slice() else {
            continue;
        };
        let Some(fp) = fingerprint(key, hash_type)? else {
            continue;
        };
        entries.push(Entry {
            hostname: hostname.clone(),
            key: key.clone(),
            enc: enc.clone(),
            fingerprint: fp,
        });
    }
    Ok(Ok((!entries.is_empty()).then_some(entries)))
}

fn chown_to(path: &str, user: Option<&str>) {
    let Some(pw) = user.and_then(salt_execmods::user::user) else {
        return;
    };
    if nix::unistd::geteuid().is_root() {
        let _ = std::os::unix::fs::chown(path, Some(pw.uid), Some(pw.gid));
    }
}

fn mode_of(path: &str) -> Option<u32> {
    std::fs::metadata(path).ok().map(|m| m.permissions().mode())
}

fn chmod(path: &str, mode: u32) {
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
}

/// The state's arguments.
struct Present<'a> {
    name: String,
    user: Option<String>,
    config: String,
    key: Option<String>,
    fingerprint: Option<String>,
    enc: Option<String>,
    port: Option<&'a Value>,
    hash: bool,
    hash_type: Option<String>,
}

fn opt_text(low: &Value, arg: &str) -> Option<String> {
    map_get(low, arg).filter(|v| !is_falsy(v)).map(py_str)
}

/// Salt's `set_known_host` when it needs no network: `Ok(None)` for "exists", else the
/// `old` and `new` entries.
fn set_known_host(p: &Present<'_>) -> Result<Result<Option<(Value, Value)>, ModError>, String> {
    if p.port.is_some_and(|v| !v.is_nil() && !default_port(v)) && p.hash {
        return Ok(Err(
            "argument port can not be used in conjunction with argument hash_known_hosts".into(),
        ));
    }
    let (user, config) = (p.user.as_deref(), Some(p.config.as_str()));
    let hash_type = p.hash_type.as_deref();
    let stored = match host_entries(user, &p.name, config, p.port, hash_type)? {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    let stored_keys: Vec<&str> = stored
        .iter()
        .flatten()
        .filter(|h| p.enc.as_ref().is_none_or(|e| *e == h.enc))
        .map(|h| h.key.as_str())
        .collect();
    let update = match (&stored, &p.fingerprint, &p.key) {
        (None, _, _) => true,
        (Some(s), Some(f), _) if !s.iter().any(|h| &h.fingerprint == f) => true,
        (_, _, Some(k)) if !stored_keys.contains(&k.as_str()) => true,
        _ => false,
    };
    let check = p.key.is_none() && p.fingerprint.is_none();
    if !update && !check {
        return Ok(Ok(None));
    }
    let Some(key) = &p.key else {
        return Err(
            "ssh_known_hosts.present without 'key' (fetching the host's keys with ssh-keyscan) \
             is not supported by salt-rs"
                .into(),
        );
    };
    let full = match known_hosts_file(config, user) {
        Ok(f) => f,
        Err(e) => return Ok(Err(e)),
    };
    let enc = p.enc.clone().unwrap_or_else(|| "None".into());
    let origmode = if Path::new(&full).is_file() {
        let mode = mode_of(&full);
        let out = cmd_run(&[
            "ssh-keygen",
            "-F",
            &ssh_hostname(&p.name, p.port),
            "-f",
            &full,
        ])?;
        let lines: Vec<&str> = out.lines().collect();
        let mut remove = Vec::new();
        for pair in lines.chunks(2) {
            let no = pair[0]
                .split_whitespace()
                .last()
                .and_then(|n| n.parse::<usize>().ok());
            let line_enc = pair.get(1).and_then(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                w.len().checked_sub(2).map(|i| w[i].to_owned())
            });
            if let (Some(no), Some(le)) = (no, line_enc)
                && p.enc.as_ref().is_none_or(|e| *e == le)
            {
                remove.push(no);
            }
        }
        if !remove.is_empty() {
            let text = std::fs::read(&full).map_err(|e| e.to_string())?;
            let text = String::from_utf8_lossy(&text)
                .replace("\r\n", "\n")
                .replace('\r', "\n");
            let mut kept: Vec<&str> = text.split_inclusive('\n').collect();
            remove.sort_unstable();
            for no in remove.iter().rev() {
                if *no >= 1 && *no <= kept.len() {
                    kept.remove(no - 1);
                }
            }
            std::fs::write(&full, kept.concat()).map_err(|e| {
                format!("Couldn't remove old entry(ies) from known hosts file: '{e}'")
            })?;
        }
        mode
    } else {
        None
    };
    // Salt writes `[host]:port` only unhashed, for a port other than 22, a name without ':'.
    let ported = (!p.hash && !p.name.contains(':'))
        .then_some(p.port)
        .flatten()
        .filter(|v| !v.is_nil() && !default_port(v));
    let line = match ported {
        Some(port) => format!("[{}]:{} {enc} {key}\n", p.name, py_str(port)),
        None => format!("{} {enc} {key}\n", p.name),
    };
    let ssh_dir = Path::new(&full)
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    if !Path::new(&ssh_dir).exists() && std::fs::create_dir_all(&ssh_dir).is_ok() && user.is_some()
    {
        chown_to(&ssh_dir, user);
        chmod(&ssh_dir, 0o700);
    }
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&full)
            .map_err(|e| format!("Couldn't append to known hosts file: '{e}'"))?;
        f.write_all(line.as_bytes())
            .map_err(|e| format!("Couldn't append to known hosts file: '{e}'"))?;
    }
    chown_to(&full, user);
    chmod(&full, origmode.unwrap_or(0o600));
    if p.hash {
        let mode = mode_of(&full);
        cmd_run(&["ssh-keygen", "-H", "-f", &full])?;
        if let Some(m) = mode {
            chmod(&full, m);
        }
        chown_to(&full, user);
    }
    let mut entry = vec![
        ("hostname", Value::from(p.name.as_str())),
        ("enc", p.enc.as_deref().map_or(Value::Nil, Value::from)),
        ("key", Value::from(key.as_str())),
    ];
    if let Some(port) = ported {
        // Salt sets `entry["port"]` when it writes `[host]:port`.
        entry.push(("port", port.clone()));
    }
    let new = Value::Array(vec![map(entry)]);
    Ok(Ok(Some((entries_value(stored.as_deref()), new))))
}

fn present(ctx: &Ctx<'_>, low: &Value) -> Value {
    let test = ctx.opts.test;
    let mut r = ret::new(super::name_of(low), !test, "");
    if test {
        set(&mut r, "result", Value::Nil);
    }
    let user = opt_text(low, "user");
    let config = opt_text(low, "config").unwrap_or_else(|| {
        if user.is_some() {
            ".ssh/known_hosts"
        } else {
            "/etc/ssh/ssh_known_hosts"
        }
        .to_owned()
    });
    if user.is_none() && !config.starts_with('/') {
        return fail(
            r,
            "If not specifying a \"user\", specify an absolute \"config\".".into(),
        );
    }
    let p = Present {
        name: super::name_of(low),
        user,
        config,
        key: opt_text(low, "key"),
        fingerprint: opt_text(low, "fingerprint"),
        enc: opt_text(low, "enc"),
        port: map_get(low, "port"),
        hash: map_get(low, "hash_known_hosts").is_none_or(|v| !is_falsy(v)),
        hash_type: opt_text(low, "fingerprint_hash_type"),
    };
    let (name, config) = (&p.name, &p.config);
    if test {
        if p.key.is_some() && p.fingerprint.is_some() {
            return fail(
                r,
                "Specify either \"key\" or \"fingerprint\", not both.".into(),
            );
        }
        if p.key.is_some() && p.enc.is_none() {
            return fail(
                r,
                "Required argument \"enc\" if using \"key\" argument.".into(),
            );
        }
        let entries = match host_entries(
            p.user.as_deref(),
            name,
            Some(config),
            p.port,
            p.hash_type.as_deref(),
        ) {
            Ok(Ok(e)) => e,
            Ok(Err(e)) => return fail(r, e),
            Err(e) => return raised(r, &e),
        };
        let answer = match (&entries, &p.key, &p.fingerprint) {
            (None, _, _) => "add",
            (Some(e), Some(k), _) => {
                if e.iter().any(|h| &h.key == k) {
                    "exists"
                } else {
                    "update"
                }
            }
            (Some(e), None, Some(f)) => {
                if e.iter().any(|h| &h.fingerprint == f) {
                    "exists"
                } else {
                    "update"
                }
            }
            _ => "exists",
        };
        return match answer {
            "exists" => {
                set(&mut r, "result", Value::Boolean(true));
                comment(&mut r, format!("Host {name} is already in {config}"));
                r
            }
            "add" => ret::would(r, format!("Key for {name} is set to be added to {config}")),
            _ => ret::would(
                r,
                format!("Key for {name} is set to be updated in {config}"),
            ),
        };
    }
    match set_known_host(&p) {
        Err(e) => raised(r, &e),
        Ok(Err(e)) => fail(r, e),
        Ok(Ok(None)) => {
            comment(&mut r, format!("{name} already exists in {config}"));
            r
        }
        Ok(Ok(Some((old, new)))) => {
            let key = p.key.as_deref().unwrap_or_default();
            ret::changed(
                r,
                false,
                map(vec![("old", old), ("new", new)]),
                format!("{name}'s key saved to {config} (key: {key})"),
            )
        }
    }
}

fn raised(r: Value, e: &str) -> Value {
    fail(r, format!("An exception occurred in this state: {e}"))
}

fn absent(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name = super::name_of(low);
    let mut r = ret::new(name.as_str(), true, "");
    let user = opt_text(low, "user");
    let config = opt_text(low, "config").unwrap_or_else(|| {
        if user.is_some() {
            ".ssh/known_hosts"
        } else {
            "/etc/ssh/ssh_known_hosts"
        }
        .to_owned()
    });
    if user.is_none() && !config.starts_with('/') {
        return fail(
            r,
            "If not specifying a \"user\", specify an absolute \"config\".".into(),
        );
    }
    let user = user.as_deref();
    let known = match host_entries(user, &name, Some(&config), None, None) {
        Ok(Ok(Some(k))) => k,
        Ok(Ok(None)) => {
            comment(&mut r, "Host is already absent");
            return r;
        }
        // Salt's module answers an error dict here, which is truthy: the state goes on
        // to `rm_known_host`, which fails with the same error.
        Ok(Err(_)) if ctx.opts.test => {
            return ret::would(
                r,
                format!("Key for {name} is set to be removed from {config}"),
            );
        }
        Ok(Err(e)) => return fail(r, e),
        Err(e) => return raised(r, &e),
    };
    if ctx.opts.test {
        return ret::would(
            r,
            format!("Key for {name} is set to be removed from {config}"),
        );
    }
    let full = match known_hosts_file(Some(&config), user) {
        Ok(f) => f,
        Err(e) => return fail(r, e),
    };
    if !Path::new(&full).is_file() {
        return fail(r, format!("Known hosts file {full} does not exist"));
    }
    let out = match cmd_run(&["ssh-keygen", "-R", &name, "-f", &full]) {
        Ok(o) => o,
        Err(e) => return raised(r, &e),
    };
    chown_to(&full, user);
    let old = entries_value(Some(&known));
    set(
        &mut r,
        "changes",
        map(vec![("old", old), ("new", Value::Nil)]),
    );
    comment(&mut r, out);
    r
}

/// Dispatch `ssh_known_hosts.<fun>`.
pub fn call(ctx: &Ctx<'_>, fun: &str, low: &Value) -> Value {
    match fun {
        "present" => present(ctx, low),
        "absent" => absent(ctx, low),
        other => {
            let mut r = super::base_ret(low);
            comment(
                &mut r,
                format!("'ssh_known_hosts.{other}' is not available."),
            );
            r
        }
    }
}
