//! Grains: static facts about the minion host, shaped like Salt's core grains.
//!
//! Read once at start from `/etc/os-release`, `/proc` and `/proc/sys/kernel` (the same
//! values `uname(2)` returns), so no unsafe FFI is needed. The set is the subset of
//! Salt's `salt/grains/core.py` a controller most often targets: `id`, `os`,
//! `os_family`, `osfullname`, `osrelease`, `osmajorrelease`, `oscodename`, `kernel`,
//! `kernelrelease`, `kernelversion`, `host`, `fqdn`, `domain`, `nodename`, `localhost`,
//! `ipv4`, `ipv6`, `num_cpus`, `mem_total` (MiB), `cpuarch`, `saltversion`,
//! `saltversioninfo`; [`system`] adds the probed ones (`init`, `virtual`, `osarch`,
//! `osfinger`, ...) and [`host`] those of the host and the process (`machine_id`, `uid`,
//! `path`, ...). `tests/tests/grains_py.rs` compares them key by key with the Python
//! minion's on the same host, and lists the keys we do not report.
//!
//! `saltversion` reports [`SALT_VERSION`], the Salt release whose wire protocol and
//! module return shapes this minion follows, so version-gated logic on the master
//! treats it like that Python minion.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

use rmpv::Value;

pub mod host;
pub mod system;

/// The Salt version this minion reports (`test.version`, `saltversion` grain).
pub use salt_proto::SALT_VERSION;

/// Fields of `/etc/os-release` that feed the OS grains.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OsRelease {
    /// `ID`
    pub id: String,
    /// `NAME`
    pub name: String,
    /// `VERSION_ID`
    pub version_id: String,
    /// `VERSION_CODENAME`
    pub codename: String,
    /// `ID_LIKE`
    pub id_like: String,
    /// `PRETTY_NAME`
    pub pretty_name: String,
}

impl OsRelease {
    /// Parse the `KEY=value` lines of an os-release file (quotes removed).
    pub fn parse(text: &str) -> Self {
        let mut out = Self::default();
        for line in text.lines() {
            let Some((k, v)) = line.trim().split_once('=') else {
                continue;
            };
            let v = v.trim().trim_matches('"').trim_matches('\'').to_owned();
            match k {
                "ID" => out.id = v,
                "NAME" => out.name = v,
                "VERSION_ID" => out.version_id = v,
                "VERSION_CODENAME" => out.codename = v,
                "ID_LIKE" => out.id_like = v,
                "PRETTY_NAME" => out.pretty_name = v,
                _ => {}
            }
        }
        out
    }

    /// Salt's `os` grain for this distribution (its `_OS_NAME_MAP` idea).
    pub fn os(&self) -> String {
        let known = match self.id.as_str() {
            "debian" => "Debian",
            "ubuntu" => "Ubuntu",
            "centos" => "CentOS",
            "rhel" => "RedHat",
            "fedora" => "Fedora",
            "rocky" => "Rocky",
            "almalinux" => "AlmaLinux",
            "amzn" => "Amazon",
            "alpine" => "Alpine",
            "arch" => "Arch",
            "opensuse-leap" | "opensuse-tumbleweed" | "opensuse" => "openSUSE",
            "sles" => "SUSE",
            "gentoo" => "Gentoo",
            "linuxmint" => "Mint",
            "raspbian" => "Raspbian",
            "devuan" => "Devuan",
            "photon" => "VMware Photon OS",
            "" => "Linux",
            _ => "",
        };
        if known.is_empty() {
            let mut c = self.id.chars();
            c.next()
                .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        } else {
            known.to_owned()
        }
    }

