//! The formula fidelity harness (`scripts/formulas.sh`) in CI: our `salt-call --local`
//! against Python 3007.17's on the community formulas of `../shared/formulas` (beside the
//! workspace, not copied into it), each with its `pillar.example`, for
//! `state.show_highstate` and `state.apply test=True` (`state.show_sls` is left to the
//! script: the highstate of a top applying the formula compiles the same SLS).
//! Every comparison must be equal except those in [`KNOWN`], each with its reason; a
//! known difference that has become equal fails too, so the list only shrinks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

use salt_integration_tests::interop_support::venv_for;
use salt_integration_tests::{Missing, TempRoot, bins, both, command, require, workspace_root};

/// The training formulas (folder names under `../shared/formulas`).
const FORMULAS: &[&str] = &[
    "apache",
    "cron",
    "fail2ban",
    "logrotate",
    "packages",
    "postgres",
    "resolver",
    "sudoers",
    "sysctl",
    "systemd",
];

/// The comparisons run per formula (the harness's command names).
const CMDS: &[&str] = &["show_highstate", "apply"];

/// Known differences: (formula, command, reason). Empty: all are equal today.
const KNOWN: &[(&str, &str, &str)] = &[];

fn formulas_dir() -> Result<PathBuf, Missing> {
    let dir = workspace_root().join("../shared/formulas");
    let missing: Vec<&str> = FORMULAS
        .iter()
        .copied()
        .filter(|f| !dir.join(f).join(f).is_dir())
        .collect();
    if missing.is_empty() {
        Ok(dir)
    } else {
        Err(Missing::new(format!(
            "the community formulas {missing:?} under {} (../shared/formulas beside the \
             workspace, each <name>/<name>/ with pillar.example)",
            dir.display()
        )))
    }
}

#[test]
fn formulas_same_as_python_3007() {
    let Some(dir) = require(formulas_dir()) else {
        return;
    };
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let Some(_) = require(both(command("python3"), command("time"))) else {
        return;
    };
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let venv_root = venv.bin("salt-call");
    let venv_root = venv_root.parent().and_then(|p| p.parent()).unwrap();
    let tmp = TempRoot::new().unwrap();
    let results = tmp.path().join("results");
    let out = Command::new("bash")
        .arg(workspace_root().join("scripts/formulas.sh"))
        .args(FORMULAS.iter().map(|f| dir.join(f)))
        .env("SALT_VENV", venv_root)
        .env("SALT_CALL", &ours)
        .env("CMDS", CMDS.join(" "))
        .env("RESULTS", &results)
        .env("VERBOSE", "1")
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    let diffs = String::from_utf8_lossy(&out.stderr);
    println!("{report}");
    let lines = std::fs::read_to_string(&results).unwrap_or_default();
    let mut wrong = Vec::new();
    let mut fixed = Vec::new();
    for f in FORMULAS {
        for c in CMDS {
            let cell = lines
                .lines()
                .filter_map(|l| l.split_once(' '))
                .filter(|(n, _)| n == f)
                .find_map(|(_, rest)| rest.strip_prefix(&format!("{c} ")))
                .unwrap_or("not run");
            let known = KNOWN.iter().find(|(kf, kc, _)| kf == f && kc == c);
            match (cell == "equal", known) {
                (true, Some((_, _, why))) => fixed.push(format!("{f} {c} ({why})")),
                (false, None) => wrong.push(format!("{f} {c}: {cell}")),
                _ => {}
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "differs from Salt 3007.17: {wrong:?}\n{report}\n{diffs}"
    );
    assert!(
        fixed.is_empty(),
        "now equal, remove from KNOWN: {fixed:?}\n{report}"
    );
}
