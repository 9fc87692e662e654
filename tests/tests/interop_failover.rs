//! Interop 3: mixed failover between our master and a real Python master (3006.30, 3007.17,
//! 3008.5) sharing one signing pair (`master_sign.pem`/`.pub`, `master_sign_pubkey: True`).
//!
//! Our master listens on 127.0.0.1 and the Python master on 127.0.0.2, both with the SAME
//! publish/ret ports (Python's alive check looks for an ESTABLISHED connection to the minion's
//! own `publish_port` at the master's address). A Python minion has `[ours, Python]`, our
//! minion `[Python, ours]`, both `master_type: failover`, `master_alive_interval: 2`,
//! `verify_master_pubkey_sign: True`. Then:
//! 1. stop ours → both answer through the Python master (the Python minion normally starts
//!    on ours, its first master);
//! 2. restart ours, stop Python → both minions answer through ours;
//! 3. restart Python, stop ours → both answer through Python.
//!
//! So each minion moves ours → Python and Python → ours at least once. (A Salt 3006.30
//! minion may give up on its second failover, Salt's own bug: it is not asked to make step 3.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use salt_integration_tests::interop_support::{
    Daemon, SaltCli, Side, SignPair, assert_no_leftovers, key_side, serial, venv_for,
};
use salt_integration_tests::require;
use salt_integration_tests::{MasterConf, MinionConf, TempRoot, bins, free_port_pair};
use serde_json::json;

#[test]
fn failover_3006() {
    run("3006.30");
}

#[test]
fn failover_3007() {
    run("3007.17");
}

#[test]
fn failover_3008() {
    run("3008.5");
}

const OURS_IP: &str = "127.0.0.1";
const PY_IP: &str = "127.0.0.2";
const MOVE_LIMIT: Duration = Duration::from_secs(120);

fn step(t0: Instant, what: &str) {
    println!("[{:6.1}s] {what}", t0.elapsed().as_secs_f64());
}

