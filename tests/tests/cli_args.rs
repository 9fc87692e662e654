//! Arguments as Salt's `salt` reads them (issue #35, item 4): our `salt` YAML-loads each
//! argument as Salt's `parse_input`/`yamlify_arg` (`salt_render::args`), so a real Python
//! salt-minion (3007.17) behind our master receives data, not text:
//!
//! 1. `salt pym1 test.arg '{"a": 1}' '[1, 2]' 1.0 0x10 yes '~' 'a #b' 'k={"b": 1}' ...`
//!    returns the loaded values (as Salt's own `salt` sends them);
//! 2. `salt pym1 event.send myco/x '{"app": "shop"}'` fires an event whose `data.app` is
//!    `shop`, as our `salt-run state.event` shows it;
//! 3. `--no-parse k` keeps `k=...` as text; an argument JSON cannot carry (`.inf`) is refused
//!    by name.
//!
//! Under `CI=true` a missing venv fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::Duration;

use salt_integration_tests::interop_support::{Daemon, SaltCli, Side, serial, venv_for};
use salt_integration_tests::{MasterConf, MinionConf, TempRoot, bins, free_port_pair, wait_until};
use serde_json::{Value, json};

const VERSION: &str = "3007.17";

#[test]
fn salt_arguments_as_data() {
    let Some(venv) = salt_integration_tests::require(venv_for(VERSION)) else {
        assert!(
            !std::env::var("CI").is_ok_and(|c| c == "true"),
            "CI=true: the Salt {VERSION} venv is missing (scripts/salt-venv.sh {VERSION})"
        );
        return;
    };
    let _guard = serial();
    let ours = Side::Ours(bins().unwrap());
    let py = Side::Salt(venv);
    let root = TempRoot::new().unwrap();
    let ports = free_port_pair().unwrap();
    let mconf = MasterConf::new(root.path().join("m"))
        .id("rsmaster")
        .ports(ports.0, ports.1)
        .set("worker_threads", 2u32);
    let mut master = Daemon::start_master(&ours, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let cli = SaltCli::new(&ours, &master.conf_dir);
    let nconf = MinionConf::new(root.path().join("pym1"), "pym1")
        .ports(ports.0, ports.1)
        .set("auth_timeout", 5u32);
    let minion = Daemon::start_minion(&py, &nconf).unwrap();
    wait_until("pym1 pending", Duration::from_secs(90), || {
        cli.key_list("Unaccepted Keys:")
            .is_ok_and(|ids| ids.contains(&"pym1".to_string()))
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", minion.proc.tail(30)));
    cli.key(&["-a", "pym1", "-y"]).unwrap();
    minion.wait_minion_ready().unwrap();
    cli.until_answer("pym1", &["pym1", "test.ping"], Duration::from_secs(60))
        .unwrap();

    // 1. What the minion receives.
    let (v, out) = cli
        .salt_json(
            &[
                "pym1",
                "test.arg",
                r#"{"a": 1}"#,
                "[1, 2]",
                "1.0",
                "0x10",
                "yes",
                "~",
                "a #b",
                "0644",
                "a: b",
                r#"k={"b": 1}"#,
                "n=08",
            ],
            30,
        )
        .unwrap();
    assert_eq!(
        v["pym1"]["args"],
        json!([{"a": 1}, [1, 2], 1.0, 16, true, null, "a #b", 644, "a: b"]),
        "{out:?}"
    );
    assert_eq!(v["pym1"]["kwargs"]["k"], json!({"b": 1}), "{out:?}");
    assert_eq!(v["pym1"]["kwargs"]["n"], json!("08"), "{out:?}");

    // 2. event.send with a JSON map, watched with our salt-run state.event.
    let salt_run = ours.salt_bin().with_file_name("salt-run");
    let listener = Command::new(&salt_run)
        .arg("-c")
        .arg(&master.conf_dir)
        .args(["state.event", "myco/*", "count=1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let (v, out) = cli
        .salt_json(&["pym1", "event.send", "myco/x", r#"{"app": "shop"}"#], 30)
        .unwrap();
    assert_eq!(v["pym1"], json!(true), "{out:?}");
    let events = listener.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&events.stdout).into_owned();
    let (tag, data) = text.trim_end().split_once('\t').expect(&text);
    assert_eq!(tag, "myco/x", "{text}");
    let data: Value = serde_json::from_str(data).expect(&text);
    assert_eq!(data["data"]["app"], json!("shop"), "{text}");
    assert_eq!(data["id"], json!("pym1"), "{text}");

    // 3. --no-parse, and what JSON cannot carry.
    let (v, out) = cli
        .salt_json(
            &["--no-parse", "k", "pym1", "test.arg", "k=0644", "m=0644"],
            30,
        )
        .unwrap();
    assert_eq!(v["pym1"]["kwargs"]["k"], json!("0644"), "{out:?}");
    assert_eq!(v["pym1"]["kwargs"]["m"], json!(644), "{out:?}");
    let out = Command::new(ours.salt_bin())
        .arg("-c")
        .arg(&master.conf_dir)
        .args(["pym1", "test.arg", ".inf"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"argument ".inf" loads"#) && err.contains("non-finite float"),
        "{err}"
    );
}
