//! Interop: `master_tops: {ext_nodes: <command>}`. Our master and Salt 3007.17's run the same
//! script (classes and environment as YAML, per minion id) for a real Python 3007.17 minion;
//! `state.show_top` (the top file merged with `_master_tops`) and `state.show_lowstate`
//! must be identical, with the script's classes in `base` (as a list) and then in `prod` (as a
//! mapping, with `environment`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::Instant;

use salt_integration_tests::interop_pair::Pair;
use salt_integration_tests::interop_support::{Side, assert_no_leftovers, serial, venv_for};
use salt_integration_tests::{TempRoot, Yaml, bins};
use salt_testkit::write_file as write;
use serde_json::json;

const VERSION: &str = "3007.17";

#[test]
fn master_tops_ext_nodes_3007() {
    let Some(venv) = salt_integration_tests::require(venv_for(VERSION)) else {
        return;
    };
    let _guard = serial();
    let t0 = Instant::now();
    let step = |what: &str| println!("[{:6.1}s] {what}", t0.elapsed().as_secs_f64());
    let root = TempRoot::new().unwrap();
    let srv = root.path().join("srv");
    let prod = root.path().join("prod");
    write(&srv, "top.sls", "base:\n  '*':\n    - common\n");
    for (dir, name) in [
        (&srv, "common"),
        (&srv, "web"),
        (&srv, "db"),
        (&prod, "web"),
    ] {
        write(
            dir,
            &format!("{name}.sls"),
            &format!("{name}-ok:\n  test.succeed_without_changes: []\n"),
        );
    }
    // The ENC: classes as a list, no environment (`base`).
    let script = root.path().join("enc");
    write(
        root.path(),
        "enc",
        "#!/bin/sh\necho 'classes: [web, db]'\necho 'parameters: {a: 1}'\n",
    );
    Command::new("chmod")
        .arg("755")
        .arg(&script)
        .status()
        .unwrap();
    let py = Side::Salt(venv.clone());
    let ours = Side::Ours(bins().unwrap());
    let pair = Pair::start(
        root.path(),
        &ours,
        &py,
        &py,
        ["tops-ours", "tops-salt"],
        |c| {
            c.set(
                "file_roots",
                Yaml::Raw(format!(
                    "{{base: ['{}'], prod: ['{}']}}",
                    srv.display(),
                    prod.display()
                )),
            )
            .set(
                "master_tops",
                Yaml::Raw(format!("{{ext_nodes: '{}'}}", script.display())),
            )
        },
    );
    step("both masters and minions up");
    let both = |args: &[&str]| pair.both(args, 60, &[]);

    let top = both(&["state.show_top"]);
    assert_eq!(top["base"], json!(["common", "web", "db"]), "{top:#}");
    let low = both(&["state.show_lowstate"]);
    assert_eq!(low.as_array().map(Vec::len), Some(3), "{low:#}");
    step("state.show_top, state.show_lowstate (base)");

    // The environment from the ENC.
    write(
        root.path(),
        "enc",
        "#!/bin/sh\nprintf 'classes:\\n  web: {}\\nenvironment: prod\\n'\n",
    );
    let top = both(&["state.show_top"]);
    assert_eq!(top["prod"], json!(["web"]), "{top:#}");
    both(&["state.show_lowstate"]);
    step("state.show_top, state.show_lowstate (prod)");

    drop(pair);
    assert_no_leftovers(root.path());
}
