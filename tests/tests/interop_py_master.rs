//! Interop 2: our salt-minion against a real Python salt-master (3006.30, 3007.17, 3008.5),
//! with a real Python minion on the same master as the reference for return shapes.
//!
//! Per version:
//! 1. both keys show pending in the real `salt-key -L`; the real `salt-key -a` accepts them;
//! 2. our minion verifies the Python master's signed key (`verify_master_pubkey_sign`,
//!    `always_verify_signature`) and signs in;
//! 3. the real `salt` gets our answers to `test.ping`, `cmd.run`, `grains.items`,
//!    `cmd.run_all`, `test.arg` in the shapes the Python minion gives: same keys, same JSON
//!    types (`grains.items`: every grain we report has the Python minion's type; the core
//!    grains are all there; grains only Python reports are listed, not failed);
//! 4. heartbeats: the master is given 500 ms / 2 s ZMTP heartbeats (Salt 3008 sends them by
//!    default, 10 s / 30 s); our minion stays connected across several heartbeat timeouts
//!    (no SUB disconnect, no new sign-in);
//! 5. `always_verify_signature`: after an AES rotation on the master (dropfile) our minion
//!    re-authenticates on the next publish and verifies the master key signature again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use salt_integration_tests::interop_support::{
    Daemon, SaltCli, Side, assert_no_leftovers, copy_file, json_shape, serial, shape_diff,
    venv_for, wait_file,
};
use salt_integration_tests::require;
use salt_integration_tests::{MasterConf, MinionConf, TempRoot, bins, free_port_pair, wait_until};
use serde_json::json;

#[test]
fn py_master_3006() {
    run("3006.30");
}

#[test]
fn py_master_3007() {
    run("3007.17");
}

#[test]
fn py_master_3008() {
    run("3008.5");
}

fn step(t0: Instant, what: &str) {
    println!("[{:6.1}s] {what}", t0.elapsed().as_secs_f64());
}

/// Grains every minion must report (ours included) with the Python minion's type.
const CORE_GRAINS: &[&str] = &[
    "id",
    "os",
    "os_family",
    "kernel",
    "kernelrelease",
    "host",
    "nodename",
    "cpuarch",
    "num_cpus",
    "mem_total",
    "saltversion",
    "ipv4",
    "osrelease",
];

/// ZMTP heartbeat interval / timeout given to the Python master (ms; read by 3008+).
const HEARTBEAT_IVL_MS: u32 = 500;
const HEARTBEAT_TIMEOUT_MS: u32 = 2000;
/// Our minion's debug line for a ZMQ_EVENT_DISCONNECTED (512) on its SUB socket.
const SUB_DISCONNECTED: &str = "SUB monitor event event=512";
const AUTH_OK: &str = "Authentication with master at 127.0.0.1 successful!";

