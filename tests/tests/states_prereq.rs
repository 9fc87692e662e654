//! `prereq` and `prereq_in` against Python 3007.17's `salt-call --local`, each in its own
//! throwaway root, on the tree `tests/data/states-prereq`: a pre-required file that changes
//! (the pre-requiring command runs first), one already right (the command is not run: "No
//! changes detected"), the `prereq_in` form, a pre-requiring command that fails (the file is
//! not changed: its test run is its return), a pre-required state failing in its test run, a
//! `prereq` naming nothing, a pre-required state ordered first and named as a bare string
//! with two states pre-requiring it, `prereq` on a whole SLS, a pre-required state naming a
//! missing requisite (Salt leaves it out of the output), and a `require` on a
//! pre-requiring state. Steps: `test=True`, apply, apply again, then with a new version
//! `test=True` and apply. Each step: same `--out json` (times, pids, roots blanked), same
//! retcode, same files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::require;
use salt_integration_tests::states_support::{Pair, assert_same, local_minion, out_files};
use salt_integration_tests::workspace_root;

fn setup(root: &Path) {
    let tree = workspace_root().join("tests/data/states-prereq");
    local_minion(root, &tree, None, "").unwrap();
    std::fs::write(root.join("out/stable.conf"), "stable\n").unwrap();
}

#[test]
fn prereq_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let pair = Pair::new(&venv, setup).unwrap();
    let steps: [(bool, u32); 5] = [(true, 1), (false, 1), (false, 1), (true, 2), (false, 2)];
    for (i, (test, version)) in steps.iter().enumerate() {
        let args = |root: &Path| {
            let mut args = vec!["state.apply".to_owned()];
            if *test {
                args.push("test=True".into());
            }
            args.push(format!(
                "pillar={{\"outdir\": \"{}/out\", \"version\": {version}}}",
                root.display()
            ));
            args
        };
        let seen = pair.run("json", args, out_files).unwrap();
        let step = format!("step {} test={test} version={version}", i + 1);
        assert_same(&step, &seen[0], &seen[1], "\"__run_num__\": 20");
    }
}
