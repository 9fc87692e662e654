//! The formula fidelity harness (`scripts/formulas.sh`) in CI: our `salt-call --local`
//! against Python 3007.17's on the community formulas of `../shared/formulas` (beside the
//! workspace, not copied into it), each with its `pillar.example`, for
//! `state.show_highstate` and `state.apply test=True` (`state.show_sls` is left to the
//! script: the highstate of a top applying the formula compiles the same SLS).
//! Every comparison must be equal except those in [`KNOWN`], each with its reason; a
//! known difference that has become equal fails too, so the list only shrinks.
//!
//! Salt 3006.30's and 3008.5's minions are compared on the same formulas through a master
//! (`formulas_master.rs`: `state.show_sls` and `state.apply test=True`, where they answer as
//! 3007.17's does ours must too) and by a real apply (`formulas_real.rs`), so this run does
//! not repeat those `salt-call --local` answers (the harness still can: `ALSO`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use salt_integration_tests::formulas_support::{FORMULAS, HarnessRun, formulas_dir};
use salt_integration_tests::interop_support::venv_for;
use salt_integration_tests::{bins, both, command, require};

/// The comparisons run per formula (the harness's command names).
const CMDS: &[&str] = &["show_highstate", "apply"];

/// Known differences: (formula, command, reason). Empty: all are equal today.
const KNOWN: &[(&str, &str, &str)] = &[];

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
    let run = HarnessRun::run(
        "formulas.sh",
        &dir,
        &venv,
        &[
            ("SALT_CALL", ours.display().to_string()),
            ("CMDS", CMDS.join(" ")),
        ],
    );
    let (report, diffs) = (&run.report, &run.diffs);
    let cell = |f: &str, c: &str| run.cell(f, c);
    let mut wrong = Vec::new();
    let mut fixed = Vec::new();
    for f in FORMULAS {
        for c in CMDS {
            let cell = cell(f, c);
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
