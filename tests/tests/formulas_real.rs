//! A real `state.apply` of each training formula (`scripts/formulas.sh`'s `real`): our
//! `salt-call --local` and Python 3007.17's, each in a throwaway root (an overlay of `/` over
//! a tmpfs in private mount and network namespaces, `/proc/sys` read-only), so real changes
//! are made without touching the host. The answers and the files each side changed must be
//! equal, and Python's must be an answer (`NO-ANSWER` fails). The same with Python 3006.30's
//! and 3008.5's (`ALSO`): equal where they answer as 3007.17's does; where they differ
//! (Salt's own change between versions), ours must be 3007.17's (`ours=3007.17`). Needs root
//! and `unshare`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use salt_integration_tests::formulas_support::{FORMULAS, HarnessRun, formulas_dir};
use salt_integration_tests::interop_support::venv_for;
use salt_integration_tests::{bins, both, command, require, root};

/// The other Salt versions whose real apply is compared.
const ALSO: &[&str] = &["3006.30", "3008.5"];

#[test]
fn formulas_real_apply_same_as_python_3006_3007_3008() {
    let Some(dir) = require(formulas_dir()) else {
        return;
    };
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let Some(_) = require(both(root(), both(command("unshare"), command("time")))) else {
        return;
    };
    let mut also = Vec::new();
    for v in ALSO {
        let Some(venv) = require(venv_for(v)) else {
            return;
        };
        also.push(format!("{v}={}", venv.dir.display()));
    }
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let run = HarnessRun::run(
        "formulas.sh",
        &dir,
        &venv,
        &[
            ("SALT_CALL", ours.display().to_string()),
            ("CMDS", "real".to_owned()),
            ("ALSO", also.join(" ")),
            ("ALSO_CMDS", "real".to_owned()),
        ],
    );
    let cells: Vec<(&str, &str)> = FORMULAS.iter().map(|f| (*f, "real")).collect();
    let mut wrong = run.not_equal(&cells);
    for f in FORMULAS {
        for v in ALSO {
            let cell = run.cell(f, &format!("real@{v}"));
            if cell == "ours=3007.17" {
                println!("{f} real: Salt {v} differs from 3007.17; ours is 3007.17's");
            } else if cell != "equal" {
                wrong.push(format!("{f} real@{v}: {cell}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "a real state.apply differs from Python's: {wrong:?}\n{}\n{}",
        run.report,
        run.diffs
    );
}
