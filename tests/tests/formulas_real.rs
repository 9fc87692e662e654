//! A real `state.apply` of each training formula (`scripts/formulas.sh`'s `real`): our
//! `salt-call --local` and Python 3007.17's, each in a throwaway root (an overlay of `/` over
//! a tmpfs in private mount and network namespaces, `/proc/sys` read-only), so real changes
//! are made without touching the host. The answers and the files each side changed must be
//! equal, and Python's must be an answer (`NO-ANSWER` fails). Needs root and `unshare`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use salt_integration_tests::formulas_support::{FORMULAS, HarnessRun, formulas_dir};
use salt_integration_tests::interop_support::venv_for;
use salt_integration_tests::{bins, both, command, require, root};

#[test]
fn formulas_real_apply_same_as_python_3007() {
    let Some(dir) = require(formulas_dir()) else {
        return;
    };
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let Some(_) = require(both(root(), both(command("unshare"), command("time")))) else {
        return;
    };
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let run = HarnessRun::run(
        "formulas.sh",
        &dir,
        &venv,
        &[
            ("SALT_CALL", ours.display().to_string()),
            ("CMDS", "real".to_owned()),
        ],
    );
    let cells: Vec<(&str, &str)> = FORMULAS.iter().map(|f| (*f, "real")).collect();
    let wrong = run.not_equal(&cells);
    assert!(
        wrong.is_empty(),
        "a real state.apply differs from Python 3007.17's: {wrong:?}\n{}\n{}",
        run.report,
        run.diffs
    );
}
