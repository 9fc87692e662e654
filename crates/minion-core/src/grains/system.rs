//! The grains Salt's `salt/grains/core.py` derives by probing the system rather than
//! reading `/etc/os-release`: `init` (`_linux_init_system`), `virtual` and
//! `virtual_subtype` (`_virtual`, its Linux branch), `osarch` (`_osarch`), and the
//! `osrelease_info`/`osmajorrelease`/`osfinger` trio (`_osrelease_data`).
//!
//! Each follows Salt 3007's order of probes, commands and files, so the answer on a host
//! is the Python minion's answer on that host.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rmpv::Value;
use salt_execmods::run::{run, which_path};

/// Salt's `_linux_init_system`.
pub fn init_system() -> String {
    if Path::new("/run/systemd/system").exists() {
        return "systemd".into();
    }
    let Ok(raw) = std::fs::read("/proc/1/cmdline") else {
        return "unknown".into();
    };
    let text = String::from_utf8_lossy(&raw).replace('\0', " ");
    let cmdline: Vec<&str> = text.split_whitespace().collect();
    let init_bin = cmdline.first().and_then(|c| which_path(c));
    let found_in_cmdline =
        |prog: &str| which_path(prog).is_some_and(|p| cmdline.iter().any(|c| Path::new(c) == p));
    match init_bin {
        Some(bin) if bin.to_string_lossy().ends_with("bin/init") => {
            let data = std::fs::read(&bin).unwrap_or_default().to_ascii_lowercase();
            for item in ["upstart", "sysvinit", "systemd"] {
                if data.windows(item.len()).any(|w| w == item.as_bytes()) {
                    return item.into();
                }
            }
            "unknown".into()
        }
        _ if found_in_cmdline("supervisord") => "supervisord".into(),
        _ if found_in_cmdline("dumb-init") => "dumb-init".into(),
        _ if found_in_cmdline("tini") => "tini".into(),
        _ if cmdline == ["runit"] || cmdline.contains(&"/sbin/my_init") => "runit".into(),
        _ => "unknown".into(),
    }
}

/// Salt's `_osarch`: the package manager's architecture name.
pub fn osarch(os_family: &str, cpuarch: &str) -> String {
    let ask = |argv: &[&str]| {
        run(argv)
            .ok()
            .filter(|o| o.retcode == 0)
            .map(|o| o.stdout.trim().to_owned())
    };
    match os_family {
        "Debian" => ask(&["dpkg", "--print-architecture"]).unwrap_or_default(),
        "RedHat" | "Suse" => ask(&["rpm", "--eval", "%{_host_cpu}"])
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| cpuarch.to_owned()),
        _ => cpuarch.to_owned(),
    }
}

/// Salt's `_osrelease_data`: `osrelease_info`, `osmajorrelease` and `osfinger`.
pub fn osrelease_data(os: &str, osfullname: &str, osrelease: &str) -> Vec<(Value, Value)> {
    let info: Vec<Value> = osrelease
        .split('.')
        .map(|p| match p.parse::<u64>() {
            Ok(n) if p.bytes().all(|b| b.is_ascii_digit()) => Value::from(n),
            _ => Value::from(p),
        })
        .collect();
    let first = info.first().cloned().unwrap_or_else(|| Value::from(""));
    let mut out = vec![("osrelease_info".into(), Value::Array(info))];
    if let Some(m) = first.as_u64() {
        out.push(("osmajorrelease".into(), m.into()));
    }
    let name = match os {
        "Debian" | "FreeBSD" | "OpenBSD" | "NetBSD" | "Mac" | "Raspbian" => os,
        _ => osfullname,
    };
    let ver = if matches!(os, "Ubuntu" | "Pop") {
        osrelease.to_owned()
    } else {
        match first {
            Value::String(s) => s.as_str().unwrap_or_default().to_owned(),
            v => v.to_string(),
        }
    };
    out.push(("osfinger".into(), format!("{name}-{ver}").into()));
    out
}

/// What `_virtual` concluded: `virtual` and, when known, `virtual_subtype`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Virtual {
    /// `virtual`
    pub virtual_: String,
    /// `virtual_subtype`
    pub subtype: Option<String>,
}

