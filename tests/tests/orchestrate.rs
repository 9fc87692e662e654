//! Orchestrate (issue 35, item 2): the same orchestration on Salt 3007.17's master and on
//! ours, each with the same two Python 3007.17 minions, compared.
//!
//! `orch.main` has a `salt.function` step (`test.ping`), a `salt.state` step (`sls: web`,
//! with the orchestration's `pillar=` handed on as the minions' pillar) that `require`s it, a
//! `salt.runner` step (`fileserver.file_list`), a failing `salt.function` (`cmd.run exit 3`)
//! and an `onfail` step that writes a file (each job step with `timeout: 60`, room for a loaded
//! box). Per master: `salt-run --out json
//! state.orchestrate orch.main pillar='{...}'` (the return normalised: times and jids out),
//! the files the minions wrote, and `salt-run`'s exit status (1); `state.orch orch.main
//! test=True` (exit 0, nothing written); `state.orch orch.ok` (exit 0);
//! `state.orchestrate_show_sls orch.main` (equal high data); `state.orchestrate_single` of a
//! `salt.function`; `--out highstate` of `orch.ok` (times aside); an SLS that does not exist
//! (the compile error, exit 1) and `pillar=` that is not a dict (exit status). The two sides
//! must agree.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use salt_integration_tests::interop_support::{Side, serial, venv_for};
use salt_integration_tests::orch_support::{
    drop_run_keys_and, files_under, json_of, master_with_minions, minion_confs, salt_run,
    strip_times,
};
use salt_integration_tests::require;
use salt_integration_tests::{MasterConf, TempRoot, Yaml, bins, free_port_pair};
use salt_testkit::write_file;
use serde_json::Value;

const MINIONS: [&str; 2] = ["orch-a", "orch-b"];

fn step(t0: Instant, what: &str) {
    println!("[{:6.1}s] {what}", t0.elapsed().as_secs_f64());
}

/// The master's trees: orchestrations under `orch/`, the minions' `web` state; files go
/// under `<root>/out/<minion id>/`.
fn make_tree(root: &Path) {
    let srv = root.join("srv");
    let o = root.join("out").display().to_string();
    write_file(
        &srv,
        "orch/main.sls",
        &format!(
            "ping-all:\n  salt.function:\n    - name: test.ping\n    - tgt: 'orch-*'\n    - timeout: 60\n\n\
             apply-web:\n  salt.state:\n    - tgt: 'orch-*'\n    - sls: web\n    - timeout: 60\n    - pillar:\n        color: {{{{ pillar.get('color', 'none') }}}}\n    - require:\n      - salt: ping-all\n\n\
             list-files:\n  salt.runner:\n    - name: fileserver.file_list\n    - require:\n      - salt: apply-web\n\n\
             failing:\n  salt.function:\n    - name: cmd.run\n    - tgt: orch-a\n    - timeout: 60\n    - arg:\n      - 'exit 3'\n    - require:\n      - salt: list-files\n\n\
             recover:\n  salt.function:\n    - name: cmd.run\n    - tgt: orch-b\n    - timeout: 60\n    - arg:\n      - 'mkdir -p {o}/orch-b && echo {{{{ pillar.get(\"note\", \"none\") }}}} > {o}/orch-b/recovered'\n    - onfail:\n      - salt: failing\n\n\
             not-needed:\n  salt.function:\n    - name: test.ping\n    - tgt: orch-a\n    - onfail:\n      - salt: ping-all\n"
        ),
    );
    write_file(
        &srv,
        "orch/ok.sls",
        "hello:\n  test.succeed_without_changes: []\n\n\
         ping-b:\n  salt.function:\n    - name: test.echo\n    - tgt: orch-b\n    - timeout: 60\n    - arg:\n      - hi\n    - require:\n      - test: hello\n",
    );
    write_file(
        &srv,
        "web.sls",
        &format!(
            "web-conf:\n  file.managed:\n    - name: {o}/{{{{ grains['id'] }}}}/web.conf\n    - contents: color={{{{ pillar.get('color', 'unset') }}}}\n    - makedirs: True\n"
        ),
    );
    write_file(root, "pillar/top.sls", "base: {}\n");
}

fn master_conf(root: &Path, name: &str, ports: (u16, u16)) -> MasterConf {
    MasterConf::new(root.join(name))
        .id("orch_master")
        .ports(ports.0, ports.1)
        .auto_accept(true)
        .set("worker_threads", 2u32)
        // Room for slow Python minions on a loaded box (the steps set `timeout: 60`).
        .set("gather_job_timeout", 30u32)
        .set(
            "file_roots",
            Yaml::Raw(format!("{{base: ['{}']}}", root.join("srv").display())),
        )
        .set(
            "pillar_roots",
            Yaml::Raw(format!("{{base: ['{}']}}", root.join("pillar").display())),
        )
}

