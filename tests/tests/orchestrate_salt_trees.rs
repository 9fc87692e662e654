//! Salt 3008.5's own orchestrate test trees (issue 35, item 6), run through Salt 3008.5's
//! master and through ours, each with the same Python 3008.5 minion, and compared.
//!
//! The trees are those of `tests/pytests/integration/runners/state/orchestrate/
//! test_orchestrate.py` in Salt 3008.5's sdist (Apache-2.0; the sdist carries no
//! `tests/integration/files/file/base/orch/`), with the minion's id and the paths filled in as
//! the pytest fixtures do:
//!
//! * `orch-test` (a `salt.state` of `module.run test.ping`) and `orch-function-test`
//!   (`salt.function` of `test.arg_clean` and `test.ping`): `--out=highstate` text (times
//!   aside) and exit status;
//! * `nested.outer` (a `salt.runner` `state.orchestrate` of a failing inner orchestration
//!   with `failhard`): return, exit status, and the file a later step would touch not there;
//! * `orch.issue30367` (`test.false`), `orch.target-exists`, `orch.target-does-not-exist`:
//!   the JSON return (normalised: times, jids, pids out), the lines `salt-run` printed before
//!   it (Salt's "No minions matched the target. ..." for a step that targets nobody) and exit
//!   status;
//! * `orch.batch` (`batch: 1` with `failhard`, a state that fails): the JSON return and exit
//!   status, as the cases above.
//!
//! * `orch.mine` (`salt.saltutil.runner('mine.get', ...)` in its Jinja, after `salt-run
//!   mine.update <id>`; the minion has `mine_functions: {test.ping: []}` as Salt's test
//!   suite's minion does): `mine.update`'s return and the orchestration's, as JSON.
//!
//! Not run: `orch.issue43204` and `orch.retcode` (they sync the test suite's own
//! `runtests_helpers` Python modules, which the sdist does not ship and salt-rs's master does
//! not run), `orch.subset` (it needs two minions and picks one at random).
//!
//! Under `CI=true` a missing venv fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use salt_integration_tests::interop_support::{Side, serial, venv_for};
use salt_integration_tests::orch_support::{
    drop_run_keys, json_of, master_with_minions, minion_confs, salt_run, strip_times,
};
use salt_integration_tests::require;
use salt_integration_tests::{MasterConf, TempRoot, Yaml, bins, free_port_pair};
use salt_testkit::write_file;

const MINION: &str = "trees-minion";

/// Salt's trees, `@ID@` the minion's id, `@OUT@` a directory for the files steps write.
const TREES: &[(&str, &str)] = &[
    (
        "orch-test.sls",
        "call_sleep_state:\n  salt.state:\n    - tgt: @ID@\n    - sls: simple-ping\n",
    ),
    (
        "simple-ping.sls",
        "simple-ping:\n  module.run:\n    - name: test.ping\n",
    ),
    (
        "orch-function-test.sls",
        "arg_clean_test:\n  salt.function:\n    - name: test.arg_clean\n    - arg:\n      \
         - B flat major\n      - has 2 flats\n    - tgt: @ID@\n\n\
         ping_test:\n  salt.function:\n    - name: test.ping\n    - tgt: @ID@\n",
    ),
    (
        "nested/inner.sls",
        "cmd.run:\n  salt.function:\n    - tgt: @ID@\n    - arg:\n      - false\n    \
         - failhard: True\n",
    ),
    (
        "nested/outer.sls",
        "state.orchestrate:\n  salt.runner:\n    - mods: nested.inner\n    - failhard: True\n\n\
         cmd.run:\n  salt.function:\n    - tgt: @ID@\n    - arg:\n      \
         - touch @OUT@/ewu-2016-12-13\n",
    ),
    (
        "orch/issue30367.sls",
        "deploy_check:\n  salt.function:\n    - name: test.false\n    - tgt: @ID@\n",
    ),
    (
        "orch/target-exists.sls",
        "core:\n  salt.state:\n    - tgt: '@ID@*'\n    - sls:\n      - core\n\n\
         test-state:\n  salt.state:\n    - tgt: '@ID@*'\n    - sls:\n      - orch.target-test\n\n\
         cmd.run:\n  salt.function:\n    - tgt: '@ID@*'\n    - arg:\n      - echo test\n",
    ),
    (
        "orch/target-does-not-exist.sls",
        "core:\n  salt.state:\n    - tgt: 'does-not-exist*'\n    - sls:\n      - core\n\n\
         test-state:\n  salt.state:\n    - tgt: '@ID@*'\n    - sls:\n      - orch.target-test\n\n\
         cmd.run:\n  salt.function:\n    - tgt: '@ID@*'\n    - arg:\n      - echo test\n",
    ),
    (
        "orch/mine.sls",
        "{% set minion = '@ID@' %}\n\
         {% set mine = salt.saltutil.runner('mine.get', tgt=minion, fun='test.ping') %}\n\n\
         {% if mine %}\ntest.ping:\n  salt.function:\n    - tgt: \"{{ minion }}\"\n{% endif %}\n",
    ),
    (
        "orch/target-test.sls",
        "always_true:\n  test.succeed_without_changes\n",
    ),
    ("core.sls", "always_true:\n  test.succeed_without_changes\n"),
    (
        "orch/batch.sls",
        "call_fail_state:\n  salt.state:\n    - tgt: @ID@\n    - batch: 1\n    \
         - failhard: True\n    - sls: fail\n",
    ),
    (
        "fail.sls",
        "@OUT@/test-file:\n  file.managed:\n    - source: salt://hnlcfsdjhkzkdhynclarkhmcls\n",
    ),
];

