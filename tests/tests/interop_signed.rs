//! Signed minion messages (issue 38): a master with `require_minion_sign_messages` and
//! `drop_messages_signature_fail`, our salt-master and Salt 3008.5's (the reference, which also
//! needs `signing_algorithm` in its own config to verify signed returns), with
//! * a stock 3008.5 minion with `minion_sign_messages: True`: `test.ping` answers;
//! * a stock 3008.5 minion without it: its return is refused with Salt's log line;
//! * our minion with `minion_sign_messages: True`: `test.ping` answers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use salt_integration_tests::interop_support::{Daemon, SaltCli, Side, serial, venv_for};
use salt_integration_tests::{
    MasterConf, MinionConf, TempRoot, bins, free_port_pair, require, wait_until,
};
use serde_json::json;

const VERSION: &str = "3008.5";
/// Salt's `AESFuncs._return` line for an unsigned return (ours logs the same).
const UNSIGNED: &str = "_return: Master is requiring minions to sign their messages, but there \
                        is no signature in this payload from plain.";

#[test]
fn signed_returns_on_our_master() {
    let Some(venv) = require(venv_for(VERSION)) else {
        return;
    };
    run(&Side::Ours(bins().unwrap()), &Side::Salt(venv));
}

#[test]
fn signed_returns_on_salt_3008_master() {
    let Some(venv) = require(venv_for(VERSION)) else {
        return;
    };
    run(&Side::Salt(venv.clone()), &Side::Salt(venv));
}

fn minion(root: &std::path::Path, id: &str, ports: (u16, u16), sign: bool) -> MinionConf {
    MinionConf::new(root.join(id), id)
        .ports(ports.0, ports.1)
        .set("minion_sign_messages", sign)
        .set("auth_timeout", 5u32)
}

fn run(master_side: &Side, py: &Side) {
    let _guard = serial();
    let ours = Side::Ours(bins().unwrap());
    let root = TempRoot::new().unwrap();
    let ports = free_port_pair().unwrap();
    let mconf = MasterConf::new(root.path().join("m"))
        .ports(ports.0, ports.1)
        .auto_accept(true)
        .set("require_minion_sign_messages", true)
        .set("drop_messages_signature_fail", true)
        .set("signing_algorithm", "PKCS1v15-SHA1");
    let mut master = Daemon::start_master(master_side, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let cli = SaltCli::new(master_side, &master.conf_dir);

    let signed = Daemon::start_minion(py, &minion(root.path(), "signed", ports, true)).unwrap();
    let plain = Daemon::start_minion(py, &minion(root.path(), "plain", ports, false)).unwrap();
    let rs = Daemon::start_minion(&ours, &minion(root.path(), "rs", ports, true)).unwrap();
    for m in [&signed, &plain, &rs] {
        m.wait_minion_ready()
            .unwrap_or_else(|e| panic!("{e}\n{}", m.proc.tail(30)));
    }

    for id in ["signed", "rs"] {
        let ping = cli
            .until_answer(id, &[id, "test.ping"], Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("{id}: {e}\n{}", master.proc.tail(30)));
        assert_eq!(ping, json!(true), "{} master, {id}", master_side.label());
    }

    let (v, _) = cli.salt_json(&["plain", "test.ping"], 5).unwrap();
    assert_ne!(
        v.get("plain"),
        Some(&json!(true)),
        "{} master took an unsigned return: {v}",
        master_side.label()
    );
    wait_until(
        "the refusal in the master log",
        Duration::from_secs(30),
        || master.proc.output().contains(UNSIGNED),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", master.proc.tail(40)));
    let log = master.proc.output();
    for id in ["signed", "rs"] {
        assert!(
            !log.contains(&format!("no signature in this payload from {id}.")),
            "{}",
            master.proc.tail(40)
        );
    }
}
