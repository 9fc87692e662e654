//! Interop: `master_tops: {ext_nodes: <command>}`. Our master and Salt 3007.17's run the same
//! script (classes and environment as YAML, per minion id) for a real Python 3007.17 minion;
//! `state.show_top` (the top file merged with `_master_tops`) and `state.show_lowstate`
//! must be identical, with the script's classes in `base` (as a list) and then in `prod` (as a
//! mapping, with `environment`). One of our minions on each master asks `_master_tops` too:
//! its `state.show_top` is the Python minion's on both.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::{Duration, Instant};

use salt_integration_tests::interop_pair::{Pair, PairSide};
use salt_integration_tests::interop_support::{
    Daemon, Side, assert_no_leftovers, serial, venv_for,
};
use salt_integration_tests::{MinionConf, TempRoot, Yaml, bins};
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
    // Our minion `rs_id` on `side`'s master, answering; `tops_first`: `master_tops_first`.
    let start_rs = |side: &PairSide, rs_id: &str, tops_first: bool| {
        let m = Daemon::start_minion(
            &ours,
            &MinionConf::new(root.path().join(rs_id), rs_id)
                .ports(side.ports.0, side.ports.1)
                .set("auth_timeout", 10u32)
                .set("master_tops_first", tops_first),
        )
        .unwrap();
        m.wait_minion_ready().unwrap();
        side.cli
            .until_answer(rs_id, &[rs_id, "test.ping"], Duration::from_secs(60))
            .unwrap();
        m
    };
    // One of our minions on each master (Salt's reads the id from the load's `opts`).
    let rs_minions = [
        start_rs(&pair.ours, "tops-rs", false),
        start_rs(&pair.salt, "tops-rs-on-salt", false),
    ];
    let rs_top = || {
        let mut tops = Vec::new();
        for (side, rs_id) in [(&pair.ours, "tops-rs"), (&pair.salt, "tops-rs-on-salt")] {
            let (v, out) = side.cli.salt_json(&[rs_id, "state.show_top"], 60).unwrap();
            assert!(!v[rs_id].is_null(), "{}\n{}", out.stdout, out.stderr);
            tops.push(v[rs_id].clone());
        }
        assert_eq!(
            tops[0], tops[1],
            "our minion: on our master (left), on Salt's"
        );
        tops.swap_remove(0)
    };

    let top = both(&["state.show_top"]);
    assert_eq!(top["base"], json!(["common", "web", "db"]), "{top:#}");
    assert_eq!(
        rs_top(),
        top,
        "our minion's state.show_top (left), the Python minion's"
    );
    // The minion option `master_tops_first` (Salt's top_matches): the tops, then the top
    // file's SLS they do not name, read by our minion daemon from its config file.
    let first_id = "tops-rs-first";
    let first = start_rs(&pair.ours, first_id, true);
    let (v, out) = pair
        .ours
        .cli
        .salt_json(&[first_id, "state.show_top"], 60)
        .unwrap();
    assert_eq!(
        v[first_id]["base"],
        json!(["web", "db", "common"]),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    drop(first);
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
    assert_eq!(
        rs_top(),
        top,
        "our minion's state.show_top (left), the Python minion's"
    );
    both(&["state.show_lowstate"]);
    step("state.show_top, state.show_lowstate (prod)");

    drop(rs_minions);
    drop(pair);
    assert_no_leftovers(root.path());
}
