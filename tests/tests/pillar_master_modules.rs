//! Our master renders pillar with the minion's execution modules, as Salt's master does
//! (`salt.pillar.Pillar` loads `salt.loader.minion_mods` with the master's options, `grains`
//! and `id` those of the minion whose pillar it compiles): a pillar SLS calling
//! `salt['status.time']`, `salt['grains.get']` and `salt['cmd.run']` gives our minion, through
//! our master, the pillar Salt 3007.17's master code compiles for the same minion and grains
//! (`salt.pillar.Pillar(...).compile_pillar()` over the same tree). A function a master has no
//! use for (`state.*`) is an error of that SLS, named in the master's log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use salt_integration_tests::interop_support::{Daemon, SaltCli, Side, serial, venv_for};
use salt_integration_tests::{
    MasterConf, MinionConf, TempRoot, Yaml, bins, free_port_pair, require, run_with_timeout,
};
use salt_testkit::write_file;

/// Salt's master compiling the pillar of `id` with `grains` over `tree`.
fn salt_master_pillar(
    venv: &salt_integration_tests::SaltVenv,
    dir: &Path,
    tree: &Path,
    id: &str,
    grains: &serde_json::Value,
) -> serde_json::Value {
    std::fs::create_dir_all(dir).unwrap();
    let conf = dir.join("master");
    std::fs::write(
        &conf,
        format!(
            "root_dir: {r}\npki_dir: {r}/pki\ncachedir: {r}/cache\nsock_dir: {r}/sock\n\
             log_file: {r}/log\npillar_roots: {{base: [{t}]}}\nfile_roots: {{base: [{t}]}}\n",
            r = dir.display(),
            t = tree.display()
        ),
    )
    .unwrap();
    let grains_file = dir.join("grains.json");
    std::fs::write(&grains_file, grains.to_string()).unwrap();
    let script = "import json, sys, salt.config, salt.pillar\n\
                  opts = salt.config.master_config(sys.argv[1])\n\
                  grains = json.load(open(sys.argv[2]))\n\
                  p = salt.pillar.Pillar(opts, grains, sys.argv[3], 'base')\n\
                  print(json.dumps(p.compile_pillar()))\n";
    let mut cmd = Command::new(venv.bin("python3"));
    cmd.arg("-c")
        .arg(script)
        .arg(&conf)
        .arg(&grains_file)
        .arg(id);
    let out = run_with_timeout(cmd, Duration::from_secs(120))
        .unwrap()
        .ok()
        .unwrap();
    serde_json::from_str(out.stdout.trim()).unwrap()
}

#[test]
fn pillar_calls_execution_modules_on_the_master_as_salts() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let ours = Side::Ours(bins().unwrap());
    let root = TempRoot::new().unwrap();
    let tree = root.path().join("pillar");
    write_file(&tree, "top.sls", "base:\n  '*':\n    - mods\n");
    write_file(
        &tree,
        "mods.sls",
        "year: {{ salt['status.time']('%Y') }}\n\
         os_family: {{ salt['grains.get']('os_family') }}\n\
         minion: {{ salt['grains.get']('id') }}\n\
         missing: {{ salt['grains.get']('no-such-grain', 'dflt') }}\n\
         echoed: {{ salt['cmd.run']('echo on-the-master') }}\n\
         ran_as: {{ salt['cmd.run']('id -un') }}\n",
    );
    // A module a master does not offer fails its SLS (by name) on ours.
    let bad = root.path().join("bad");
    write_file(&bad, "top.sls", "bad:\n  '*':\n    - state\n");
    write_file(&bad, "state.sls", "x: {{ salt['state.apply']() }}\n");
    let ports = free_port_pair().unwrap();
    let mconf = MasterConf::new(root.path().join("m"))
        .id("rsmaster")
        .ports(ports.0, ports.1)
        .auto_accept(true)
        .set(
            "pillar_roots",
            Yaml::Raw(format!(
                "{{base: [{}], bad: [{}]}}",
                tree.display(),
                bad.display()
            )),
        )
        // The minion's own pillar from `base` only (`bad` is asked for below).
        .set("pillarenv", "base");
    let mut master = Daemon::start_master(&ours, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let cli = SaltCli::new(&ours, &master.conf_dir);
    let rconf = MinionConf::new(root.path().join("rsm1"), "rsm1").ports(ports.0, ports.1);
    let rsm = Daemon::start_minion(&ours, &rconf).unwrap();
    rsm.wait_minion_ready().unwrap();
    cli.until_answer("rsm1", &["rsm1", "test.ping"], Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}", master.proc.tail(40)));

    let (got, _) = cli.salt_json(&["rsm1", "pillar.items"], 60).unwrap();
    let (grains, _) = cli.salt_json(&["rsm1", "grains.items"], 60).unwrap();
    let want = salt_master_pillar(
        &venv,
        &root.path().join("salt-master"),
        &tree,
        "rsm1",
        &grains["rsm1"],
    );
    assert!(want.get("_errors").is_none(), "Salt: {want}");
    assert_eq!(want["echoed"], "on-the-master", "{want}");
    assert_eq!(want["minion"], "rsm1", "{want}");
    assert_eq!(got["rsm1"], want, "our master's pillar differs from Salt's");

    let (bad, _) = cli
        .salt_json(&["rsm1", "pillar.items", "pillarenv=bad"], 60)
        .unwrap();
    // Salt's `pillar_safe_render_error` text to the minion; the master's log names it.
    assert_eq!(
        bad["rsm1"]["_errors"],
        serde_json::json!(["Rendering SLS 'state' failed. Please see master log for details."]),
        "{bad}"
    );
    let log = master.proc.tail(400);
    assert!(log.contains("'state.apply' is not available"), "{log}");
    drop(rsm);
    drop(master);
}
