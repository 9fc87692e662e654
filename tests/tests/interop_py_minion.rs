//! Interop 1: a real Python salt-minion (3006.30, 3007.17, 3008.5) against our salt-master,
//! driven with our `salt-key` and `salt`.
//!
//! Per version, in one run (the versions one after another):
//! 1. the minion's key shows pending in `salt-key -L`; `salt-key -a` accepts it;
//! 2. the minion signs in verifying our signed master key (`verify_master_pubkey_sign` with
//!    our `master_sign.pub`) and answers `test.ping`, `test.echo`, `cmd.run`, `grains.get os`,
//!    a grain-targeted ping, and a list target with a missing minion (reported, exit 1);
//! 3. `publisher_acl`: an unprivileged caller may run `test.*` but not `cmd.run`;
//! 4. `max_minions: 1`: a second Python minion is refused as full (our master logs it, its
//!    key is not even made pending, it never becomes ready) while the first keeps answering;
//! 5. `salt-key -d`, the minion restarts, shows pending again, is re-accepted and answers;
//! 6. AES rotation (dropfile): the minion re-authenticates by itself on the next publish
//!    (it logs the changed AES key) and, with `always_verify_signature`, checks our master
//!    key signature again; then the minion restarts and reconnects (key still accepted);
//! 7. pre-computed signature mode: the master restarts with `master_use_pubkey_signature`
//!    and a `master_pubkey_signature` file from our `salt-key --gen-signature`; the minion
//!    re-authenticates by itself (new AES key after the restart) verifying that signature;
//! 8. SIGTERM stops our master cleanly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use salt_integration_tests::interop_support::{
    Daemon, SaltCli, Side, assert_no_leftovers, copy_file, key_side, serial, venv_for, wait_file,
};
use salt_integration_tests::{MasterConf, MinionConf, TempRoot, Yaml, bins, free_port_pair};
use salt_integration_tests::{both, require};
use salt_integration_tests::{wait_for_log, wait_until};
use serde_json::json;

#[test]
fn py_minion_3006() {
    run("3006.30");
}

#[test]
fn py_minion_3007() {
    run("3007.17");
}

#[test]
fn py_minion_3008() {
    run("3008.5");
}

/// Logged (debug) by the Python minion each time it checks the master key signature.
const VERIFIED: &str = "Successfully verified signature of master public key";
/// Logged (debug, 3006-3008) by the Python minion when a sign-in brings a new AES key.
const AES_CHANGED: &str = "The master's aes key has changed.";

fn step(t0: Instant, what: &str) {
    println!("[{:6.1}s] {what}", t0.elapsed().as_secs_f64());
}