/// What one master answered.
#[derive(Debug, Default)]
struct Seen {
    main: Value,
    main_code: Option<i32>,
    files: BTreeMap<String, String>,
    dry: Value,
    dry_code: Option<i32>,
    dry_files: usize,
    ok: Value,
    ok_code: Option<i32>,
    ok_text: String,
    show: Value,
    single: Value,
    missing: Value,
    missing_code: Option<i32>,
    bad_pillar_code: Option<i32>,
}

/// An empty `out/`, made before the minions write under it: two Python minions making
/// `out/<id>/` at once race on `out` itself (`[Errno 17] File exists`, seen in CI).
fn fresh_out(out: &Path) {
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out).expect("make out/");
}

/// Start `master_side`'s master with two Python minions, run the orchestrations, stop.
fn run_side(root: &Path, name: &str, master_side: &Side, py: &Side, t0: Instant) -> Seen {
    let ports = free_port_pair().unwrap();
    let out = root.join("out");
    fresh_out(&out);
    let minions = minion_confs(root, name, &MINIONS, ports);
    let (mut master, minions) = master_with_minions(
        master_side,
        &master_conf(root, name, ports),
        ports,
        py,
        minions,
    );
    step(t0, &format!("{name}: master and minions up"));
    let conf = master.conf_dir.clone();
    let pillar = r#"pillar={"color": "green", "note": "hello"}"#;
    let mut seen = Seen::default();

    let r = salt_run(
        master_side,
        &conf,
        &["--out", "json", "state.orchestrate", "orch.main", pillar],
    );
    seen.main = normalize_orch(&json_of(&r));
    seen.main_code = r.status.and_then(|s| s.code());
    seen.files = files_under(&out);
    step(t0, &format!("{name}: state.orchestrate orch.main"));

    fresh_out(&out);
    let r = salt_run(
        master_side,
        &conf,
        &[
            "--out",
            "json",
            "state.orch",
            "orch.main",
            "test=True",
            pillar,
        ],
    );
    seen.dry = normalize_orch(&json_of(&r));
    seen.dry_code = r.status.and_then(|s| s.code());
    seen.dry_files = files_under(&out).len();

    let r = salt_run(
        master_side,
        &conf,
        &["--out", "json", "state.orch", "orch.ok"],
    );
    seen.ok = normalize_orch(&json_of(&r));
    seen.ok_code = r.status.and_then(|s| s.code());
    let r = salt_run(master_side, &conf, &["state.orch", "orch.ok", "--no-color"]);
    seen.ok_text = strip_times(&r.stdout);

    let r = salt_run(
        master_side,
        &conf,
        &[
            "--out",
            "json",
            "state.orchestrate_show_sls",
            "orch.main",
            pillar,
        ],
    );
    seen.show = json_of(&r);
    let r = salt_run(
        master_side,
        &conf,
        &[
            "--out",
            "json",
            "state.orchestrate_single",
            "fun=salt.function",
            "name=test.echo",
            "tgt=orch-a",
            "arg=[single]",
        ],
    );
    seen.single = normalize_orch(&json_of(&r));
    let r = salt_run(
        master_side,
        &conf,
        &["--out", "json", "state.orch", "orch.missing"],
    );
    seen.missing = json_of(&r);
    seen.missing_code = r.status.and_then(|s| s.code());
    let r = salt_run(master_side, &conf, &["state.orch", "orch.ok", "pillar=[1]"]);
    seen.bad_pillar_code = r.status.and_then(|s| s.code());
    step(t0, &format!("{name}: test=True, orch.ok, show_sls, single"));

    drop(minions);
    master.proc.stop(Duration::from_secs(20));
    seen
}

/// Runs of Salt's side at most (see `orchestrate_same_as_salt`).
const SALT_ATTEMPTS: u32 = 3;