impl Virtual {
    fn set(&mut self, v: &str, sub: Option<&str>) {
        self.virtual_ = v.into();
        if let Some(s) = sub {
            self.subtype = Some(s.into());
        }
    }

    /// Read one probe command's output the way `_virtual` does; true when the loop stops.
    pub fn read_command(&mut self, command: &str, output: &str) -> bool {
        match command {
            "systemd-detect-virt" => {
                let exact = [
                    "qemu",
                    "kvm",
                    "oracle",
                    "xen",
                    "bochs",
                    "chroot",
                    "uml",
                    "systemd-nspawn",
                ];
                let table: [(&str, &str, Option<&str>); 6] = [
                    ("vmware", "VMware", None),
                    ("microsoft", "VirtualPC", None),
                    ("lxc", "container", Some("LXC")),
                    ("podman", "container", Some("Podman")),
                    ("docker", "container", Some("Docker")),
                    ("amazon", "Nitro", Some("Amazon EC2")),
                ];
                if exact.contains(&output) {
                    self.set(output, None);
                    return true;
                }
                for (needle, v, sub) in table {
                    if output.contains(needle) {
                        self.set(v, sub);
                        return true;
                    }
                }
                false
            }
            "virt-what" => {
                for line in output.lines() {
                    let hit: Option<(&str, Option<&str>)> = match line {
                        "kvm" | "qemu" | "uml" | "xen" => Some((line, None)),
                        "ibm_power-kvm" => Some(("kvm", None)),
                        "ibm_power-lpar_shared" => Some(("LPAR", Some("shared"))),
                        "ibm_power-lpar_dedicated" => Some(("LPAR", Some("dedicated"))),
                        l if l.contains("lxc") => Some(("container", Some("LXC"))),
                        l if l.contains("docker") => Some(("container", Some("Docker"))),
                        l if l.contains("vmware") => Some(("VMware", None)),
                        l if l.contains("parallels") => Some(("Parallels", None)),
                        l if l.contains("hyperv") => Some(("HyperV", None)),
                        _ => None,
                    };
                    if let Some((v, sub)) = hit {
                        self.set(v, sub);
                        break;
                    }
                }
                true
            }
            "dmidecode" => {
                self.read_dmidecode(output);
                true
            }
            "lspci" => {
                let m = output.to_lowercase();
                for (needle, v) in [
                    ("vmware", "VMware"),
                    ("virtualbox", "VirtualBox"),
                    ("qemu", "kvm"),
                    ("virtio", "kvm"),
                ] {
                    if m.contains(needle) {
                        self.set(v, None);
                        break;
                    }
                }
                true
            }
            _ => false,
        }
    }

    fn read_dmidecode(&mut self, out: &str) {
        for needle in [
            "Vendor: QEMU",
            "Manufacturer: QEMU",
            "Vendor: Bochs",
            "Manufacturer: Bochs",
        ] {
            if out.contains(needle) {
                self.set("kvm", None);
            }
        }
        if out.contains("BHYVE") {
            self.set("bhyve", None);
        } else if out.contains("Manufacturer: oVirt") {
            self.set("kvm", Some("ovirt"));
        } else if out.contains("Product Name: RHEV Hypervisor") {
            self.set("kvm", Some("rhev"));
        } else if out.contains("VirtualBox") {
            self.set("VirtualBox", None);
        } else if out.contains("VMware") {
            self.set("VMware", None);
        } else if out.contains(": Microsoft") && out.contains("Virtual Machine") {
            self.set("VirtualPC", None);
        } else if out.contains("Parallels Software") {
            self.set("Parallels", None);
        } else if out.contains("Manufacturer: Google") || out.contains("Vendor: SeaBIOS") {
            self.set("kvm", None);
        }
    }

