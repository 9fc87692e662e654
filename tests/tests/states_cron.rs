//! `cron.present`/`absent` against Python 3007.17's `salt-call --local`, on the crontab of
//! a uniquely named user (`saltrs-e2e-cron`, created for the test, removed with its crontab
//! at the end) that starts with a `MAILTO` line and one Salt-managed job. Steps, each from
//! the same start: `test=True`, apply, apply again, `test=True` and apply with another
//! minute. Each step: same `--out json` (times and roots blanked), same retcode, same
//! crontab. Needs `crontab` (Debian package `cron`); skipped with a message without it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::states_support::{local_minion, normalize, salt_call};
use salt_integration_tests::{TempRoot, bins, workspace_root};
use salt_integration_tests::{both, command, require, root};

const USER: &str = "saltrs-e2e-cron";
const START: &str = "MAILTO=root\n# Lines below here are managed by Salt, do not edit\n# SALT_CRON_IDENTIFIER:/bin/old\n0 0 * * * /bin/old\n";

fn reset(root: &Path) {
    cleanup();
    let out = Command::new("useradd").args(["-M", USER]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f = root.join("start.cron");
    std::fs::write(&f, START).unwrap();
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

fn setup(root: &Path) {
    let tree = workspace_root().join("tests/data/states-cron");
    local_minion(root, &tree, Some(&root.join("pillar")), "").unwrap();
}

#[test]
fn cron_states_same_as_python_3007() {
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
    setup(&py_root);
    setup(&rs_root);
    let steps: [(bool, u32); 5] = [
        (true, 15),
        (false, 15),
        (false, 15),
        (true, 45),
        (false, 45),
    ];
    let mut outs = Vec::new();
    for (bin, root) in [(venv.bin("salt-call"), &py_root), (ours, &rs_root)] {
        reset(root);
        let mut mine = Vec::new();
        for (test, minute) in steps {
            let mut args = vec!["state.apply".to_owned()];
            if test {
                args.push("test=True".into());
            }
            args.push(format!("pillar={{\"minute\": {minute}}}"));
            let (o, rc) = salt_call(Command::new(&bin), root, "json", &args).unwrap();
            mine.push((normalize(&o, root), rc, crontab()));
        }
        outs.push(mine);
    }
    cleanup();
    for (i, ((py, rs), (test, minute))) in outs[0].iter().zip(&outs[1]).zip(steps).enumerate() {
        assert!(py.0.contains("/bin/true"), "step {i}: Salt's run: {}", py.0);
        assert_eq!(
            rs.0, py.0,
            "step {i} test={test} minute={minute}: our --out json differs from Salt 3007.17's"
        );
        assert_eq!(rs.1, py.1, "step {i}: retcode");
        assert_eq!(rs.2, py.2, "step {i}: crontab");
        println!(
            "step {} test={test} minute={minute}: same output, retcode {:?}, crontab {:?}",
            i + 1,
            rs.1,
            rs.2
        );
    }
}
