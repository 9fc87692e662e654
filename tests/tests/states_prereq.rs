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
use std::process::Command;

use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::require;
use salt_integration_tests::states_support::{local_minion, normalize, salt_call};
use salt_integration_tests::{TempRoot, bins, workspace_root};

fn setup(root: &Path) {
    let tree = workspace_root().join("tests/data/states-prereq");
    local_minion(root, &tree, None, "").unwrap();
    std::fs::write(root.join("out/stable.conf"), "stable\n").unwrap();
}

fn files(root: &Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let mut v: Vec<String> = std::fs::read_dir(root.join("out"))
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let m = std::fs::metadata(&p).unwrap();
            format!(
                "{} {:o} {:?}",
                p.file_name().unwrap().to_string_lossy(),
                m.mode() & 0o7777,
                std::fs::read_to_string(&p).unwrap_or_default()
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn prereq_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let tmp = TempRoot::new().unwrap();
    let (py_root, rs_root) = (tmp.path().join("py"), tmp.path().join("rs"));
    setup(&py_root);
    setup(&rs_root);
    let steps: [(bool, u32); 5] = [(true, 1), (false, 1), (false, 1), (true, 2), (false, 2)];
    for (i, (test, version)) in steps.iter().enumerate() {
        let mut res = Vec::new();
        for (bin, root) in [(venv.bin("salt-call"), &py_root), (ours.clone(), &rs_root)] {
            let mut args = vec!["state.apply".to_owned()];
            if *test {
                args.push("test=True".into());
            }
            args.push(format!(
                "pillar={{\"outdir\": \"{}/out\", \"version\": {version}}}",
                root.display()
            ));
            let (o, rc) = salt_call(Command::new(bin), root, "json", &args).unwrap();
            res.push((normalize(&o, root), rc, files(root)));
        }
        assert!(
            res[0].0.contains("\"__run_num__\": 20"),
            "step {i}: Salt's run: {}",
            res[0].0
        );
        assert_eq!(
            res[1].0, res[0].0,
            "step {i}: test={test} version={version} differs from Salt 3007.17's"
        );
        assert_eq!(res[1].1, res[0].1, "step {i}: retcode");
        assert_eq!(res[1].2, res[0].2, "step {i}: files");
        println!(
            "step {} test={test} version={version}: same output, retcode {:?}, files",
            i + 1,
            res[1].1
        );
    }
}
