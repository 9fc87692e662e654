//! `parallel: True` (issue 35, item 2's requisites) in an orchestration on the master and in a
//! state run on the minion (one state engine): Salt 3007.17's master with a Python minion,
//! then our master with our minion, the same tree.
//!
//! `orch.par` has two `parallel: True` `salt.function` steps (`cmd.run 'sleep 2; echo a'`,
//! `test.echo b`), a step that `require`s both (Salt waits for the parallel returns before
//! checking it), and a `salt.state` step applying `par` on the minion. `par` has two
//! `parallel: True` `cmd.run` states writing files, a third that `require`s both and
//! concatenates their files, a failing `parallel: True` `test.fail_without_changes` and an
//! `onfail` state on it (so the parallel return is merged before `onfail` is judged).
//! Compared: `salt-run --out json state.orchestrate orch.par` (times, jids and pids out;
//! `__parallel__` in), its exit status, and the files the minion wrote.
//!
//! Under `CI=true` a missing venv fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use salt_integration_tests::interop_support::{Side, serial, venv_for};
use salt_integration_tests::orch_support::{
    drop_run_keys, files_under, master_with_minions, minion_confs,
};
use salt_integration_tests::{MasterConf, TempRoot, Yaml, bins, free_port_pair};
use salt_integration_tests::{cli::CmdOutput, require};
use salt_testkit::write_file;
use serde_json::Value;

const MINION: &str = "par-m";

fn make_tree(root: &Path) {
    let srv = root.join("srv");
    let o = root.join("out").display().to_string();
    write_file(
        &srv,
        "orch/par.sls",
        "slow-a:\n  salt.function:\n    - name: cmd.run\n    - tgt: par-m\n    - timeout: 60\n    - arg:\n      - 'sleep 2; echo a'\n    - parallel: True\n\n\
         quick-b:\n  salt.function:\n    - name: test.echo\n    - tgt: par-m\n    - timeout: 60\n    - arg:\n      - b\n    - parallel: True\n\n\
         after-both:\n  salt.function:\n    - name: test.echo\n    - tgt: par-m\n    - timeout: 60\n    - arg:\n      - after\n    - require:\n      - salt: slow-a\n      - salt: quick-b\n\n\
         minion-par:\n  salt.state:\n    - tgt: par-m\n    - sls: par\n    - timeout: 60\n    - require:\n      - salt: after-both\n",
    );
    write_file(
        &srv,
        "par.sls",
        &format!(
            "p-one:\n  cmd.run:\n    - name: 'mkdir -p {o} && sleep 1 && echo one > {o}/one'\n    - parallel: True\n\n\
             p-two:\n  cmd.run:\n    - name: 'mkdir -p {o} && echo two > {o}/two'\n    - parallel: True\n\n\
             p-three:\n  cmd.run:\n    - name: 'cat {o}/one {o}/two > {o}/three'\n    - require:\n      - cmd: p-one\n      - cmd: p-two\n\n\
             p-fail:\n  test.fail_without_changes:\n    - parallel: True\n\n\
             p-rescue:\n  test.succeed_with_changes:\n    - onfail:\n      - test: p-fail\n"
        ),
    );
    write_file(root, "pillar/top.sls", "base: {}\n");
}

struct Seen {
    ret: Value,
    code: Option<i32>,
    files: BTreeMap<String, String>,
}

fn run_side(root: &Path, name: &str, side: &Side) -> Seen {
    let ports = free_port_pair().unwrap();
    let out = root.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let conf = MasterConf::new(root.join(name))
        .id("par_master")
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
    let minions = minion_confs(root, name, &[MINION], ports);
    let (mut master, minions) = master_with_minions(side, &conf, ports, side, minions);
    let bin = side.salt_bin().with_file_name("salt-run");
    let r: CmdOutput = salt_integration_tests::cli::salt(
        &bin,
        None,
        &master.conf_dir,
        &["--out", "json", "state.orchestrate", "orch.par"],
        Duration::from_secs(480),
    )
    .unwrap();
    let ret = match serde_json::from_str::<Value>(r.stdout.trim()) {
        Ok(v) => drop_run_keys(&v),
        Err(e) => panic!("{name}: not JSON ({e}):\n{}\n{}", r.stdout, r.stderr),
    };
    let seen = Seen {
        ret,
        code: r.status.and_then(|s| s.code()),
        files: files_under(&out),
    };
    drop(minions);
    master.proc.stop(Duration::from_secs(20));
    seen
}

#[test]
fn parallel_states_same_as_salt() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let root = TempRoot::new().unwrap();
    make_tree(root.path());
    let salt = run_side(root.path(), "salt", &Side::Salt(venv));
    // What Salt does with this tree (the reference itself, so a change in Salt shows here).
    assert_eq!(
        salt.files.get("three").map(String::as_str),
        Some("one\ntwo\n"),
        "Salt's run: {:#}\nfiles: {:?}",
        salt.ret,
        salt.files
    );
    assert_eq!(salt.code, Some(1), "Salt's run: {:#}", salt.ret);
    let ours = run_side(root.path(), "ours", &Side::Ours(bins().unwrap()));
    let p = |v: &Value| serde_json::to_string_pretty(v).unwrap();
    assert!(
        ours.ret == salt.ret,
        "state.orchestrate orch.par:\n--- ours ---\n{}\n--- Salt ---\n{}",
        p(&ours.ret),
        p(&salt.ret)
    );
    assert_eq!(ours.code, salt.code, "exit status");
    assert_eq!(ours.files, salt.files, "files the minion wrote");
}
