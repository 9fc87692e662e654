//! `keys.cache_driver: mmap_key` end to end: a real Python 3008.5 minion signs in to our
//! master whose minion keys live in Salt 3008's index files (no key file anywhere); Salt
//! 3008.5's own `salt-key` accepts it in that store, ours lists it, and the minion answers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use salt_integration_tests::interop_support::{Daemon, SaltCli, Side, serial, venv_for};
use salt_integration_tests::{MasterConf, MinionConf, TempRoot, bins, free_port_pair};
use salt_integration_tests::{require, wait_until};
use serde_json::json;

#[test]
fn py_3008_minion_signs_in_with_keys_in_the_mmap_store() {
    let Some(venv) = require(venv_for("3008.5")) else {
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
        .set("keys.cache_driver", "mmap_key")
        .set("mmap_key_size", 5000u32)
        .set("loop_interval", 1u32);
    let mut master = Daemon::start_master(&ours, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let cli = SaltCli::new(&ours, &master.conf_dir).with_key_side(&ours);
    let salt_cli = SaltCli::new(&ours, &master.conf_dir).with_key_side(&py);

    let n1 = MinionConf::new(root.path().join("pym1"), "pym1")
        .ports(ports.0, ports.1)
        .set("auth_timeout", 5u32)
        .set("auth_tries", 2u32);
    let mut m1 = Daemon::start_minion(&py, &n1).unwrap();
    wait_until(
        "pym1 pending in our salt-key -L",
        Duration::from_secs(90),
        || {
            cli.key_list("Unaccepted Keys:")
                .is_ok_and(|ids| ids.contains(&"pym1".to_string()))
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}\n{}", m1.proc.tail(30), master.proc.tail(30)));
    let pki = master.pki();
    assert!(pki.join(".mmap_keys.idx").exists());
    assert!(!pki.join("minions_pre/pym1").exists());
    // Salt 3008.5's salt-key sees the pending key our master stored, and accepts it.
    assert_eq!(salt_cli.key_list("Unaccepted Keys:").unwrap(), ["pym1"]);
    salt_cli.key(&["-a", "pym1", "-y"]).unwrap();
    assert_eq!(cli.key_list("Accepted Keys:").unwrap(), ["pym1"]);
    assert!(!pki.join("minions/pym1").exists());
    m1.wait_minion_ready()
        .unwrap_or_else(|e| panic!("{e}\n{}\n{}", m1.proc.tail(30), master.proc.tail(30)));
    let ping = cli
        .until_answer("pym1", &["pym1", "test.ping"], Duration::from_secs(30))
        .unwrap();
    assert_eq!(ping, json!(true));

    // Rejected in the store: the minion's next sign-in is refused.
    cli.key(&["-r", "pym1", "--include-accepted", "-y"])
        .unwrap();
    assert_eq!(salt_cli.key_list("Rejected Keys:").unwrap(), ["pym1"]);
    m1.proc.stop(Duration::from_secs(15));
    // Its next sign-in is refused and its key stays rejected (not stored again as pending).
    let asked = || {
        std::fs::read_to_string(&master.log)
            .unwrap_or_default()
            .matches("Authentication request from pym1")
            .count()
    };
    let before = asked();
    let mut m1 = Daemon::start_minion(&py, &n1).unwrap();
    wait_until(
        "pym1 signing in again after its rejection",
        Duration::from_secs(60),
        || asked() > before,
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", master.proc.tail(30)));
    std::thread::sleep(Duration::from_secs(1));
    assert!(cli.key_list("Unaccepted Keys:").unwrap().is_empty());
    assert_eq!(cli.key_list("Rejected Keys:").unwrap(), ["pym1"]);
    m1.proc.stop(Duration::from_secs(15));
    master.proc.stop(Duration::from_secs(15));
}
