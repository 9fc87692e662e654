//! The formula fidelity harness through a master in CI (`scripts/formulas-master.sh`): a
//! master serving the ten training formulas of `../shared/formulas`, our salt-minion and
//! stock Python minions connected to it; per formula `state.show_sls` and
//! `state.apply test=True` (its `pillar.example` as `pillarenv=<formula>`), then one
//! `state.show_highstate` of a top applying all ten. Our minion must answer as Python
//! 3007.17's does, and as 3006.30's and 3008.5's where they answer as 3007.17's (where they
//! differ, Salt's own change between versions, ours must be 3007.17's: `ours=3007.17`).
//! Python's must be an answer (two sides failing alike to answer is `NO-ANSWER`, a failure).
//! Twice: on our salt-master, and on Salt 3007.17's own (our minion served by Salt's master).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use salt_integration_tests::formulas_support::{FORMULAS, HarnessRun, formulas_dir};
use salt_integration_tests::interop_support::venv_for;
use salt_integration_tests::{bins, command, require};

/// The other Salt versions whose minions are compared on our master.
const ALSO: &[&str] = &["3006.30", "3008.5"];

/// The cells of a run: per formula and command, and `@version` for each of `also`.
fn check(master: &str, also: &[&str]) {
    let Some(dir) = require(formulas_dir()) else {
        return;
    };
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let Some(_) = require(command("python3")) else {
        return;
    };
    let mut also_env = Vec::new();
    for v in also {
        let Some(venv) = require(venv_for(v)) else {
            return;
        };
        also_env.push(format!("{v}={}", venv.dir.display()));
    }
    let b = bins().unwrap();
    let bin_dir = b.master.parent().unwrap();
    let run = HarnessRun::run(
        "formulas-master.sh",
        &dir,
        &venv,
        &[
            ("BIN", bin_dir.display().to_string()),
            ("MASTER", master.to_owned()),
            ("ALSO", also_env.join(" ")),
        ],
    );
    let mut cells: Vec<(&str, &str)> = FORMULAS
        .iter()
        .flat_map(|f| [(*f, "show_sls"), (*f, "apply")])
        .collect();
    cells.push(("all", "show_highstate"));
    let mut wrong = run.not_equal(&cells);
    for (f, c) in &cells {
        for v in also {
            let cell = run.cell(f, &format!("{c}@{v}"));
            if cell == "ours=3007.17" {
                println!("{f} {c}: Salt {v} differs from 3007.17; ours is 3007.17's");
            } else if cell != "equal" {
                wrong.push(format!("{f} {c}@{v}: {cell}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "our minion differs from Python's on {master} master: {wrong:?}\n{}\n{}",
        run.report,
        run.diffs
    );
}

#[test]
fn formulas_through_our_master_same_as_python_3006_3007_3008() {
    check("our", ALSO);
}

#[test]
fn formulas_through_salts_master_same_as_python_3007() {
    check("salt", &[]);
}