/// What Salt's master always does with this tree (`Err`: what its run missed).
fn reference_ok(salt: &Seen) -> Result<(), String> {
    let file = |p: &str| salt.files.get(p).map(String::as_str);
    let checks = [
        (salt.main_code == Some(1), "orch.main exit status 1"),
        (
            file("orch-b/recovered") == Some("hello\n"),
            "orch-b/recovered",
        ),
        (
            file("orch-a/web.conf") == Some("color=green\n"),
            "orch-a/web.conf",
        ),
        (
            file("orch-b/web.conf") == Some("color=green\n"),
            "orch-b/web.conf",
        ),
        (salt.dry_code == Some(0), "test=True exit status 0"),
        (salt.dry_files == 0, "test=True writes nothing"),
        (salt.ok_code == Some(0), "orch.ok exit status 0"),
    ];
    match checks.iter().find(|(ok, _)| !ok) {
        Some((_, what)) => Err(format!("expected {what}")),
        None => Ok(()),
    }
}

#[test]
fn orchestrate_same_as_salt() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let t0 = Instant::now();
    let root = TempRoot::new().unwrap();
    make_tree(root.path());
    let py = Side::Salt(venv);
    let ours = Side::Ours(bins().unwrap());
    // The reference itself, so a change in Salt shows here first. Salt's side runs again
    // (fresh master and minions) when its own run misses what Salt always does here: on a
    // loaded 2-core CI box a Python minion's state run can miss the orchestration's wait
    // (a `salt.state` step without its file). What is compared is never relaxed: ours is
    // compared with a reference run that passed these checks.
    let mut salt = run_side(root.path(), "salt", &py, &py, t0);
    for attempt in 2..=SALT_ATTEMPTS {
        let Err(why) = reference_ok(&salt) else {
            break;
        };
        println!(
            "Salt's reference run missed ({why}); running it again (attempt {attempt}).\n\
             Its orch.main return:\n{:#}\nfiles: {:#?}",
            salt.main, salt.files
        );
        salt = run_side(root.path(), "salt", &py, &py, t0);
    }
    if let Err(why) = reference_ok(&salt) {
        panic!(
            "Salt's reference run: {why}\norch.main:\n{:#}\nfiles: {:#?}",
            salt.main, salt.files
        );
    }
    let rs = run_side(root.path(), "ours", &ours, &py, t0);

    // Every difference at once.
    let mut diffs: Vec<String> = Vec::new();
    let mut check = |what: &str, ours: String, theirs: String| {
        if ours != theirs {
            diffs.push(format!(
                "{what}:\n--- ours ---\n{ours}\n--- Salt ---\n{theirs}"
            ));
        }
    };
    // Key order aside (Salt lists minions in arrival order): maps compare as maps.
    let pretty = |ours: &Value, theirs: &Value| {
        let p = |v: &Value| serde_json::to_string_pretty(v).unwrap();
        if ours == theirs {
            (String::new(), String::new())
        } else {
            (p(ours), p(theirs))
        }
    };
    let (a, b) = pretty(&rs.main, &salt.main);
    check("state.orchestrate orch.main", a, b);
    check(
        "exit status",
        format!("{:?}", rs.main_code),
        format!("{:?}", salt.main_code),
    );
    check(
        "files on the minions",
        format!("{:#?}", rs.files),
        format!("{:#?}", salt.files),
    );
    let (a, b) = pretty(&rs.dry, &salt.dry);
    check("test=True", a, b);
    check(
        "test=True exit",
        format!("{:?}", rs.dry_code),
        format!("{:?}", salt.dry_code),
    );
    check(
        "test=True files",
        rs.dry_files.to_string(),
        salt.dry_files.to_string(),
    );
    let (a, b) = pretty(&rs.ok, &salt.ok);
    check("orch.ok", a, b);
    check(
        "orch.ok exit",
        format!("{:?}", rs.ok_code),
        format!("{:?}", salt.ok_code),
    );
    check(
        "orch.ok --out highstate",
        rs.ok_text.clone(),
        salt.ok_text.clone(),
    );
    let (a, b) = pretty(&rs.show, &salt.show);
    check("orchestrate_show_sls", a, b);
    let (a, b) = pretty(&rs.single, &salt.single);
    check("orchestrate_single", a, b);
    let (a, b) = pretty(&rs.missing, &salt.missing);
    check("an SLS that does not exist", a, b);
    check(
        "exit status: missing SLS, pillar not a dict",
        format!("{:?} {:?}", rs.missing_code, rs.bad_pillar_code),
        format!("{:?} {:?}", salt.missing_code, salt.bad_pillar_code),
    );
    assert!(diffs.is_empty(), "{}", diffs.join("\n\n"));
}

/// A return without what differs per run (times, jids, pids; Salt lists the minions of a
/// comment in arrival or set order).
fn normalize_orch(v: &Value) -> Value {
    drop_run_keys_and(v, &|s| s.replace("orch-b, orch-a", "orch-a, orch-b"))
}