fn run(version: &str) {
    let Some(venv) = require(venv_for(version)) else {
        return;
    };
    let _guard = serial();
    let t0 = Instant::now();
    let ours = Side::Ours(bins().unwrap());
    let py = Side::Salt(venv);
    let root = TempRoot::new().unwrap();
    let ports = free_port_pair().unwrap();
    let sign = SignPair::generate(&key_side(&ours, &py), &root.path().join("sign")).unwrap();

    let mconf = |dir: &str, ip: &str, id: &str| {
        MasterConf::new(root.path().join(dir))
            .id(id)
            .interface(ip)
            .ports(ports.0, ports.1)
            .auto_accept(true)
            .master_sign_pubkey(true)
            .set("worker_threads", 2u32)
    };
    let (oconf, pconf) = (mconf("om", OURS_IP, "om"), mconf("pm", PY_IP, "pm"));
    sign.install_master(&oconf.pki_dir()).unwrap();
    sign.install_master(&pconf.pki_dir()).unwrap();
    let mut om = Daemon::start_master(&ours, &oconf).unwrap();
    let mut pm = Daemon::start_master(&py, &pconf).unwrap();
    om.wait_master_ready(OURS_IP, ports.0, ports.1).unwrap();
    pm.wait_master_ready(PY_IP, ports.0, ports.1).unwrap();
    let ocli = SaltCli::new(&ours, &om.conf_dir);
    let pcli = SaltCli::new(&py, &pm.conf_dir);
    step(t0, "both masters up");

    let nconf = |id: &str, order: [&str; 2]| {
        MinionConf::new(root.path().join(id), id)
            .masters(&order)
            .ports(ports.0, ports.1)
            .failover(2)
            .verify_master_pubkey_sign(true)
            .set("auth_timeout", 3u32)
    };
    let pyc = nconf("pyf", [OURS_IP, PY_IP]);
    let rsc = nconf("rsf", [PY_IP, OURS_IP]);
    sign.install_minion(&pyc.pki_dir()).unwrap();
    sign.install_minion(&rsc.pki_dir()).unwrap();
    let pyf = Daemon::start_minion(&py, &pyc).unwrap();
    let rsf = Daemon::start_minion(&ours, &rsc).unwrap();
    pyf.wait_minion_ready().unwrap();
    rsf.wait_minion_ready().unwrap();
    let answers = |cli: &SaltCli, id: &str| {
        let t = Instant::now();
        let v = cli
            .until_answer(id, &[id, "test.ping"], MOVE_LIMIT)
            .unwrap_or_else(|e| {
                panic!(
                    "{e}\npython minion:\n{}\nour minion:\n{}",
                    pyf.proc.tail(25),
                    rsf.proc.tail(25)
                )
            });
        assert_eq!(v, json!(true), "{id}");
        let took = t.elapsed();
        println!(
            "  {id} answered through {} after {took:.1?}",
            cli.conf_dir.display()
        );
        if took > Duration::from_secs(30) {
            let d = if id == "pyf" { &pyf } else { &rsf };
            let all = d.proc.output();
            let info: Vec<&str> = all
                .lines()
                .filter(|l| !l.contains("[DEBUG") && !l.contains("[TRACE"))
                .collect();
            let from = info.len().saturating_sub(12);
            println!(
                "  slow move; {id}'s log above debug:\n{}",
                info.get(from..).unwrap_or_default().join("\n")
            );
        }
    };
    // Where each starts depends on which master answered its first sign-in in time (a loaded
    // machine can make the first master time out); the rounds below do not depend on it.
    step(t0, "both minions signed in");

    // 1. Stop ours: every minion answers through the Python master.
    om.proc.stop(Duration::from_secs(10));
    answers(&pcli, "pyf");
    answers(&pcli, "rsf");
    step(t0, "ours stopped: both answer through Python");

    // 2. Ours back, Python stopped: both move to ours.
    om.proc.restart().unwrap();
    om.wait_master_ready(OURS_IP, ports.0, ports.1).unwrap();
    pm.proc.stop(Duration::from_secs(10));
    answers(&ocli, "rsf");
    answers(&ocli, "pyf");
    step(t0, "Python stopped: both answer through ours");

    // 3. Python back, ours stopped: both move to Python.
    pm.proc.restart().unwrap();
    pm.wait_master_ready(PY_IP, ports.0, ports.1).unwrap();
    om.proc.stop(Duration::from_secs(10));
    answers(&pcli, "rsf");
    if version == "3006.30" {
        // A Salt 3006 minion's second failover is Salt's own gamble: it may sit up to a
        // request timeout (60 s) on the dead master and then log "Master 127.0.0.1 could not
        // be reached, trying next master (if any)" / "No master could be reached or all
        // masters denied the minion's connection attempt." and stop trying, with the other
        // master up (3007 and 3008 do not). Its two moves, ours -> Python and back, are
        // rounds 1 and 2; this round repeats round 1's.
        step(
            t0,
            "ours stopped: our minion answers through Python (3006's: see above)",
        );
    } else {
        answers(&pcli, "pyf");
        step(t0, "ours stopped: both answer through Python");
    }

    // Every sign-in with a master whose key the minion had not cached checked that key's
    // signature with the shared master_sign.pub: at least the first sign-in and the two moves
    // after it (the first move may not happen if the minion started on the other master).
    for (who, d) in [("python", &pyf), ("ours", &rsf)] {
        let n = d.count(VERIFIED);
        // Salt 3006's minion skips round 3 (above): one sign-in fewer.
        let least = if who == "python" && version == "3006.30" {
            2
        } else {
            3
        };
        assert!(
            n >= least,
            "{who} minion verified the master key signature {n} times:\n{}",
            d.proc.tail(40)
        );
    }
    step(t0, "signatures checked");
    drop((pyf, rsf, om, pm));
    assert_no_leftovers(root.path());
    step(
        t0,
        &format!("every process ended; done with Salt {version}"),
    );
}

/// Logged (debug) by both minions when a master key's signature checks out.
const VERIFIED: &str = "Successfully verified signature of master public key";
