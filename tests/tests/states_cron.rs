//! `cron.present`/`absent` and `cron.env_present`/`env_absent` against Python 3007.17's
//! `salt-call --local`, on the crontab of a uniquely named user (`saltrs-e2e-cron`, created
//! for the test, removed with its crontab at the end) that starts with environment lines and
//! one Salt-managed job. Steps, each from the same start: `test=True`, apply, apply again,
//! `test=True` and apply with another pillar value. Each step: same `--out json` (times and
//! roots blanked), same retcode, same crontab. Needs `crontab` (Debian package `cron`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::states_support::{local_minion, normalize, salt_call};
use salt_integration_tests::{TempRoot, bins, workspace_root};
use salt_integration_tests::{both, command, require, root};

const USER: &str = "saltrs-e2e-cron";
const START: &str = "MAILTO=root\n# Lines below here are managed by Salt, do not edit\n# SALT_CRON_IDENTIFIER:/bin/old\n0 0 * * * /bin/old\n";

const START_ENV: &str = "MAILTO=root\n# Lines below here are managed by Salt, do not edit\nSHELL=/bin/sh\nPATH=/usr/bin:/bin\nRETRIES=3\n# SALT_CRON_IDENTIFIER:/bin/old\n0 0 * * * /bin/old\n";

fn reset(root: &Path, start: &str) {
    cleanup();
    let out = Command::new("useradd").args(["-M", USER]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f = root.join("start.cron");
    std::fs::write(&f, start).unwrap();
    let out = Command::new("crontab")
        .args(["-u", USER])
        .arg(&f)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn cleanup() {
    let _ = Command::new("crontab").args(["-r", "-u", USER]).output();
    let _ = Command::new("userdel").arg(USER).output();
}

fn crontab() -> String {
    let out = Command::new("crontab")
        .args(["-l", "-u", USER])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn setup(root: &Path, data: &str) {
    let tree = workspace_root().join("tests/data").join(data);
    local_minion(root, &tree, Some(&root.join("pillar")), "").unwrap();
}

/// Runs the five steps (`key` set to the first value, then the second) with Salt's
/// `salt-call` and ours from `start` on `data`, and asserts each step the same.
fn same_steps(data: &str, start: &str, key: &str, values: [&str; 2], expect: &str) {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let Some(_) = require(both(root(), command("crontab"))) else {
        return;
    };
    let _guard = serial();
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let tmp = TempRoot::new().unwrap();
    let (py_root, rs_root) = (tmp.path().join("py"), tmp.path().join("rs"));
    setup(&py_root, data);
    setup(&rs_root, data);
    let [a, b] = values;
    let steps: [(bool, &str); 5] = [(true, a), (false, a), (false, a), (true, b), (false, b)];
    let mut outs = Vec::new();
    for (bin, root) in [(venv.bin("salt-call"), &py_root), (ours, &rs_root)] {
        reset(root, start);
        let mut mine = Vec::new();
        for (test, value) in steps {
            let mut args = vec!["state.apply".to_owned()];
            if test {
                args.push("test=True".into());
            }
            args.push(format!("pillar={{\"{key}\": \"{value}\"}}"));
            let (o, rc) = salt_call(Command::new(&bin), root, "json", &args).unwrap();
            mine.push((normalize(&o, root), rc, crontab()));
        }
        outs.push(mine);
    }
    cleanup();
    for (i, ((py, rs), (test, value))) in outs[0].iter().zip(&outs[1]).zip(steps).enumerate() {
        assert!(py.0.contains(expect), "step {i}: Salt's run: {}", py.0);
        assert_eq!(
            rs.0, py.0,
            "step {i} test={test} {key}={value}: our --out json differs from Salt 3007.17's"
        );
        assert_eq!(rs.1, py.1, "step {i}: retcode");
        assert_eq!(rs.2, py.2, "step {i}: crontab");
        println!(
            "step {} test={test} {key}={value}: same output, retcode {:?}, crontab {:?}",
            i + 1,
            rs.1,
            rs.2
        );
    }
}

#[test]
fn cron_states_same_as_python_3007() {
    same_steps("states-cron", START, "minute", ["15", "45"], "/bin/true");
}

/// `RETRIES: 3` (an integer) is rewritten on every apply, `EMPTY` (no value) too, as Salt
/// compares the state's value with the listed text; `SHELL` is removed, ` NEVER ` stripped.
#[test]
fn cron_env_states_same_as_python_3007() {
    let mails = ["ops@example.com", "root"];
    same_steps("states-cron-env", START_ENV, "mailto", mails, "Cron env");
}