/// The orchestrations compared as JSON.
const JSON_CASES: &[&str] = &[
    "nested.outer",
    "orch.issue30367",
    "orch.target-exists",
    "orch.target-does-not-exist",
    "orch.mine",
    "orch.batch",
];

/// The orchestrations compared as `--out=highstate` text.
const TEXT_CASES: &[&str] = &["orch-test", "orch-function-test"];

fn make_tree(root: &Path) {
    let out = root.join("out").display().to_string();
    for (rel, text) in TREES {
        let text = text.replace("@ID@", MINION).replace("@OUT@", &out);
        write_file(&root.join("srv"), rel, &text);
    }
    write_file(root, "pillar/top.sls", "base: {}\n");
}

/// What one master answered: per case, (return or text, exit status).
type Seen = Vec<(String, String, Option<i32>)>;

fn run_side(root: &Path, name: &str, master_side: &Side, py: &Side) -> (Seen, bool) {
    let ports = free_port_pair().unwrap();
    let conf = MasterConf::new(root.join(name))
        .id("trees_master")
        .ports(ports.0, ports.1)
        .auto_accept(true)
        .set("worker_threads", 2u32)
        .set("gather_job_timeout", 30u32)
        .set(
            "file_roots",
            Yaml::Raw(format!("{{base: ['{}']}}", root.join("srv").display())),
        )
        .set(
            "pillar_roots",
            Yaml::Raw(format!("{{base: ['{}']}}", root.join("pillar").display())),
        );
    let minions = minion_confs(root, name, &[MINION], ports)
        .into_iter()
        .map(|(id, c)| {
            (
                id,
                c.set("mine_functions", Yaml::Raw("{test.ping: []}".into())),
            )
        })
        .collect();
    let (mut master, minions) = master_with_minions(master_side, &conf, ports, py, minions);
    let conf = master.conf_dir.clone();
    let out = root.join("out");
    let mut seen = Seen::new();
    for case in TEXT_CASES {
        let r = salt_run(
            master_side,
            &conf,
            &["--out=highstate", "--no-color", "state.orchestrate", case],
        );
        seen.push((
            case.to_string(),
            strip_times(&r.stdout),
            r.status.and_then(|s| s.code()),
        ));
    }
    // `orch.mine` reads what this put in the mine.
    let r = salt_run(
        master_side,
        &conf,
        &["--out", "json", "mine.update", MINION],
    );
    seen.push((
        "mine.update".into(),
        serde_json::to_string_pretty(&json_of(&r)).unwrap(),
        r.status.and_then(|s| s.code()),
    ));
    for case in JSON_CASES.iter() {
        let r = salt_run(
            master_side,
            &conf,
            &["--out", "json", "state.orchestrate", case],
        );
        let v = drop_run_keys(&json_of(&r));
        // What `salt-run` printed before the return ("No minions matched the target. ..."
        // of a step that targets nobody), compared too.
        let printed: String = r
            .stdout
            .lines()
            .take_while(|l| !l.starts_with('{'))
            .map(|l| format!("{l}\n"))
            .collect();
        seen.push((
            case.to_string(),
            format!("{printed}{}", serde_json::to_string_pretty(&v).unwrap()),
            r.status.and_then(|s| s.code()),
        ));
    }
    // `nested.outer`'s failhard stops before the touch.
    let touched = out.join("ewu-2016-12-13").exists();
    drop(minions);
    master.proc.stop(Duration::from_secs(20));
    (seen, touched)
}

#[test]
fn salt_3008_orchestrate_trees() {
    let Some(venv) = require(venv_for("3008.5")) else {
        return;
    };
    let _guard = serial();
    let root = TempRoot::new().unwrap();
    make_tree(root.path());
    let py = Side::Salt(venv);
    let ours = Side::Ours(bins().unwrap());
    let (salt, salt_touched) = run_side(root.path(), "salt", &py, &py);
    let (rs, rs_touched) = run_side(root.path(), "ours", &ours, &py);
    // Salt's own assertions on its reference.
    let code = |seen: &Seen, case: &str| {
        seen.iter()
            .find(|(c, _, _)| c == case)
            .and_then(|(_, _, code)| *code)
    };
    assert!(!salt_touched, "Salt's nested failhard touched the file");
    for (case, want_zero) in [
        ("orch-test", true),
        ("orch-function-test", true),
        ("nested.outer", false),
        ("orch.issue30367", false),
        ("orch.target-exists", true),
        ("orch.target-does-not-exist", false),
        ("orch.batch", false),
        ("mine.update", true),
        ("orch.mine", true),
    ] {
        assert_eq!(
            code(&salt, case) == Some(0),
            want_zero,
            "Salt's exit status of {case}: {salt:#?}"
        );
    }
    let mut diffs = Vec::new();
    if rs_touched != salt_touched {
        diffs.push(format!("nested.outer touched the file: ours {rs_touched}"));
    }
    for ((case, theirs, tcode), (_, mine, mcode)) in salt.iter().zip(&rs) {
        if theirs != mine || tcode != mcode {
            diffs.push(format!(
                "{case}:\n--- ours (exit {mcode:?}) ---\n{mine}\n--- Salt (exit {tcode:?}) ---\n{theirs}"
            ));
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n\n"));
}
