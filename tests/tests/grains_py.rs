//! Grains, key by key, against the Python 3007.17 minion on the same host: Python's
//! `salt-call --local grains.items --out json` and ours, same config, same working
//! directory, same environment.
//!
//! Every key Python reports is in one of three lists: [`SAME`] (ours must be equal: the
//! keys formulas branch on, and every other one we report), [`DIFFERENT`] (each with the
//! reason it legitimately differs) or [`NOT_REPORTED`] (grains we do not collect yet). A key
//! in none of them fails the test, so a host that makes Python report something new shows
//! up rather than passing unseen.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::{TempRoot, bins, require, run_with_timeout};
use serde_json::Value;

/// Equal to the Python minion's.
const SAME: &[&str] = &[
    "id",
    "os",
    "os_family",
    "osfullname",
    "osrelease",
    "osrelease_info",
    "osmajorrelease",
    "oscodename",
    "osfinger",
    "osarch",
    "init",
    "virtual",
    "virtual_subtype",
    "kernel",
    "kernelrelease",
    "kernelversion",
    "cpuarch",
    "cpu_model",
    "cpu_flags",
    "num_cpus",
    "mem_total",
    "swap_total",
    "host",
    "fqdn",
    "domain",
    "nodename",
    "localhost",
    "ipv4",
    "ipv6",
    "machine_id",
    "kernelparams",
    "uid",
    "gid",
    "username",
    "groupname",
    "cwd",
    "shell",
    "path",
    "systempath",
    "server_id",
    "master",
    "ps",
    "efi",
    "efi-secure-boot",
    "transactional",
    "saltversion",
    "saltversioninfo",
    "lsb_distrib_id",
    "lsb_distrib_release",
    "lsb_distrib_codename",
    "systemd",
    "selinux",
];

/// Reported by both, legitimately different.
const DIFFERENT: &[(&str, &str)] = &[
    ("pid", "each minion's own process id"),
    (
        "pythonversion",
        "no interpreter: ours is the Python of Salt 3007's onedir; the major must match",
    ),
];

/// Python reports them; we do not (yet).
const NOT_REPORTED: &[(&str, &str)] = &[
    ("pythonexecutable", "no Python interpreter"),
    ("pythonpath", "no Python interpreter"),
    ("saltpath", "no Python package"),
    ("zmqversion", "not collected"),
    ("dns", "resolv.conf parsing not collected"),
    ("fqdn_ip4", "name resolution of the fqdn not collected"),
    ("fqdn_ip6", "name resolution of the fqdn not collected"),
    ("fqdns", "reverse lookups not collected"),
    ("gpus", "lspci parsing not collected"),
    ("num_gpus", "lspci parsing not collected"),
    ("hwaddr_interfaces", "per-interface data not collected"),
    ("ip_interfaces", "per-interface data not collected"),
    ("ip4_interfaces", "per-interface data not collected"),
    ("ip6_interfaces", "per-interface data not collected"),
    ("ip_gw", "routes not collected"),
    ("ip4_gw", "routes not collected"),
    ("ip6_gw", "routes not collected"),
    ("disks", "block devices not collected"),
    ("ssds", "block devices not collected"),
    ("locale_info", "not collected"),
    ("zfs_support", "not collected"),
    ("zfs_feature_flags", "not collected"),
    ("fibre_channel_host", "not collected"),
    ("iscsi_iqn", "not collected"),
    ("nvme_nqn", "not collected"),
    (
        "package",
        "Salt's packaging type (onedir/pip/system): no meaning here",
    ),
];

fn conf(root: &Path) {
    let r = root.display();
    std::fs::create_dir_all(root.join("conf")).unwrap();
    std::fs::write(
        root.join("conf/minion"),
        format!(
            "id: grains1\nfile_client: local\nroot_dir: {r}\ncachedir: {r}/cache\n\
             pki_dir: {r}/pki\nsock_dir: {r}/sock\nlog_file: {r}/minion.log\n"
        ),
    )
    .unwrap();
}

fn grains(bin: &Path, root: &Path) -> serde_json::Map<String, Value> {
    let mut cmd = Command::new(bin);
    cmd.current_dir(root)
        .args(["-c", "conf", "--local", "grains.items", "--out", "json"]);
    let out = run_with_timeout(cmd, Duration::from_secs(120)).unwrap();
    let v: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {}", bin.display(), out.stdout));
    v["local"].as_object().cloned().unwrap()
}

#[test]
fn grains_key_by_key_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let tmp = TempRoot::new().unwrap();
    conf(tmp.path());
    let py = grains(&venv.dir.join("bin/salt-call"), tmp.path());
    let rs = grains(&ours, tmp.path());
    let mut problems = Vec::new();
    for (k, pv) in &py {
        if SAME.contains(&k.as_str()) {
            if rs.get(k) != Some(pv) {
                problems.push(format!("{k}: python {pv} ours {:?}", rs.get(k)));
            }
        } else if k == "pythonversion" {
            if rs.get(k).and_then(|v| v.get(0)) != pv.get(0) {
                problems.push(format!(
                    "pythonversion major: python {pv} ours {:?}",
                    rs.get(k)
                ));
            }
        } else if DIFFERENT.iter().any(|(d, _)| d == k) {
            assert!(rs.contains_key(k), "{k} missing from ours");
        } else if !NOT_REPORTED.iter().any(|(d, _)| d == k) {
            problems.push(format!("{k}: python {pv}, in no list of this test"));
        }
    }
    for k in rs.keys() {
        if !py.contains_key(k) {
            problems.push(format!("{k}: ours {} but python has none", rs[k]));
        }
    }
    assert!(
        problems.is_empty(),
        "grains differ:\n{}",
        problems.join("\n")
    );
}
