//! `sysctl.present` against Python 3007.17's `salt-call --local`, with the config file in a
//! temporary root. The applied value is the running `vm.swappiness` (the host's kernel
//! setting is written with the value it has), plus a key the kernel does not have. Steps:
//! `test=True` (no config file), apply (file created), apply again (already set), `test=True`
//! with other values and whitespace-separated ones. Each step: same `--out json` (times and
//! roots blanked), same retcode, same config file. Needs `sysctl` (Debian package `procps`)
//! and root.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use salt_integration_tests::interop_support::venv_for;
use salt_integration_tests::states_support::{local_minion, normalize, salt_call};
use salt_integration_tests::{TempRoot, bins, workspace_root};
use salt_integration_tests::{both, command, require, root};

#[test]
fn sysctl_present_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let Some(_) = require(both(root(), command("sysctl"))) else {
        return;
    };
    let out = Command::new("sysctl")
        .args(["-n", "vm.swappiness"])
        .output()
        .unwrap();
    let current: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let tree = workspace_root().join("tests/data/states-sysctl");
    let tmp = TempRoot::new().unwrap();
    let steps = [true, false, false, true];
    let mut outs = Vec::new();
    for (side, bin) in [("py", venv.bin("salt-call")), ("rs", ours)] {
        let root = tmp.path().join(side);
        local_minion(&root, &tree, None, "").unwrap();
        let config = root.join("sysctl.d/90-salt-rs-test.conf");
        let mut mine = Vec::new();
        for (i, test) in steps.into_iter().enumerate() {
            let mut args = vec!["state.apply".to_owned()];
            if test {
                args.push("test=True".into());
            }
            let test_only = i == 3;
            args.push(format!(
                "pillar={{\"current\": {current}, \"config\": \"{}\", \"test_only\": {test_only}}}",
                config.display()
            ));
            let (o, rc) = salt_call(Command::new(&bin), &root, "json", &args).unwrap();
            let file = std::fs::read_to_string(&config).unwrap_or_default();
            mine.push((normalize(&o, &root), rc, file));
        }
        outs.push(mine);
    }
    for (i, (py, rs)) in outs[0].iter().zip(&outs[1]).enumerate() {
        assert!(
            py.0.contains("vm.swappiness"),
            "step {i}: Salt's run: {}",
            py.0
        );
        assert_eq!(
            rs.0, py.0,
            "step {i}: our --out json differs from Salt 3007.17's"
        );
        assert_eq!(rs.1, py.1, "step {i}: retcode");
        assert_eq!(rs.2, py.2, "step {i}: config file");
        println!(
            "step {}: same output, retcode {:?}, config {:?}",
            i + 1,
            rs.1,
            rs.2
        );
    }
}