    /// Salt's `os_family` grain (`_OS_FAMILY_MAP`).
    pub fn os_family(&self) -> String {
        let os = self.os();
        let fam = match os.as_str() {
            "Debian" | "Ubuntu" | "Mint" | "Raspbian" | "Devuan" => "Debian",
            "CentOS" | "RedHat" | "Fedora" | "Rocky" | "AlmaLinux" | "Amazon" => "RedHat",
            "openSUSE" | "SUSE" => "Suse",
            "Alpine" => "Alpine",
            "Arch" => "Arch",
            "Gentoo" => "Gentoo",
            _ => {
                if self.id_like.split_whitespace().any(|l| l == "debian") {
                    "Debian"
                } else if self
                    .id_like
                    .split_whitespace()
                    .any(|l| l == "rhel" || l == "fedora")
                {
                    "RedHat"
                } else {
                    return os;
                }
            }
        };
        fam.to_owned()
    }
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// Parse `MemTotal:` (kB) from `/proc/meminfo` text into MiB, like Salt's `mem_total`.
pub fn mem_total_mib(meminfo: &str) -> u64 {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

/// Local IPv4 addresses from `/proc/net/fib_trie` text (`/32 host LOCAL` entries).
pub fn ipv4_from_fib_trie(text: &str) -> Vec<String> {
    let mut out: Vec<Ipv4Addr> = Vec::new();
    let mut last: Option<Ipv4Addr> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(addr) = t.strip_prefix("|-- ") {
            last = addr.parse().ok();
        } else if t.contains("/32 host LOCAL")
            && let Some(a) = last
            && !out.contains(&a)
        {
            out.push(a);
        }
    }
    out.sort();
    out.iter().map(ToString::to_string).collect()
}

/// IPv6 addresses from `/proc/net/if_inet6` text.
pub fn ipv6_from_if_inet6(text: &str) -> Vec<String> {
    let mut out: Vec<Ipv6Addr> = Vec::new();
    for line in text.lines() {
        let Some(hex32) = line.split_whitespace().next() else {
            continue;
        };
        if hex32.len() != 32 {
            continue;
        }
        let Ok(n) = u128::from_str_radix(hex32, 16) else {
            continue;
        };
        let a = Ipv6Addr::from(n);
        if !out.contains(&a) {
            out.push(a);
        }
    }
    out.sort();
    out.iter().map(ToString::to_string).collect()
}

fn num_cpus() -> u64 {
    let n = std::fs::read_to_string("/proc/cpuinfo")
        .map(|t| t.lines().filter(|l| l.starts_with("processor")).count())
        .unwrap_or(0);
    if n > 0 {
        n as u64
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
    }
}

fn strs(v: Vec<String>) -> Value {
    Value::Array(v.into_iter().map(Value::from).collect())
}

/// Collect the grains of this host for minion `id` (`master`: the option's value, as
/// Salt's `master` grain repeats it).
pub fn collect(id: &str, master: Value) -> Value {
    let osr = ["/etc/os-release", "/usr/lib/os-release"]
        .iter()
        .find(|p| Path::new(p).exists())
        .map(|p| OsRelease::parse(&std::fs::read_to_string(p).unwrap_or_default()))
        .unwrap_or_default();
    let hostname = read_trim("/proc/sys/kernel/hostname");
    let domainname = read_trim("/proc/sys/kernel/domainname");
    let (host, domain) = match hostname.split_once('.') {
        Some((h, d)) => (h.to_owned(), d.to_owned()),
        None if !domainname.is_empty() && domainname != "(none)" => {
            (hostname.clone(), domainname.clone())
        }
        None => (hostname.clone(), String::new()),
    };
    let fqdn = if hostname.contains('.') || domain.is_empty() {
        hostname.clone()
    } else {
        format!("{hostname}.{domain}")
    };
    let (vmaj, vmin) = SALT_VERSION.split_once('.').unwrap_or((SALT_VERSION, "0"));

    let mut g: Vec<(Value, Value)> = vec![
        ("id".into(), id.into()),
        ("kernel".into(), "Linux".into()),
        (
            "kernelrelease".into(),
            read_trim("/proc/sys/kernel/osrelease").into(),
        ),
        (
            "kernelversion".into(),
            read_trim("/proc/sys/kernel/version").into(),
        ),
        ("nodename".into(), hostname.clone().into()),
        ("localhost".into(), hostname.clone().into()),
        ("host".into(), host.into()),
        ("fqdn".into(), fqdn.into()),
        ("domain".into(), domain.into()),
        ("os".into(), osr.os().into()),
        ("os_family".into(), osr.os_family().into()),
        ("osfullname".into(), osr.name.clone().into()),
        ("osrelease".into(), osr.version_id.clone().into()),
        ("oscodename".into(), osr.codename.clone().into()),
        ("cpuarch".into(), std::env::consts::ARCH.into()),
        ("num_cpus".into(), num_cpus().into()),
        (
            "mem_total".into(),
            mem_total_mib(&std::fs::read_to_string("/proc/meminfo").unwrap_or_default()).into(),
        ),
        (
            "ipv4".into(),
            strs(ipv4_from_fib_trie(
                &std::fs::read_to_string("/proc/net/fib_trie").unwrap_or_default(),
            )),
        ),
        (
            "ipv6".into(),
            strs(ipv6_from_if_inet6(
                &std::fs::read_to_string("/proc/net/if_inet6").unwrap_or_default(),
            )),
        ),
        ("saltversion".into(), SALT_VERSION.into()),
        (
            "saltversioninfo".into(),
            Value::Array(vec![
                vmaj.parse::<u64>().unwrap_or(0).into(),
                vmin.parse::<u64>().unwrap_or(0).into(),
            ]),
        ),
    ];
    let cpuarch = std::env::consts::ARCH;
    g.push((
        "osarch".into(),
        system::osarch(&osr.os_family(), cpuarch).into(),
    ));
    g.push(("init".into(), system::init_system().into()));
    if let Some(v) = system::selinux() {
        g.push(("selinux".into(), v));
    }
    if let Some(v) = system::systemd() {
        g.push(("systemd".into(), v));
    }
    let virt = system::virtual_();
    g.push(("virtual".into(), virt.virtual_.into()));
    if let Some(sub) = virt.subtype {
        g.push(("virtual_subtype".into(), sub.into()));
    }
    g.extend(system::osrelease_data(
        &osr.os(),
        &osr.name,
        &osr.version_id,
    ));
    g.extend(host::lsb_distrib(&osr));
    g.extend(host::collect(id, master));
    // Salt returns grains sorted by key in `grains.items` output; keep them sorted.
    g.sort_by(|a, b| a.0.as_str().cmp(&b.0.as_str()));
    Value::Map(g)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use salt_compat::map_get;

    #[test]
    fn os_release_debian() {
        let o = OsRelease::parse(
            "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\n\
             VERSION_ID=\"12\"\nVERSION_CODENAME=bookworm\nID=debian\n",
        );
        assert_eq!(o.os(), "Debian");
        assert_eq!(o.os_family(), "Debian");
        assert_eq!(o.version_id, "12");
        assert_eq!(o.codename, "bookworm");
        assert_eq!(o.name, "Debian GNU/Linux");
    }

    #[test]
    fn os_release_families() {
        let o = OsRelease::parse("ID=ubuntu\nID_LIKE=debian\n");
        assert_eq!(
            (o.os().as_str(), o.os_family().as_str()),
            ("Ubuntu", "Debian")
        );
        let o = OsRelease::parse("ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\n");
        assert_eq!(
            (o.os().as_str(), o.os_family().as_str()),
            ("Rocky", "RedHat")
        );
        let o = OsRelease::parse("ID=pop\nID_LIKE=\"ubuntu debian\"\n");
        assert_eq!((o.os().as_str(), o.os_family().as_str()), ("Pop", "Debian"));
    }

    #[test]
    fn meminfo_to_mib() {
        assert_eq!(
            mem_total_mib("MemTotal:        8048572 kB\nMemFree: 1 kB\n"),
            7859
        );
        assert_eq!(mem_total_mib("garbage"), 0);
    }

    #[test]
    fn fib_trie_local_addresses() {
        let t = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 0.0.0.0\n        /0 universe UNICAST\n\
                 |-- 10.0.0.5\n   /32 host LOCAL\n |-- 127.0.0.1\n   /32 host LOCAL\n\
                 |-- 10.0.0.255\n   /32 link BROADCAST\nLocal:\n |-- 127.0.0.1\n   /32 host LOCAL\n";
        assert_eq!(ipv4_from_fib_trie(t), vec!["10.0.0.5", "127.0.0.1"]);
    }

    #[test]
    fn if_inet6_addresses() {
        let t = "00000000000000000000000000000001 01 80 10 80       lo\n\
                 fe800000000000000000000000000001 02 40 20 80     eth0\n";
        assert_eq!(ipv6_from_if_inet6(t), vec!["::1", "fe80::1"]);
    }

    #[test]
    fn collected_grains_have_the_core_keys() {
        let g = collect("m1", Value::from("salt"));
        for k in [
            "id",
            "os",
            "os_family",
            "kernel",
            "kernelrelease",
            "osrelease",
            "host",
            "fqdn",
            "ipv4",
            "ipv6",
            "num_cpus",
            "mem_total",
            "saltversion",
            "cpuarch",
            "nodename",
            "localhost",
        ] {
            assert!(map_get(&g, k).is_some(), "missing grain {k}");
        }
        assert_eq!(map_get(&g, "id"), Some(&Value::from("m1")));
        assert_eq!(map_get(&g, "kernel"), Some(&Value::from("Linux")));
        assert_eq!(map_get(&g, "saltversion"), Some(&Value::from("3007.17")));
        assert!(map_get(&g, "num_cpus").and_then(Value::as_u64).unwrap() >= 1);
        assert!(map_get(&g, "mem_total").and_then(Value::as_u64).unwrap() > 0);
    }
}
