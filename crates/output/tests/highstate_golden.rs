//! Our `highstate` outputter against Salt 3007.17's own (`salt.output.highstate`, run from
//! the venv): byte-identical for every `state_output` mode, verbosity, profile, percentages,
//! tabular and colours, on a return with changed, unchanged, failed and "not run" states, a
//! multi-line comment, a list comment, a warning and a compile-error host.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use salt_output::highstate::{Options, render};
use serde_json::{Value, json};

const SCRIPT: &str = r#"
import json, sys
import salt.config, salt.output.highstate as h, salt.output.nested
opts = salt.config.minion_config(None)
opts.update(json.loads(sys.argv[2]))
h.__opts__ = opts
salt.output.nested.__opts__ = opts
sys.stdout.write(h.output(json.loads(sys.argv[1])))
"#;

fn salt(python: &std::path::Path, data: &Value, opts: &Value) -> String {
    let out = std::process::Command::new(python)
        .args(["-c", SCRIPT, &data.to_string(), &opts.to_string()])
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn sample() -> Value {
    let st = |n: u32, id: &str, result: Value, comment: Value, changes: Value| {
        json!({"result": result, "comment": comment, "name": id, "changes": changes,
               "__run_num__": n, "__sls__": "web", "__id__": id,
               "start_time": format!("10:00:0{n}.123456"), "duration": 1.5 + f64::from(n)})
    };
    let mut m1 = serde_json::Map::new();
    m1.insert(
        "file_|-conf_|-/etc/app.conf_|-managed".into(),
        st(
            0,
            "conf",
            json!(true),
            json!("File /etc/app.conf updated"),
            json!({"diff": "--- \n+++ \n@@ -1 +1 @@\n-a\n+b\n", "mode": "0644"}),
        ),
    );
    m1.insert(
        "cmd_|-hello_|-echo hi_|-run".into(),
        st(
            1,
            "hello",
            json!(true),
            json!("Command \"echo hi\" run"),
            json!({"pid": 12, "retcode": 0, "stdout": "hi", "stderr": ""}),
        ),
    );
    m1.insert(
        "test_|-quiet_|-quiet_|-succeed_without_changes".into(),
        st(2, "quiet", json!(true), json!("Success!"), json!({})),
    );
    m1.insert(
        "test_|-broken_|-broken_|-fail_without_changes".into(),
        st(
            3,
            "broken",
            json!(false),
            json!("Failure!\nsecond line"),
            json!({}),
        ),
    );
    m1.insert(
        "test_|-later_|-later_|-nop".into(),
        st(4, "later", Value::Null, json!(["one", "two"]), json!({})),
    );
    let mut warned = st(
        5,
        "warned",
        json!(true),
        json!("ok"),
        json!({"x": {"old": 1, "new": 2}}),
    );
    warned["warnings"] = json!([
        "this option is deprecated and will be removed in Salt 3009, please use the other option instead"
    ]);
    m1.insert(
        "test_|-warned_|-warned_|-succeed_with_changes".into(),
        warned,
    );
    json!({"m1": m1, "m2": ["Rendering SLS 'base:web' failed: mapping values are not allowed here"]})
}

#[test]
fn highstate_matches_salt() {
    let Some(venv) = salt_testkit::require(salt_testkit::salt_venv("3007.17")) else {
        return;
    };
    let python = venv.join("bin/python");
    let data = sample();
    let cases = [
        json!({"color": false}),
        json!({"color": false, "state_verbose": false}),
        json!({"color": false, "state_output": "terse"}),
        json!({"color": false, "state_output": "mixed"}),
        json!({"color": false, "state_output": "changes"}),
        json!({"color": false, "state_output": "full_id"}),
        json!({"color": false, "state_output_profile": false}),
        json!({"color": false, "state_output_pct": true}),
        json!({"color": false, "state_output": "terse", "state_tabular": true}),
        json!({"color": true}),
        json!({"color": true, "state_output": "mixed", "state_verbose": false}),
    ];
    let mut checked = 0;
    for o in cases {
        let want = salt(&python, &data, &o);
        let opts = Options {
            state_output: o
                .get("state_output")
                .and_then(Value::as_str)
                .unwrap_or("full")
                .into(),
            state_verbose: o
                .get("state_verbose")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            state_output_profile: o
                .get("state_output_profile")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            state_output_pct: o
                .get("state_output_pct")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            state_tabular: o
                .get("state_tabular")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            colour: o["color"].as_bool().unwrap(),
        };
        let ours = render(&data, &opts);
        if ours != want {
            let first = ours.lines().zip(want.lines()).position(|(a, b)| a != b);
            panic!(
                "options {o}: first differing line {first:?}\n--- ours ---\n{ours}\n--- salt ---\n{want}"
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 11);
}

/// Orchestrate's return (`{"data": {"<id>_master": ...}, "outputter", "retcode"}`): the
/// envelope and `retcode` left out, a `salt.state` step's minion runs (`{"out": "highstate",
/// "ret": ...}`) shown as nested highstate blocks, a `salt.function` step's `{"ret": ...}`.
#[test]
fn orchestrate_return_matches_salt() {
    let Some(venv) = salt_testkit::require(salt_testkit::salt_venv("3007.17")) else {
        return;
    };
    let python = venv.join("bin/python");
    let minion_run = sample()["m1"].clone();
    let st = |n: u32, id: &str, result: Value, comment: &str, changes: Value| {
        json!({"name": id, "changes": changes, "comment": comment, "result": result,
               "__sls__": "orch.main", "__run_num__": n, "__id__": id,
               "start_time": format!("10:00:0{n}.123456"), "duration": 2.5 + f64::from(n)})
    };
    let running = json!({
        "salt_|-ping_|-test.ping_|-function": st(0, "ping", json!(true),
            "Function ran successfully. Function test.ping ran on a, b.",
            json!({"ret": {"a": true, "b": true}})),
        "salt_|-web_|-web_|-state": st(1, "web", json!(false),
            "Run failed on minions: m1",
            json!({"out": "highstate", "ret": {"m1": minion_run, "m2": {
                "test_|-x_|-x_|-succeed_without_changes": st(0, "x", json!(true), "Success!", json!({}))
            }}})),
        "salt_|-files_|-fileserver.file_list_|-runner": st(2, "files", json!(true),
            "Runner function 'fileserver.file_list' executed.",
            json!({"return": ["a.sls", "b.sls"]})),
    });
    let data = json!({"data": {"orch_master": running}, "outputter": "highstate", "retcode": 1});
    for colour in [false, true] {
        let want = salt(&python, &data, &json!({"color": colour}));
        let opts = Options {
            state_output: "full".into(),
            state_verbose: true,
            state_output_profile: true,
            state_output_pct: false,
            state_tabular: false,
            colour,
        };
        let ours = render(&data, &opts);
        if ours != want {
            let first = ours.lines().zip(want.lines()).position(|(a, b)| a != b);
            panic!(
                "colour {colour}: first differing line {first:?}\n--- ours ---\n{ours}\n--- salt ---\n{want}"
            );
        }
    }
}
