//! The formula fidelity harness through a master in CI (`scripts/formulas-master.sh`): our
//! salt-master serving the ten training formulas of `../shared/formulas`, our salt-minion and
//! a stock Python 3007.17 minion connected to it; per formula `state.show_sls` and
//! `state.apply test=True` (its `pillar.example` as `pillarenv=<formula>`), then one
//! `state.show_highstate` of a top applying all ten. Every answer must be equal, and Python's
//! must be an answer (two sides failing alike to answer is `NO-ANSWER`, a failure).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use salt_integration_tests::formulas_support::{FORMULAS, HarnessRun, formulas_dir};
use salt_integration_tests::interop_support::venv_for;
use salt_integration_tests::{bins, command, require};

#[test]
fn formulas_through_our_master_same_as_python_3007() {
    let Some(dir) = require(formulas_dir()) else {
        return;
    };
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let Some(_) = require(command("python3")) else {
        return;
    };
    let b = bins().unwrap();
    let bin_dir = b.master.parent().unwrap();
    let run = HarnessRun::run(
        "formulas-master.sh",
        &dir,
        &venv,
        &[("BIN", bin_dir.display().to_string())],
    );
    let mut cells: Vec<(&str, &str)> = FORMULAS
        .iter()
        .flat_map(|f| [(*f, "show_sls"), (*f, "apply")])
        .collect();
    cells.push(("all", "show_highstate"));
    let wrong = run.not_equal(&cells);
    assert!(
        wrong.is_empty(),
        "our minion differs from Python 3007.17's on our master: {wrong:?}\n{}\n{}",
        run.report,
        run.diffs
    );
}