    /// Salt's file checks after the commands (Linux): chroot, OpenVZ, Xen, QEMU CPU,
    /// DMI product name, the cgroup and environment of pid 1.
    fn read_files(&mut self) {
        let read = |p: &str| std::fs::read_to_string(p).ok();
        let isdir = |p: &str| Path::new(p).is_dir();
        if let (Ok(a), Ok(b)) = (std::fs::metadata("/"), std::fs::metadata("/proc/1/root/."))
            && (a.dev(), a.ino()) != (b.dev(), b.ino())
        {
            self.subtype = Some("chroot".into());
        }
        if isdir("/proc/vz") {
            if Path::new("/proc/vz/version").is_file() {
                self.set("openvzhn", None);
            } else if Path::new("/proc/vz/veinfo").is_file() {
                self.set("openvzve", None);
            }
        }
        for line in read("/proc/self/status").unwrap_or_default().lines() {
            if let Some(id) = line.strip_prefix("envID:")
                && let Ok(n) = id.trim().parse::<u64>()
            {
                self.set(if n != 0 { "openvzve" } else { "openvzhn" }, None);
            }
        }
        if isdir("/proc/sys/xen") || isdir("/sys/bus/xen") || isdir("/proc/xen") {
            if Path::new("/proc/xen/xsd_kva").is_file() {
                self.subtype = Some("Xen Dom0".into());
            } else if let Some(caps) = read("/proc/xen/capabilities") {
                let s = if caps.contains("control_d") {
                    "Xen Dom0"
                } else {
                    "Xen PV DomU"
                };
                self.subtype = Some(s.into());
            } else if isdir("/sys/bus/xen/drivers/xenconsole") {
                self.subtype = Some("Xen PV DomU".into());
            }
            if self
                .subtype
                .as_deref()
                .is_some_and(|s| s.to_lowercase().contains("dom"))
            {
                self.virtual_ = "xen".into();
            }
        }
        if read("/proc/cpuinfo").is_some_and(|c| c.contains("QEMU Virtual CPU")) {
            self.set("kvm", None);
        }
        if let Ok(raw) = std::fs::read("/sys/devices/virtual/dmi/id/product_name") {
            let p = String::from_utf8_lossy(&raw);
            if p.contains("VirtualBox") {
                self.set("VirtualBox", None);
            } else if p.contains("RHEV Hypervisor") {
                self.set("kvm", Some("rhev"));
            } else if p.contains("oVirt Node") {
                self.set("kvm", Some("ovirt"));
            } else if p.contains("Google") {
                self.set("gce", None);
            } else if p.contains("BHYVE") {
                self.set("bhyve", None);
            }
        }
        if let Some(cg) = read("/proc/1/cgroup") {
            if cg.contains(":/lxc/") {
                self.set("container", Some("LXC"));
            } else if cg.contains(":/kubepods/") {
                self.subtype = Some("kubernetes".into());
            } else if cg.contains(":/libpod_parent/") {
                self.subtype = Some("libpod".into());
            } else if [":/system.slice/docker", ":/docker/", ":/docker-ce/"]
                .iter()
                .any(|d| cg.contains(d))
            {
                self.set("container", Some("Docker"));
            }
        }
        if self.subtype.as_deref() != Some("LXC")
            && let Ok(env) = std::fs::read("/proc/1/environ")
            && String::from_utf8_lossy(&env).contains("container=lxc")
        {
            self.set("container", Some("LXC"));
        }
    }
}

/// Salt's `_virtual` on Linux (`enable_lspci` at its default, true).
pub fn virtual_() -> Virtual {
    let mut v = Virtual {
        virtual_: "physical".into(),
        subtype: None,
    };
    let mut cmds = if which_path("virt-what").is_some() {
        vec!["virt-what"]
    } else {
        vec!["systemd-detect-virt", "virt-what", "dmidecode"]
    };
    if Path::new("/proc/bus/pci").exists() {
        cmds.push("lspci");
    }
    for command in cmds {
        let Some(path) = which_path(command) else {
            continue;
        };
        let Ok(out) = run(&[&path.to_string_lossy()]) else {
            continue;
        };
        if out.retcode != 0 {
            continue;
        }
        if v.read_command(command, &out.stdout) {
            break;
        }
    }
    v.read_files();
    if v.subtype.is_some() && v.virtual_ == "physical" {
        v.virtual_ = "virtual".into();
    }
    if matches!(v.virtual_.as_str(), "qemu" | "kvm" | "xen" | "amazon")
        && let Some(dmi) = which_path("dmidecode")
        && let Ok(out) = run(&[&dmi.to_string_lossy(), "-t", "system"])
    {
        let o = &out.stdout;
        if o.contains("Manufacturer: Amazon EC2") {
            if v.virtual_ != "xen" {
                v.virtual_ = "Nitro".into();
            }
            let product = o
                .lines()
                .find_map(|l| l.trim().strip_prefix("Product Name: "))
                .map(str::to_owned);
            v.subtype = Some(match product {
                Some(p) => format!("Amazon EC2 ({p})"),
                None => "Amazon EC2".into(),
            });
        } else if o
            .lines()
            .any(|l| l.trim().starts_with("Version: ") && l.contains(".amazon"))
        {
            v.subtype = Some("Amazon EC2".into());
        }
    }
    v
}

