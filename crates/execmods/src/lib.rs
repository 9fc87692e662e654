//! Execution modules with the return shapes of Salt 3007's Python modules: `pkg`
//! (`aptpkg`/`dpkg_lowpkg`), `service` (`systemd_service`), `user` (`useradd`), `group`
//! (`groupadd`), `cron`, `hosts`, `ini` (`ini_manage`), `file`, `sysctl` (`linux_sysctl`),
//! `network`, `disk`, `status`.
//!
//! One entry point, [`call`], used by the state modules (`salt-states`) and by the minion's
//! function registry: `None` means the function is not one of this crate's, `Some(Err(msg))`
//! is Salt's `CommandExecutionError`/`SaltInvocationError` text.
//! Functions shell out to the same tools Salt runs (`dpkg-query`, `apt-get`, `systemctl`,
//! `useradd`, `crontab`...), found on `PATH`, with the same arguments.

pub mod apt_repo;
pub mod apt_sources;
mod args;
pub mod cron;
pub mod file;
pub mod file_edit;
pub mod hosts;
pub mod ini;
pub mod ini_call;
pub mod locale;
pub mod pkg;
pub mod pkg_hold;
pub mod pkg_match;
pub mod run;
mod salt_sigs;
pub mod service;
pub mod sigs;
pub mod sysctl;
pub mod sysinfo;
pub mod user;

use rmpv::Value;

pub use args::Args;
pub use sigs::ArgDefault;

/// What a function needs from the minion besides its arguments.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// The minion options (`hosts.file`, `cachedir`...), a map (or Nil).
    pub opts: &'a Value,
    /// The grains map (or Nil).
    pub grains: &'a Value,
}

static NIL: Value = Value::Nil;

impl Default for Ctx<'static> {
    fn default() -> Self {
        Ctx {
            opts: &NIL,
            grains: &NIL,
        }
    }
}

impl Ctx<'_> {
    /// A minion option (`hosts.file` style keys are looked up flat).
    pub fn opt(&self, key: &str) -> Option<&Value> {
        salt_compat::map_get(self.opts, key)
    }
}

/// The functions of this crate, sorted.
pub const FUNCTIONS: &[&str] = &[
    "cron.list_tab",
    "cron.ls",
    "cron.raw_cron",
    "cron.rm",
    "cron.rm_env",
    "cron.rm_job",
    "cron.set_env",
    "cron.set_job",
    "disk.usage",
    "file.append",
    "file.chown",
    "file.contains",
    "file.directory_exists",
    "file.file_exists",
    "file.get_hash",
    "file.get_mode",
    "file.line",
    "file.mkdir",
    "file.readlink",
    "file.remove",
    "file.replace",
    "file.search",
    "file.set_mode",
    "file.stats",
    "file.symlink",
    "file.touch",
    "file.write",
    "group.add",
    "group.adduser",
    "group.delete",
    "group.deluser",
    "group.getent",
    "group.info",
    "hosts.add_host",
    "hosts.get_alias",
    "hosts.get_ip",
    "hosts.has_pair",
    "hosts.list_hosts",
    "hosts.rm_host",
    "hosts.set_comment",
    "hosts.set_host",
    "ini.get_ini",
    "ini.get_option",
    "ini.get_section",
    "ini.remove_option",
    "ini.remove_section",
    "ini.set_option",
    "network.hw_addr",
    "network.interfaces",
    "network.ip_addrs",
    "network.ip_addrs6",
    "pkg.install",
    "pkg.latest_version",
    "pkg.list_pkgs",
    "pkg.purge",
    "pkg.refresh_db",
    "pkg.remove",
    "pkg.version",
    "pkg.version_cmp",
    "service.available",
    "service.disable",
    "service.disabled",
    "service.enable",
    "service.enabled",
    "service.get_all",
    "service.missing",
    "service.reload",
    "service.restart",
    "service.start",
    "service.status",
    "service.stop",
    "status.loadavg",
    "status.time",
    "status.uptime",
    "sysctl.assign",
    "sysctl.default_config",
    "sysctl.get",
    "sysctl.persist",
    "sysctl.show",
    "user.add",
    "user.chgid",
    "user.chgroups",
    "user.chhome",
    "user.chshell",
    "user.chuid",
    "user.delete",
    "user.getent",
    "user.info",
    "user.list_groups",
];

/// What a function returns: Salt's value, or the text of the exception it raises.
pub type Ret = Result<Value, String>;

/// Call `fun` (`module.function`); `None` when it is not one of [`FUNCTIONS`].
pub fn call(fun: &str, args: &[Value], kwargs: &[(String, Value)], ctx: &Ctx<'_>) -> Option<Ret> {
    if !FUNCTIONS.contains(&fun) {
        return None;
    }
    let a = Args::new(fun, args, kwargs);
    let (module, f) = fun.split_once('.')?;
    Some(match module {
        "pkg" => pkg::call(f, &a, ctx),
        "service" => service::call(f, &a),
        "user" => user::call_user(f, &a),
        "group" => user::call_group(f, &a),
        "cron" => cron::call(f, &a),
        "hosts" => hosts::call(f, &a, ctx),
        "file" => file::call(f, &a),
        "sysctl" => sysctl::call(f, &a),
        "ini" => ini_call::call(f, &a),
        _ => sysinfo::call(fun, &a),
    })
}

/// A map from `(key, value)` pairs, in that order.
pub fn map<K: Into<String>>(entries: Vec<(K, Value)>) -> Value {
    Value::Map(
        entries
            .into_iter()
            .map(|(k, v)| (Value::from(k.into()), v))
            .collect(),
    )
}

/// Python's `str()` of a scalar (strings unquoted).
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.as_str().unwrap_or("").to_owned(),
        Value::Nil => "None".into(),
        Value::Boolean(true) => "True".into(),
        Value::Boolean(false) => "False".into(),
        Value::Integer(i) => i.to_string(),
        Value::F64(f) => f.to_string(),
        other => other.to_string(),
    }
}

/// Salt's `is_true`: booleans, non-zero numbers, "true"/"1" strings.
pub fn is_true(v: &Value) -> bool {
    match v {
        Value::Boolean(b) => *b,
        Value::Integer(i) => i.as_i64().unwrap_or(1) != 0,
        Value::F64(f) => *f != 0.0,
        Value::String(s) => {
            let s = s.as_str().unwrap_or("").trim().to_ascii_lowercase();
            s == "true" || s.parse::<i64>().map(|n| n != 0).unwrap_or(false)
        }
        _ => false,
    }
}

/// Salt's `salt.utils.data.compare_dicts` on string maps: `{key: {old, new}}` for each key
/// whose value differs, keys sorted; a removed key gives `{new, old}` (Salt's order).
pub fn compare_dicts(old: &[(String, String)], new: &[(String, String)]) -> Value {
    let mut keys: Vec<&String> = old.iter().chain(new.iter()).map(|(k, _)| k).collect();
    keys.sort();
    keys.dedup();
    let look = |l: &[(String, String)], k: &str| {
        l.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    Value::Map(
        keys.into_iter()
            .filter_map(|k| {
                let (o, n) = (look(old, k), look(new, k));
                let gone = !new.iter().any(|(x, _)| x == k);
                (o != n).then(|| {
                    let pair = if gone {
                        vec![("new", Value::from(n)), ("old", Value::from(o))]
                    } else {
                        vec![("old", Value::from(o)), ("new", Value::from(n))]
                    };
                    (Value::from(k.as_str()), map(pair))
                })
            })
            .collect(),
    )
}
