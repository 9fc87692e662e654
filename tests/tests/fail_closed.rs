//! Fail closed (issue 38): a Salt security option salt-rs does not implement, set to ask for
//! a protection, stops the daemon at start with an error naming it (exit code 64, the
//! configuration errors' code), instead of a warning and a daemon that does less.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use salt_integration_tests::config::{Yaml, current_user};
use salt_integration_tests::{MasterConf, MinionConf, TempRoot, bins};

/// Runs `bin -c dir` (foreground; it must not get as far as binding) and returns its exit
/// code and stderr.
fn start(bin: &Path, dir: &Path) -> (Option<i32>, String) {
    let out = Command::new(bin)
        .arg("-c")
        .arg(dir)
        .args(["-l", "error"])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn list(items: &[&str]) -> Yaml {
    Yaml::from(items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
}

/// The master options, each set to ask for what salt-rs does not give.
fn master_cases() -> Vec<(&'static str, Yaml)> {
    vec![
        ("ssl", Yaml::Raw("{certfile: /etc/pki/c.pem}".into())),
        ("renderer_blacklist", list(&["jinja"])),
        ("renderer_whitelist", list(&["yaml"])),
    ]
}

/// The minion options, each set to ask for what salt-rs does not give.
fn minion_cases() -> Vec<(&'static str, Yaml)> {
    vec![
        ("ssl", Yaml::Raw("{certfile: /etc/pki/c.pem}".into())),
        ("renderer_blacklist", list(&["yaml"])),
        ("renderer_whitelist", list(&["jinja"])),
        ("whitelist_modules", list(&["test"])),
        ("disable_modules", list(&["cmd"])),
        ("grains_blacklist", list(&["ip_interfaces"])),
        ("cmd_blacklist_glob", list(&["rm *"])),
        ("cmd_whitelist_glob", list(&["ls *"])),
        ("sudo_user", Yaml::from("saltdev")),
    ]
}

fn assert_refused(daemon: &str, key: &str, code: Option<i32>, err: &str) {
    assert_eq!(code, Some(64), "{daemon} with {key}: {err}");
    assert!(
        err.contains(&format!(
            "option `{key}`: security option not implemented by salt-rs"
        )),
        "{daemon} with {key}: {err}"
    );
    assert!(err.contains("fail closed"), "{daemon} with {key}: {err}");
}

#[test]
fn the_master_refuses_to_start_with_each_security_option_it_lacks() {
    let b = bins().expect("our binaries");
    for (key, value) in master_cases() {
        let root = TempRoot::new().unwrap();
        let dir = MasterConf::new(root.path().join("master"))
            .set("user", current_user().as_str())
            .set(key, value)
            .write()
            .unwrap();
        let (code, err) = start(&b.master, &dir);
        assert_refused("salt-master", key, code, &err);
    }
}

#[test]
fn the_minion_refuses_to_start_with_each_security_option_it_lacks() {
    let b = bins().expect("our binaries");
    for (key, value) in minion_cases() {
        let root = TempRoot::new().unwrap();
        let dir = MinionConf::new(root.path().join("minion"), "m")
            .set("user", current_user().as_str())
            .set(key, value)
            .write()
            .unwrap();
        let (code, err) = start(&b.minion, &dir);
        assert_refused("salt-minion", key, code, &err);
    }
}