const VERIFIED: &str = "Successfully verified signature of master public key";

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
    let mconf = MasterConf::new(root.path().join("m"))
        .id("pymaster")
        .ports(ports.0, ports.1)
        .master_sign_pubkey(true)
        .set("loop_interval", 1u32)
        .set("worker_threads", 2u32)
        // Salt's default: find_job answers after `-t` may take a while on a loaded machine.
        .set("gather_job_timeout", 10u32)
        // Salt 3008 masters send ZMTP heartbeats on both sockets (default every 10 s, peer
        // dropped after 30 s without an answer); shortened so the run crosses many heartbeat
        // timeouts. 3006/3007 ignore these options.
        .set("zmq_heartbeat_ivl", HEARTBEAT_IVL_MS)
        .set("zmq_heartbeat_timeout", HEARTBEAT_TIMEOUT_MS);
    let mut master = Daemon::start_master(&py, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let cli = SaltCli::new(&py, &master.conf_dir);
    let sign_pub = master.pki().join("master_sign.pub");
    wait_file(&sign_pub, Duration::from_secs(30)).unwrap();
    step(t0, "Python master up");

    let conf = |id: &str| {
        MinionConf::new(root.path().join(id), id)
            .ports(ports.0, ports.1)
            .verify_master_pubkey_sign(true)
            .set("auth_timeout", 5u32)
    };
    let rconf = conf("rmin1").set("always_verify_signature", true);
    let pconf = conf("pymin1");
    for c in [&rconf, &pconf] {
        copy_file(&sign_pub, &c.pki_dir().join("master_sign.pub")).unwrap();
    }
    let rmin = Daemon::start_minion(&ours, &rconf).unwrap();
    let pmin = Daemon::start_minion(&py, &pconf).unwrap();
    wait_until("both keys pending", Duration::from_secs(90), || {
        cli.key_list("Unaccepted Keys:").is_ok_and(|ids| {
            ids.contains(&"rmin1".to_string()) && ids.contains(&"pymin1".to_string())
        })
    })
    .unwrap_or_else(|e| {
        panic!(
            "{e}\nours:\n{}\npython:\n{}",
            rmin.proc.tail(20),
            pmin.proc.tail(20)
        )
    });
    assert!(rconf.pki_dir().join("minion.pem").is_file());
    cli.key(&["-a", "rmin1", "-y"]).unwrap();
    cli.key(&["-a", "pymin1", "-y"]).unwrap();
    let mut acc = cli.key_list("Accepted Keys:").unwrap();
    acc.sort();
    assert_eq!(acc, ["pymin1", "rmin1"]);
    rmin.wait_minion_ready().unwrap();
    pmin.wait_minion_ready().unwrap();
    let ready_at = Instant::now();
    let auths_at_ready = rmin.count(AUTH_OK);
    step(t0, "both accepted and ready");
    let log = rmin.proc.output();
    for line in [
        VERIFIED,
        "Received signed and verified master pubkey from master 127.0.0.1",
        AUTH_OK,
    ] {
        assert!(
            log.contains(line),
            "our minion did not log {line:?}:\n{}",
            rmin.proc.tail(40)
        );
    }
    assert!(rconf.pki_dir().join("minion_master.pub").is_file());

    // Both answer; compare shapes.
    cli.until_answer("rmin1", &["rmin1", "test.ping"], Duration::from_secs(30))
        .unwrap();
    let (v, _) = cli.salt_json(&["*", "test.ping"], 20).unwrap();
    assert_eq!(v, json!({"rmin1": true, "pymin1": true}));
    let (v, _) = cli.salt_json(&["*", "cmd.run", "echo hi"], 20).unwrap();
    assert_eq!(v, json!({"rmin1": "hi", "pymin1": "hi"}));

    let (v, _) = cli
        .salt_json(&["*", "cmd.run_all", "echo hi; echo err >&2; exit 3"], 20)
        .unwrap();
    let diff = shape_diff(&json_shape(&v["pymin1"]), &json_shape(&v["rmin1"]), false);
    assert!(
        diff.is_empty(),
        "cmd.run_all shape differs from Python's:\n{}\n{v:#}",
        diff.join("\n")
    );
    for k in ["stdout", "stderr", "retcode"] {
        assert_eq!(v["rmin1"][k], v["pymin1"][k], "cmd.run_all {k}: {v:#}");
    }

    let (v, _) = cli
        .salt_json(&["*", "test.arg", "a", "1", "k=v"], 20)
        .unwrap();
    // Salt 3008's minions add resource-targeting keys (`__pub_minion_is_target`,
    // `__pub_pure_resource_target`, `__pub_resource_targets`) that 3006/3007 minions and ours
    // do not send; compare with those removed (docs/interop.md).
    let mut py = v["pymin1"].clone();
    if let Some(kw) = py["kwargs"].as_object_mut() {
        for k in [
            "__pub_minion_is_target",
            "__pub_pure_resource_target",
            "__pub_resource_targets",
        ] {
            kw.remove(k);
        }
    }
    assert_eq!(v["rmin1"], py, "test.arg differs: {v:#}");
    // Python's test.arg also echoes the __pub_* keyword arguments; so do we.
    assert_eq!(v["rmin1"]["args"][0], "a", "{v:#}");
    assert_eq!(v["rmin1"]["kwargs"]["k"], "v", "{v:#}");
    assert_eq!(v["rmin1"]["kwargs"]["__pub_fun"], "test.arg", "{v:#}");

    let (v, _) = cli.salt_json(&["*", "grains.items"], 30).unwrap();
    let (g_py, g_rs) = (&v["pymin1"], &v["rmin1"]);
    assert!(g_py.is_object() && g_rs.is_object(), "{v:#}");
    let diff = shape_diff(&json_shape(g_py), &json_shape(g_rs), true);
    let real: Vec<&String> = diff.iter().filter(|d| !d.contains(": extra")).collect();
    assert!(
        real.is_empty(),
        "grain types differ from Python's:\n{real:#?}"
    );
    for g in CORE_GRAINS {
        assert!(g_rs.get(g).is_some(), "our minion lacks grain {g}");
    }
    assert_eq!(g_rs["id"], "rmin1");
    assert_eq!(g_rs["kernel"], g_py["kernel"]);
    assert_eq!(g_rs["os_family"], g_py["os_family"]);
    let missing: Vec<&String> = g_py
        .as_object()
        .map(|m| {
            m.keys()
                .filter(|k| g_rs.get(k.as_str()).is_none())
                .collect()
        })
        .unwrap_or_default();
    println!(
        "grains only the Python minion reports ({}): {missing:?}",
        missing.len()
    );
    let extra: Vec<&String> = diff.iter().filter(|d| d.contains(": extra")).collect();
    println!("grains only we report: {extra:?}");
    step(
        t0,
        "test.ping, cmd.run, cmd.run_all, test.arg, grains.items compared",
    );

    // A job longer than `-t`: Salt's CLI asks `saltutil.find_job` and keeps waiting while the
    // job runs, for our minion as for Python's. `cmd.run` keyword arguments answer alike.
    let (v, _) = cli
        .salt_json(&["*", "cmd.run", "sleep 6; echo done"], 3)
        .unwrap();
    assert_eq!(v, json!({"rmin1": "done", "pymin1": "done"}));
    let (v, _) = cli
        .salt_json(&["*", "saltutil.find_job", "20200101000000000000"], 20)
        .unwrap();
    assert_eq!(v, json!({"rmin1": {}, "pymin1": {}}));
    let (v, _) = cli
        .salt_json(&["*", "cmd.run", "sleep 30", "timeout=2"], 20)
        .unwrap();
    assert_eq!(v["rmin1"], v["pymin1"], "cmd.run timeout: {v:#}");
    let mut kw_cmds = vec![
        vec!["cmd.run", "echo $FOO", "env={FOO: bar}"],
        vec!["cmd.run", "umask", "umask=077"],
        vec!["cmd.run", "cat", "stdin=piped"],
        vec!["cmd.retcode", "exit 3", "success_retcodes=[3]"],
    ];
    // runas needs root; the other keyword arguments are compared either way.
    if require(salt_integration_tests::root()).is_some() {
        kw_cmds.push(vec!["cmd.run", "whoami", "runas=nobody"]);
    }
    for c in kw_cmds {
        let mut args = vec!["*"];
        args.extend(c.iter().copied());
        let (v, _) = cli.salt_json(&args, 20).unwrap();
        assert_eq!(v["rmin1"], v["pymin1"], "{c:?}: {v:#}");
    }
    step(t0, "find_job after -t, cmd.run keyword arguments compared");

    // Heartbeats (3008): our minion stayed connected for several heartbeat timeouts without
    // a drop or a new sign-in (libzmq answers the master's ZMTP PINGs). The window is the
    // observation itself, so it is waited out if the jobs above were quicker.
    let window = Duration::from_millis(u64::from(HEARTBEAT_TIMEOUT_MS) * 3);
    std::thread::sleep(window.saturating_sub(ready_at.elapsed()));
    let (v, _) = cli.salt_json(&["rmin1", "test.ping"], 20).unwrap();
    assert_eq!(v, json!({"rmin1": true}));
    assert_eq!(
        rmin.count(SUB_DISCONNECTED),
        0,
        "our minion's publish channel dropped (heartbeats?):\n{}",
        rmin.proc.tail(40)
    );
    assert_eq!(
        rmin.count(AUTH_OK),
        auths_at_ready,
        "our minion signed in again:\n{}",
        rmin.proc.tail(40)
    );
    step(
        t0,
        &format!(
            "connected {:.1} s with {HEARTBEAT_IVL_MS} ms heartbeats, no drop",
            ready_at.elapsed().as_secs_f64()
        ),
    );

    // always_verify_signature: rotate the AES key; on re-auth the signature is checked again.
    let before = rmin.count(VERIFIED);
    let dfn = master.dir.join("cache/.dfn");
    // Salt 3007+ rotates only when the dropfile holds this master's id; 3006 takes any 0400 file.
    std::fs::write(&dfn, "pymaster").unwrap();
    std::fs::set_permissions(&dfn, std::fs::Permissions::from_mode(0o400)).unwrap();
    wait_until(
        "Python master to take the dropfile",
        Duration::from_secs(30),
        || !dfn.exists(),
    )
    .unwrap();
    cli.until_answer("rmin1", &["rmin1", "test.ping"], Duration::from_secs(60))
        .unwrap();
    wait_until(
        "our minion to verify again",
        Duration::from_secs(10),
        || rmin.count(VERIFIED) > before,
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", rmin.proc.tail(40)));
    step(
        t0,
        &format!("always_verify_signature re-verified; done with Salt {version}"),
    );
    master.proc.stop(Duration::from_secs(5));
    drop((rmin, pmin, master));
    assert_no_leftovers(root.path());
}