/// Salt's `selinux` grain (`_selinux`), reported where `selinuxenabled` is on `PATH`:
/// `enabled` (its exit code 0) and, where `getenforce` is, `enforced` (its output).
pub fn selinux() -> Option<Value> {
    let enabled = which_path("selinuxenabled")?;
    let ok = run(&[&enabled.to_string_lossy()]).is_ok_and(|o| o.retcode == 0);
    let mut m = vec![(Value::from("enabled"), Value::Boolean(ok))];
    if let Some(ge) = which_path("getenforce") {
        let out = run(&[&ge.to_string_lossy()])
            .map(|o| o.stdout)
            .unwrap_or_default();
        m.push((Value::from("enforced"), Value::from(out.trim())));
    }
    Some(Value::Map(m))
}

/// Salt's `systemd` grain (`_systemd`), reported where `systemctl` and `localectl` are on
/// `PATH`: `version` and `features`, the first two lines of `systemctl --version`
/// (`UNDEFINED` and empty when they are not there).
pub fn systemd() -> Option<Value> {
    let ctl = which_path("systemctl")?;
    which_path("localectl")?;
    let (mut version, mut features) = ("UNDEFINED".to_owned(), String::new());
    if let Ok(o) = run(&[&ctl.to_string_lossy(), "--version"])
        && o.retcode == 0
    {
        let lines: Vec<&str> = o.stdout.lines().collect();
        if let (Some(first), Some(second)) = (lines.first(), lines.get(1))
            && first.starts_with("systemd ")
        {
            version = first.split_whitespace().nth(1).unwrap_or("").to_owned();
            features = (*second).to_owned();
        }
    }
    Some(Value::Map(vec![
        (Value::from("version"), Value::from(version)),
        (Value::from("features"), Value::from(features)),
    ]))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn get<'a>(kv: &'a [(Value, Value)], k: &str) -> &'a Value {
        &kv.iter()
            .find(|(key, _)| key.as_str() == Some(k))
            .unwrap()
            .1
    }

    #[test]
    fn osfinger_as_salt_derives_it() {
        let d = osrelease_data("Debian", "Debian GNU/Linux", "12");
        assert_eq!(get(&d, "osfinger"), &Value::from("Debian-12"));
        assert_eq!(get(&d, "osmajorrelease"), &Value::from(12));
        let d = osrelease_data("Ubuntu", "Ubuntu", "22.04");
        assert_eq!(get(&d, "osfinger"), &Value::from("Ubuntu-22.04"));
        assert_eq!(
            get(&d, "osrelease_info"),
            &Value::Array(vec![22.into(), 4.into()])
        );
        let d = osrelease_data("Rocky", "Rocky Linux", "9.3");
        assert_eq!(get(&d, "osfinger"), &Value::from("Rocky Linux-9"));
        let d = osrelease_data("Arch", "Arch Linux", "rolling");
        assert_eq!(get(&d, "osfinger"), &Value::from("Arch Linux-rolling"));
        assert!(d.iter().all(|(k, _)| k.as_str() != Some("osmajorrelease")));
    }

    #[test]
    fn probe_outputs() {
        let mut v = Virtual {
            virtual_: "physical".into(),
            subtype: None,
        };
        assert!(v.read_command("systemd-detect-virt", "docker"));
        assert_eq!(
            (v.virtual_.as_str(), v.subtype.as_deref()),
            ("container", Some("Docker"))
        );
        assert!(!v.read_command("systemd-detect-virt", "none"));
        assert!(v.read_command("virt-what", "hyperv\nxen"));
        assert_eq!(v.virtual_, "HyperV");
        assert!(v.read_command("dmidecode", "Manufacturer: QEMU\nProduct Name: Standard PC"));
        assert_eq!(v.virtual_, "kvm");
    }
}
