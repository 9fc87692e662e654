//! Grains of the host and of the minion process that Salt reads from `/proc`, `/etc` and
//! the environment: `cpu_model`/`cpu_flags` (`_linux_cpudata`), `machine_id`,
//! `kernelparams`, `swap_total`, `uid`/`gid`/`username`/`groupname`/`pid`
//! (`minion_process.py`), `cwd`, `shell`, `path`/`systempath`, `server_id`, `ps`,
//! `efi`, `transactional`, `lsb_distrib_*` (from os-release, as Salt falls back to it
//! without `lsb_release`), and `pythonversion`.
//!
//! `pythonversion` has no interpreter behind it here: it reports the Python of Salt
//! 3007's onedir packages ([`PYTHON_VERSION`]), so templates that branch on the major
//! version (`grains.pythonversion[0] == 3`) take the Python 3 branch, as on any 3007
//! minion.

use rmpv::Value;
use sha2::{Digest, Sha256};

use super::OsRelease;

/// The `pythonversion` grain: the Python of Salt 3007's onedir builds.
pub const PYTHON_VERSION: (u64, u64, u64) = (3, 10, 18);

/// `cpu_model` and `cpu_flags` from `/proc/cpuinfo` text, as `_linux_cpudata` reads them.
pub fn cpudata(cpuinfo: &str) -> Vec<(Value, Value)> {
    let mut model: Option<String> = None;
    let mut flags: Option<Vec<Value>> = None;
    for line in cpuinfo.lines() {
        let mut comps = line.split(':');
        let (Some(k), Some(v)) = (comps.next(), comps.next()) else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        match k {
            "vendor_id" | "model name" => model = Some(v.to_owned()),
            "Processor" => model = v.split('-').next().map(str::to_owned),
            "flags" | "Features" => {
                flags = Some(v.split_whitespace().map(Value::from).collect());
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Some(f) = flags {
        out.push(("cpu_flags".into(), Value::Array(f)));
    }
    if let Some(m) = model {
        out.push(("cpu_model".into(), m.into()));
    }
    out
}

/// `kernelparams` from `/proc/cmdline` text: `[name, value-or-null]` pairs.
pub fn kernelparams(cmdline: &str) -> Value {
    let words = shlex::split(cmdline).unwrap_or_default();
    Value::Array(
        words
            .iter()
            .map(|w| {
                let parts: Vec<&str> = w.split('=').collect();
                let value = if parts.len() == 2 {
                    Value::from(parts[1].trim_matches('"'))
                } else {
                    Value::Nil
                };
                Value::Array(vec![parts[0].into(), value])
            })
            .collect(),
    )
}

/// Salt's `server_id`: the SHA-256 of the minion id as an integer, modulo 2^31.
pub fn server_id(id: &str) -> u64 {
    let h = Sha256::digest(id.as_bytes());
    let low = u32::from_be_bytes([h[28], h[29], h[30], h[31]]);
    u64::from(low & 0x7fff_ffff)
}

/// `swap_total` (MiB) from `/proc/meminfo` text.
pub fn swap_total_mib(meminfo: &str) -> u64 {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("SwapTotal:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

/// `lsb_distrib_id`, `lsb_distrib_release`, `lsb_distrib_codename` as Salt derives them
/// from os-release when `lsb_release` is absent.
pub fn lsb_distrib(osr: &OsRelease) -> Vec<(Value, Value)> {
    let mut out = Vec::new();
    if !osr.name.is_empty() {
        out.push(("lsb_distrib_id".into(), osr.name.clone().into()));
    }
    if !osr.version_id.is_empty() {
        out.push(("lsb_distrib_release".into(), osr.version_id.clone().into()));
    }
    let codename = if osr.codename.is_empty() {
        &osr.pretty_name
    } else {
        &osr.codename
    };
    if !codename.is_empty() {
        out.push(("lsb_distrib_codename".into(), codename.clone().into()));
    }
    out
}

/// Salt's `__secure_boot`: the one `SecureBoot-*` variable's last byte is 1.
fn secure_boot(dir: &str) -> bool {
    let in_efivars = dir.ends_with("/efivars");
    let found: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("SecureBoot-"))
        .map(|e| {
            if in_efivars {
                e.path()
            } else {
                e.path().join("data")
            }
        })
        .filter(|p| p.exists())
        .collect();
    match found.as_slice() {
        [one] => std::fs::read(one).is_ok_and(|d| d.last() == Some(&1)),
        _ => false,
    }
}

/// The grains of this host and process (see the module docs).
pub fn collect(id: &str, master: Value) -> Vec<(Value, Value)> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let mut g = cpudata(&read("/proc/cpuinfo"));
    if let Some(m) = ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
    {
        g.push(("machine_id".into(), m.trim().into()));
    }
    if let Ok(c) = std::fs::read_to_string("/proc/cmdline") {
        g.push(("kernelparams".into(), kernelparams(&c)));
    }
    g.push((
        "swap_total".into(),
        swap_total_mib(&read("/proc/meminfo")).into(),
    ));
    let uid = nix::unistd::Uid::current();
    let gid = nix::unistd::Gid::current();
    let user = nix::unistd::User::from_uid(uid).ok().flatten();
    let username = user.as_ref().map(|u| u.name.clone());
    // Salt's `get_default_group(username)`: the user's primary group's name.
    let groupname = user
        .as_ref()
        .and_then(|u| nix::unistd::Group::from_gid(u.gid).ok().flatten())
        .map(|gr| gr.name)
        .unwrap_or_default();
    g.push(("uid".into(), u64::from(uid.as_raw()).into()));
    g.push(("gid".into(), u64::from(gid.as_raw()).into()));
    g.push(("username".into(), username.map_or(Value::Nil, Value::from)));
    g.push(("groupname".into(), groupname.into()));
    g.push(("pid".into(), u64::from(std::process::id()).into()));
    if let Ok(cwd) = std::env::current_dir() {
        g.push(("cwd".into(), cwd.to_string_lossy().into_owned().into()));
    }
    let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into());
    g.push(("shell".into(), shell.into()));
    let path = std::env::var("PATH").unwrap_or_default();
    let path = path.trim();
    g.push((
        "systempath".into(),
        Value::Array(path.split(':').map(Value::from).collect()),
    ));
    g.push(("path".into(), path.into()));
    g.push(("server_id".into(), server_id(id).into()));
    g.push(("master".into(), master));
    g.push(("ps".into(), "ps -efHww".into()));
    let efivars = ["/sys/firmware/efi/efivars", "/sys/firmware/efi/vars"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    g.push(("efi".into(), efivars.is_some().into()));
    g.push((
        "efi-secure-boot".into(),
        efivars.is_some_and(secure_boot).into(),
    ));
    g.push((
        "transactional".into(),
        salt_execmods::run::which("transactional-update").into(),
    ));
    let (maj, min, micro) = PYTHON_VERSION;
    g.push((
        "pythonversion".into(),
        Value::Array(vec![
            maj.into(),
            min.into(),
            micro.into(),
            "final".into(),
            0.into(),
        ]),
    ));
    g
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn server_id_is_salts() {
        // python3 -c 'import hashlib; print(abs(int(hashlib.sha256(b"fm1").hexdigest(),16) % 2**31))'
        assert_eq!(server_id("fm1"), 261_534_361);
    }

    #[test]
    fn kernelparams_pairs() {
        let k = kernelparams("console=ttyS0 quiet root=\"/dev/vda\"\n");
        assert_eq!(
            k,
            Value::Array(vec![
                Value::Array(vec!["console".into(), "ttyS0".into()]),
                Value::Array(vec!["quiet".into(), Value::Nil]),
                Value::Array(vec!["root".into(), "/dev/vda".into()]),
            ])
        );
    }

    #[test]
    fn cpuinfo_model_and_flags() {
        let g = cpudata(
            "processor : 0\nvendor_id : AuthenticAMD\nmodel name : AMD EPYC\nflags : fpu vme\n",
        );
        assert_eq!(g[1], ("cpu_model".into(), "AMD EPYC".into()));
        assert_eq!(g[0].1, Value::Array(vec!["fpu".into(), "vme".into()]));
    }
}
