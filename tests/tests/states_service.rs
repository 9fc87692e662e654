//! `service.*` states against Python 3007.17's `salt-call --local`. systemd is not running
//! here, so both run against a recording `systemctl` stand-in
//! (`tests/data/states-service/systemctl`, first on `PATH`) that keeps unit state in a
//! directory and logs every call, inside a private mount namespace (`unshare -m`) whose
//! `/run/systemd/system` exists, so Salt's systemd module loads in online mode (with
//! `systemd.scope: False`) and ours sees the same. Units: `saltrs-e2e-web` (stopped,
//! disabled), `-web2` (running, enabled), `-worker` (running, enabled), `-worker2`
//! (stopped, disabled); `-nosuch` does not exist.
//!
//! Steps, each from the same start for both: `test=True`, apply, apply with a changed
//! pillar (the watched file changes: `mod_watch` restarts/reloads), apply again, and
//! `--out highstate` of a `test=True` run. Each step: same `--out json` (times, pids,
//! roots blanked), same retcode, same unit states, same start/stop/enable/... calls.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::states_support::{self, local_minion, normalize};
use salt_integration_tests::{Missing, both, command, require, root};
use salt_integration_tests::{TempRoot, bins, workspace_root};

fn setup(root: &Path) {
    let state = root.join("units");
    std::fs::create_dir_all(&state).unwrap();
    for (u, active, enabled) in [
        ("saltrs-e2e-web", false, false),
        ("saltrs-e2e-web2", true, true),
        ("saltrs-e2e-worker", true, true),
        ("saltrs-e2e-worker2", false, false),
    ] {
        let u = format!("{u}.service");
        std::fs::write(state.join(format!("{u}.known")), "").unwrap();
        if active {
            std::fs::write(state.join(format!("{u}.active")), "").unwrap();
        }
        if enabled {
            std::fs::write(state.join(format!("{u}.enabled")), "").unwrap();
        }
    }
    let tree = workspace_root().join("tests/data/states-service");
    local_minion(
        root,
        &tree,
        Some(&root.join("pillar")),
        "systemd.scope: False\n",
    )
    .unwrap();
}

fn units(root: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root.join("units"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The calls that change something, in order.
fn actions(root: &Path) -> Vec<String> {
    std::fs::read_to_string(root.join("systemctl.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.iter()
                .any(|a| ["start", "stop", "restart", "reload", "enable", "disable"].contains(a))
        })
        .map(str::to_owned)
        .collect()
}

fn salt_call(bin: &Path, root: &Path, out: &str, args: &[String]) -> (String, Option<i32>) {
    let standin = workspace_root().join("tests/data/states-service");
    let path = format!(
        "{}:{}",
        standin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new("unshare");
    c.current_dir(root)
        .env("PATH", path)
        .env("SYSTEMCTL_LOG", root.join("systemctl.log"))
        .env("SYSTEMCTL_STATE", root.join("units"))
        .args([
            "-m",
            "sh",
            "-c",
            "mount -t tmpfs salt-rs-test /run/systemd && mkdir /run/systemd/system && exec \"$@\"",
            "sh",
        ])
        .arg(bin);
    states_support::salt_call(c, root, out, args).unwrap()
}

/// What the private `/run/systemd` needs: root and `unshare` for a mount namespace, and the
/// directory to mount over (systemd's runtime directory; here without systemd running).
fn mount_point() -> Result<(), Missing> {
    both(root(), command("unshare"))?;
    if Path::new("/run/systemd").is_dir() {
        Ok(())
    } else {
        Err(Missing::new(
            "no /run/systemd directory to mount a private tmpfs over",
        ))
    }
}

#[test]
fn service_states_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let Some(_) = require(mount_point()) else {
        return;
    };
    let _guard = serial();
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let tmp = TempRoot::new().unwrap();
    let (py_root, rs_root) = (tmp.path().join("py"), tmp.path().join("rs"));
    setup(&py_root);
    setup(&rs_root);
    println!(
        "service states run against the recording systemctl stand-in (systemd is not running here)"
    );
    let steps: Vec<(&str, Vec<&str>, u32)> = vec![
        ("json", vec!["state.apply", "test=True"], 80),
        ("json", vec!["state.apply"], 80),
        ("json", vec!["state.apply"], 8080),
        ("json", vec!["state.apply"], 8080),
        ("json", vec!["state.apply", "test=True"], 9090),
        ("highstate", vec!["state.apply", "test=True"], 9090),
    ];
    for (i, (out, args, port)) in steps.iter().enumerate() {
        let mut res = Vec::new();
        for (bin, root) in [(venv.bin("salt-call"), &py_root), (ours.clone(), &rs_root)] {
            let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            a.push(format!(
                "pillar={{\"outdir\": \"{}/out\", \"port\": {port}}}",
                root.display()
            ));
            let _ = std::fs::remove_file(root.join("systemctl.log"));
            let (text, rc) = salt_call(&bin, root, out, &a);
            res.push((normalize(&text, root), rc, units(root), actions(root)));
        }
        let (py, rs) = (&res[0], &res[1]);
        assert!(
            !py.0.is_empty() && !py.0.contains("OFFLINE") && py.0.contains("saltrs-e2e-web"),
            "step {i}: Salt's run: {}",
            py.0
        );
        assert_eq!(
            rs.0, py.0,
            "step {i} {args:?}: our --out {out} differs from Salt 3007.17's"
        );
        assert_eq!(rs.1, py.1, "step {i}: retcode");
        assert_eq!(rs.2, py.2, "step {i}: unit states");
        assert_eq!(
            rs.3, py.3,
            "step {i}: systemctl calls that change something"
        );
        println!(
            "step {} {args:?} port {port} --out {out}: same output, retcode {:?}, units {:?}, calls {:?}",
            i + 1,
            rs.1,
            rs.2,
            rs.3
        );
    }
}

/// `retry` (test mode note, attempts merged into one return, `__run_num__` of the last
/// attempt) and `check_cmd` (a failing and a passing check), as Salt 3007.17.
#[test]
fn retry_and_check_cmd_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let Some(_) = require(mount_point()) else {
        return;
    };
    let _guard = serial();
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let tmp = TempRoot::new().unwrap();
    let (py_root, rs_root) = (tmp.path().join("py"), tmp.path().join("rs"));
    setup(&py_root);
    setup(&rs_root);
    for (out, test) in [("json", true), ("json", false), ("highstate", false)] {
        let mut res = Vec::new();
        for (bin, root) in [(venv.bin("salt-call"), &py_root), (ours.clone(), &rs_root)] {
            let _ = std::fs::remove_file(root.join("out/count"));
            let mut a = vec!["state.apply".to_owned(), "checks".to_owned()];
            if test {
                a.push("test=True".into());
            }
            a.push(format!("pillar={{\"outdir\": \"{}/out\"}}", root.display()));
            let (text, rc) = salt_call(&bin, root, out, &a);
            let count = std::fs::read_to_string(root.join("out/count")).unwrap_or_default();
            res.push((normalize(&text, root), rc, count));
        }
        assert!(res[0].0.contains("retry-until-second"), "{}", res[0].0);
        assert_eq!(
            res[1].0, res[0].0,
            "checks test={test}: --out {out} differs from Salt's"
        );
        assert_eq!(res[1].1, res[0].1, "checks test={test}: retcode");
        assert_eq!(res[1].2, res[0].2, "checks test={test}: attempts made");
        println!(
            "checks test={test} --out {out}: same output, retcode {:?}, attempts {:?}",
            res[1].1,
            res[1].2.trim()
        );
    }
}
