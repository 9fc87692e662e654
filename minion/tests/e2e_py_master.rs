//! End to end: our salt-minion against a real Python salt-master (3007.17 by default).
//!
//! The master signs its public key (`master_sign_pubkey: True`); the minion has the
//! master's `master_sign.pub` and `verify_master_pubkey_sign: True`. The minion's key must
//! show up pending, the real `salt-key -a` accepts it, the minion signs in, and the real
//! `salt` CLI gets our answers to `test.ping`, `cmd.run` and `grains.items`.
//!
//! Needs a Salt venv (`SALT_VENV`, default `/work/main/.venv/salt-3007.17`); prints
//! "SKIPPED: no Salt venv" without one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::io::Read;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The minion's stderr log, printed when a wait times out.
static MINION_LOG: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

fn salt_venv() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("SALT_VENV").map(PathBuf::from),
        Some(PathBuf::from("/work/main/.venv/salt-3007.17")),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/salt-3007.17")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.join("bin/salt-master").exists())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills a child's whole process group when dropped.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        let pgid = self.0.id();
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pgid}")])
            .status();
        let _ = self.0.wait();
    }
}

fn spawn_group(cmd: &mut Command) -> Group {
    Group(cmd.process_group(0).spawn().expect("spawn"))
}

fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        if start.elapsed() >= timeout {
            let log = MINION_LOG.get().map(|p| read(p)).unwrap_or_default();
            panic!("timed out waiting for {what}; minion log:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn read(path: &Path) -> String {
    let mut s = String::new();
    if let Ok(mut f) = fs::File::open(path) {
        let _ = f.read_to_string(&mut s);
    }
    s
}

fn salt_json(venv: &Path, conf: &Path, args: &[&str]) -> serde_json::Value {
    let out = Command::new(venv.join("bin/salt"))
        .arg("-c")
        .arg(conf)
        .args(args)
        .args(["--out", "json", "--static", "--timeout", "15"])
        .output()
        .expect("run salt");
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "salt {args:?}: {e}\nstdout: {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn python_master_accepts_and_drives_our_minion() {
    let Some(venv) = salt_venv() else {
        println!("SKIPPED: no Salt venv");
        return;
    };
    let started = Instant::now();
    let tmp = tempfile::Builder::new()
        .prefix("sm")
        .tempdir_in("/tmp")
        .unwrap();
    let t = tmp.path();
    let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout)
        .unwrap()
        .trim()
        .to_owned();
    let (pub_port, ret_port) = (free_port(), free_port());
    for d in ["m/conf", "n/conf", "n/pki"] {
        fs::create_dir_all(t.join(d)).unwrap();
    }
    fs::set_permissions(t.join("n/pki"), fs::Permissions::from_mode(0o700)).unwrap();
    let m = t.join("m");
    fs::write(
        t.join("m/conf/master"),
        format!(
            "id: pymaster\nuser: {user}\nroot_dir: {m}\npki_dir: {m}/pki\ncachedir: {m}/cache\n\
             sock_dir: {m}/sock\npidfile: {m}/master.pid\nlog_file: {m}/master.log\n\
             key_logfile: {m}/key.log\nlog_level: info\nlog_level_logfile: debug\n\
             interface: 127.0.0.1\npublish_port: {pub_port}\nret_port: {ret_port}\n\
             worker_threads: 2\nauto_accept: False\nmaster_sign_pubkey: True\n",
            m = m.display()
        ),
    )
    .unwrap();
    let n = t.join("n");
    fs::write(
        t.join("n/conf/minion"),
        format!(
            "id: rmin1\nuser: {user}\nroot_dir: {n}\npki_dir: {n}/pki\ncachedir: {n}/cache\n\
             sock_dir: {n}/sock\npidfile: {n}/minion.pid\nlog_file: {n}/minion.log\n\
             log_level_logfile: debug\nmaster: 127.0.0.1\nmaster_port: {ret_port}\n\
             publish_port: {pub_port}\nacceptance_wait_time: 1\nauth_timeout: 5\n\
             verify_master_pubkey_sign: True\n",
            n = n.display()
        ),
    )
    .unwrap();

    let _master = spawn_group(
        Command::new(venv.join("bin/salt-master"))
            .arg("-c")
            .arg(t.join("m/conf"))
            .args(["-l", "quiet"])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let sign_pub = t.join("m/pki/master_sign.pub");
    wait_for("master_sign.pub", Duration::from_secs(30), || {
        sign_pub.exists()
    });
    wait_for("master publisher", Duration::from_secs(30), || {
        read(&t.join("m/master.log")).contains("Starting the Salt Publisher")
    });
    println!("master up: {:?}", started.elapsed());
    fs::copy(&sign_pub, t.join("n/pki/master_sign.pub")).unwrap();

    let stderr_path = t.join("n/stderr.log");
    let _ = MINION_LOG.set(stderr_path.clone());
    let _minion = spawn_group(
        Command::new(env!("CARGO_BIN_EXE_salt-minion"))
            .arg("-c")
            .arg(t.join("n/conf"))
            .args(["-l", "debug"])
            .stdout(Stdio::null())
            .stderr(fs::File::create(&stderr_path).unwrap()),
    );
    let pending = t.join("m/pki/minions_pre/rmin1");
    wait_for("pending key", Duration::from_secs(45), || pending.exists());
    assert!(t.join("n/pki/minion.pem").exists() && t.join("n/pki/minion.pub").exists());

    println!("pending: {:?}", started.elapsed());
    let ok = Command::new(venv.join("bin/salt-key"))
        .arg("-c")
        .arg(t.join("m/conf"))
        .args(["-a", "rmin1", "-y"])
        .output()
        .unwrap();
    assert!(ok.status.success(), "salt-key -a failed: {ok:?}");

    wait_for("minion ready", Duration::from_secs(30), || {
        read(&stderr_path).contains("Minion is ready to receive requests!")
    });
    println!("ready: {:?}", started.elapsed());
    let log = read(&stderr_path);
    for line in [
        "[DEBUG   ] Attempting to authenticate with the Salt Master at 127.0.0.1",
        "[DEBUG   ] Successfully verified signature of master public key with verification public key master_sign.pub",
        "[INFO    ] Received signed and verified master pubkey from master 127.0.0.1",
        "[DEBUG   ] Decrypting the current master AES key",
        "[INFO    ] Authentication with master at 127.0.0.1 successful!",
    ] {
        assert!(log.contains(line), "missing log line {line:?} in:\n{log}");
    }
    assert!(t.join("n/pki/minion_master.pub").exists());

    let ping = salt_json(&venv, &t.join("m/conf"), &["rmin1", "test.ping"]);
    assert_eq!(ping, serde_json::json!({"rmin1": true}));
    println!("ping done: {:?}", started.elapsed());
    let hi = salt_json(&venv, &t.join("m/conf"), &["rmin1", "cmd.run", "echo hi"]);
    assert_eq!(hi, serde_json::json!({"rmin1": "hi"}));
    println!("cmd.run done: {:?}", started.elapsed());
    let grains = salt_json(&venv, &t.join("m/conf"), &["rmin1", "grains.items"]);
    assert_eq!(grains["rmin1"]["id"], "rmin1");
    assert_eq!(grains["rmin1"]["kernel"], "Linux");
    println!("e2e took {:?}", started.elapsed());
}