fn py_minion_conf(root: &std::path::Path, id: &str, ports: (u16, u16)) -> MinionConf {
    MinionConf::new(root.join(id), id)
        .ports(ports.0, ports.1)
        .verify_master_pubkey_sign(true)
        // Re-verify the signature on every sign-in, not only when the master key changes:
        // shows the pre-computed signature is checked after the restart.
        .set("always_verify_signature", true)
        .set("auth_timeout", 5u32)
        .set("auth_tries", 2u32)
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
    // Readable by the unprivileged publisher_acl caller.
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let ports = free_port_pair().unwrap();
    let mconf = MasterConf::new(root.path().join("m"))
        .id("rsmaster")
        .ports(ports.0, ports.1)
        .master_sign_pubkey(true)
        .max_minions(1)
        .set("loop_interval", 1u32)
        .set("worker_threads", 2u32)
        .set("publisher_acl", Yaml::Raw("{nobody: ['test.*']}".into()));
    let mut master = Daemon::start_master(&ours, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let cli = SaltCli::new(&ours, &master.conf_dir).with_key_side(&key_side(&ours, &py));
    let sign_pub = master.pki().join("master_sign.pub");
    wait_file(&sign_pub, Duration::from_secs(10)).unwrap();
    step(t0, "our master up");

    // 1. Pending, then accepted with our salt-key.
    let n1 = py_minion_conf(root.path(), "pym1", ports);
    copy_file(&sign_pub, &n1.pki_dir().join("master_sign.pub")).unwrap();
    let mut m1 = Daemon::start_minion(&py, &n1).unwrap();
    wait_until(
        "pym1 pending in salt-key -L",
        Duration::from_secs(90),
        || {
            cli.key_list("Unaccepted Keys:")
                .is_ok_and(|ids| ids.contains(&"pym1".to_string()))
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", m1.proc.tail(30)));
    cli.key(&["-a", "pym1", "-y"]).unwrap();
    assert_eq!(cli.key_list("Accepted Keys:").unwrap(), ["pym1"]);
    m1.wait_minion_ready().unwrap();
    step(t0, "pym1 accepted and ready");
    let minion_log = m1.proc.output();
    assert!(
        minion_log.contains(VERIFIED),
        "the Python minion did not verify our signed master key:\n{}",
        m1.proc.tail(40)
    );

    // 2. Jobs.
    let ping = cli
        .until_answer("pym1", &["pym1", "test.ping"], Duration::from_secs(30))
        .unwrap();
    assert_eq!(ping, json!(true));
    step(t0, "test.ping");
    let (v, _) = cli
        .salt_json(&["pym1", "test.echo", "hello world"], 20)
        .unwrap();
    assert_eq!(v, json!({"pym1": "hello world"}));
    step(t0, "test.echo");
    let (v, _) = cli.salt_json(&["pym*", "cmd.run", "echo hi"], 20).unwrap();
    assert_eq!(v, json!({"pym1": "hi"}));
    step(t0, "cmd.run");
    let (v, _) = cli.salt_json(&["pym1", "grains.get", "os"], 20).unwrap();
    assert!(v["pym1"].is_string() && v["pym1"] != "", "{v}");
    step(t0, "grains.get");
    // Our master keeps no grains cache, so a grain target's expected set is unknown and our
    // `salt` waits out the whole -t (Salt stops once every expected minion answered):
    // a short -t keeps this step quick (docs/interop.md, known differences).
    let (v, _) = cli
        .salt_json(&["-G", "kernel:Linux", "test.ping"], 8)
        .unwrap();
    assert_eq!(v, json!({"pym1": true}));
    step(t0, "test.ping, test.echo, cmd.run, grains.get, -G");
    // An accepted key whose minion is not running: named as missing, exit 1.
    let acc = master.pki().join("minions");
    std::fs::copy(acc.join("pym1"), acc.join("ghost")).unwrap();
    let out = salt_integration_tests::cli::salt(
        &ours.salt_bin(),
        None,
        &master.conf_dir,
        &[
            "-L",
            "pym1,ghost",
            "-t",
            "3",
            "--gather-job-timeout",
            "2",
            "test.ping",
        ],
        Duration::from_secs(60),
    )
    .unwrap();
    assert!(out.stdout.contains("pym1:\n    True\n"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("ghost:\n    Minion did not return. [No response]"),
        "{}",
        out.stdout
    );
    assert_eq!(out.status.and_then(|s| s.code()), Some(1));
    std::fs::remove_file(acc.join("ghost")).unwrap();
    step(t0, "missing minion reported");
    let out = salt_integration_tests::cli::salt(
        &ours.salt_bin(),
        None,
        &master.conf_dir,
        &["nomatch*", "test.ping"],
        Duration::from_secs(60),
    )
    .unwrap();
    assert!(
        out.stdout.contains("No minions matched the target"),
        "{out:?}"
    );
    assert_eq!(out.status.and_then(|s| s.code()), Some(2));
    step(t0, "no match");

    // 3. publisher_acl for an unprivileged caller.
    let as_nobody = |args: &[&str]| {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(ours.salt_bin())
            .arg("-c")
            .arg(&master.conf_dir)
            .args(args);
        salt_integration_tests::run_with_timeout(c, Duration::from_secs(60)).unwrap()
    };
    // setpriv to nobody needs root; the rest of the run goes on either way.
    if require(both(
        salt_integration_tests::root(),
        salt_integration_tests::command("setpriv"),
    ))
    .is_some()
    {
        let out = as_nobody(&["pym1", "test.ping", "-t", "10"]);
        assert_eq!(out.stdout, "pym1:\n    True\n", "{out:?}");
        let out = as_nobody(&["pym1", "cmd.run", "id"]);
        assert!(
            out.stdout.contains("Authorization error occurred"),
            "{out:?}"
        );
        assert_eq!(out.status.and_then(|s| s.code()), Some(2));
        step(t0, "publisher_acl");
    }

    // 4. max_minions: 1 — a second minion is refused as full.
    let n2 = py_minion_conf(root.path(), "pym2", ports);
    copy_file(&sign_pub, &n2.pki_dir().join("master_sign.pub")).unwrap();
    // The full check comes before any key handling (as in Salt): pym2's key is not even
    // written as pending.
    let m2 = Daemon::start_minion(&py, &n2).unwrap();
    wait_for_log(
        &master.proc,
        "Rejecting connection from id pym2",
        Duration::from_secs(90),
    )
    .unwrap();
    assert!(!master.pki().join("minions_pre/pym2").exists());
    let (v, _) = cli.salt_json(&["*", "test.ping"], 5).unwrap();
    assert_eq!(v["pym1"], json!(true), "{v}");
    assert!(
        !m2.proc
            .output()
            .contains("Minion is ready to receive requests!"),
        "pym2 signed in past max_minions"
    );
    drop(m2);
    step(t0, "max_minions full refused pym2");

    // 5. salt-key -d, restart, pending again, re-accept.
    cli.key(&["-d", "pym1", "-y"]).unwrap();
    assert!(cli.key_list("Accepted Keys:").unwrap().is_empty());
    m1.proc.restart().unwrap();
    wait_until("pym1 pending again", Duration::from_secs(90), || {
        cli.key_list("Unaccepted Keys:")
            .is_ok_and(|ids| ids.contains(&"pym1".to_string()))
    })
    .unwrap();
    cli.key(&["-a", "pym1", "-y"]).unwrap();
    m1.wait_minion_ready().unwrap();
    let ping = cli
        .until_answer("pym1", &["pym1", "test.ping"], Duration::from_secs(30))
        .unwrap();
    assert_eq!(ping, json!(true));
    step(t0, "deleted, restarted, re-accepted");

    // 6. AES rotation by dropfile: the minion re-authenticates by itself.
    let changed_before = m1.count(AES_CHANGED);
    let verified_before = m1.count(VERIFIED);
    let dfn = master.dir.join("cache/.dfn");
    std::fs::write(&dfn, "rsmaster").unwrap();
    std::fs::set_permissions(&dfn, std::fs::Permissions::from_mode(0o400)).unwrap();
    wait_until("dropfile consumed", Duration::from_secs(20), || {
        !dfn.exists()
    })
    .unwrap();
    wait_for_log(
        &master.proc,
        "Rotating master AES key",
        Duration::from_secs(5),
    )
    .unwrap();
    let ping = cli
        .until_answer("pym1", &["pym1", "test.ping"], Duration::from_secs(40))
        .unwrap();
    assert_eq!(ping, json!(true));
    // The answer came with the new key: the minion fetched it by itself (no restart), and
    // with always_verify_signature it checked our master key signature again on that sign-in.
    wait_until(
        "pym1 to log the new AES key and a fresh signature check",
        Duration::from_secs(10),
        || m1.count(AES_CHANGED) > changed_before && m1.count(VERIFIED) > verified_before,
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", m1.proc.tail(40)));
    step(t0, "AES rotation, re-auth with signature re-verified");

    // 6b. The Python minion restarts (key kept accepted) and reconnects by itself.
    m1.proc.restart().unwrap();
    m1.wait_minion_ready().unwrap();
    assert!(
        m1.count(VERIFIED) > 0,
        "no signature check after the restart:\n{}",
        m1.proc.tail(40)
    );
    let ping = cli
        .until_answer("pym1", &["pym1", "test.ping"], Duration::from_secs(30))
        .unwrap();
    assert_eq!(ping, json!(true));
    assert_eq!(cli.key_list("Accepted Keys:").unwrap(), ["pym1"]);
    assert!(cli.key_list("Unaccepted Keys:").unwrap().is_empty());
    step(t0, "Python minion restarted and reconnected");

    // 7. Pre-computed signature mode.
    cli.key(&[
        "--gen-signature",
        "--auto-create",
        "--priv",
        master.pki().join("master_sign.pem").to_str().unwrap(),
        "--pub",
        master.pki().join("master.pub").to_str().unwrap(),
        "--signature-path",
        master.pki().to_str().unwrap(),
    ])
    .unwrap();
    let sig_file = master.pki().join("master_pubkey_signature");
    assert!(sig_file.is_file(), "salt-key --gen-signature wrote nothing");
    // Counted before the restart: the minion may re-authenticate (and log it) before the
    // master's ports are seen ready.
    let verified_before = m1.count(VERIFIED);
    master.proc.stop(Duration::from_secs(15));
    let mconf = mconf.set("master_use_pubkey_signature", true);
    master = Daemon::start_master(&ours, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let cli = SaltCli::new(&ours, &master.conf_dir).with_key_side(&cli.key_side);
    let ping = cli
        .until_answer("pym1", &["pym1", "test.ping"], Duration::from_secs(60))
        .unwrap();
    assert_eq!(ping, json!(true));
    // The minion re-authenticates after it notices the restart; its log line can land after
    // the ping's answer (once seen in a full run), so it is waited for, not read at once.
    let reverified = wait_until("re-verification", Duration::from_secs(30), || {
        m1.count(VERIFIED) > verified_before
    });
    assert!(
        reverified.is_ok(),
        "no re-verification with the pre-computed signature:\n{}",
        m1.proc.tail(40)
    );
    step(t0, "pre-computed signature mode, restart, re-auth");

    // 8. Graceful stop.
    master.proc.signal(nix::sys::signal::Signal::SIGTERM);
    let st = master.proc.wait_exit(Duration::from_secs(20));
    assert!(st.is_some_and(|s| s.success()), "{st:?}");
    assert!(!master.dir.join("sock/local_client.sock").exists());
    drop((m1, master));
    assert_no_leftovers(root.path());
    step(
        t0,
        &format!("every process ended; done with Salt {version}"),
    );
}
