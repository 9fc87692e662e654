//! End to end: our `salt-master` and `salt` against a real Python salt-minion on loopback.
//!
//! Pending key → accepted (file moved as salt-key would) → the minion signs in and checks our
//! signed master key (`verify_master_pubkey_sign`) → `salt` gets `test.ping` and
//! `cmd.run`; a missing minion is reported; the dropfile rotates the AES key and the minion
//! re-authenticates; SIGTERM stops the master cleanly.
#![allow(clippy::unwrap_used)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The venv of Salt `version`: `SALT_VENV` (3007.17 only), `SALT_VENVS`, /work/main/.venv,
/// `<repo>/.venv`.
fn venv(version: &str) -> Option<PathBuf> {
    let name = format!("salt-{version}");
    let mut candidates: Vec<PathBuf> = Vec::new();
    if version == "3007.17" {
        candidates.extend(std::env::var_os("SALT_VENV").map(PathBuf::from));
    }
    if let Some(list) = std::env::var_os("SALT_VENVS") {
        candidates.extend(std::env::split_paths(&list).filter(|p| p.ends_with(&name)));
    }
    candidates.push(PathBuf::from("/work/main/.venv").join(&name));
    candidates.push(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../.venv")
            .join(&name),
    );
    candidates
        .into_iter()
        .find(|p| p.join("bin/salt-minion").exists())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills the process group on drop.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        let pgid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

fn spawn(cmd: &mut Command, log: &Path) -> Group {
    let out = std::fs::File::create(log).unwrap();
    let err = out.try_clone().unwrap();
    Group(
        cmd.stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .process_group(0)
            .spawn()
            .unwrap(),
    )
}

fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn file_contains(path: &Path, needle: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|s| s.contains(needle))
}

fn salt(conf: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_salt"))
        .arg("-c")
        .arg(conf)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn python_3007_minion() {
    e2e("3007.17");
}

#[test]
fn python_3006_minion() {
    e2e("3006.30");
}

#[test]
fn python_3008_minion() {
    e2e("3008.5");
}

fn as_nobody(conf: &Path, args: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_salt"))
        .arg("-c")
        .arg(conf)
        .args(args)
        .output()
        .unwrap()
}

fn job_count(cache: &Path) -> usize {
    std::fs::read_dir(cache.join("jobs"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn e2e(version: &str) {
    let Some(venv) = venv(version) else {
        println!("SKIPPED: no Salt venv for {version}");
        return;
    };
    let started = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix("e2e")
        .tempdir_in("/tmp")
        .unwrap();
    let t = dir.path();
    // Readable by the unprivileged publisher_acl user.
    std::fs::set_permissions(t, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (pub_port, ret_port) = (free_port(), free_port());
    for d in ["m/conf", "n/conf", "n/pki"] {
        std::fs::create_dir_all(t.join(d)).unwrap();
    }
    let r = t.display();
    std::fs::write(
        t.join("m/conf/master"),
        format!(
            "id: rsmaster\nroot_dir: {r}/m\npki_dir: {r}/m/pki\ncachedir: {r}/m/cache\n\
             sock_dir: {r}/m/sock\npidfile: {r}/m/master.pid\nlog_file: {r}/m/master.log\n\
             log_level: info\ninterface: 127.0.0.1\npublish_port: {pub_port}\n\
             ret_port: {ret_port}\nworker_threads: 2\nmaster_sign_pubkey: True\nloop_interval: 1\n\
             publisher_acl:\n  nobody:\n    - test.*\n"
        ),
    )
    .unwrap();
    std::fs::write(
        t.join("n/conf/minion"),
        format!(
            "id: pym1\nroot_dir: {r}/n\npki_dir: {r}/n/pki\ncachedir: {r}/n/cache\n\
             sock_dir: {r}/n/sock\npidfile: {r}/n/minion.pid\nlog_file: {r}/n/minion.log\n\
             log_level_logfile: debug\nmaster: 127.0.0.1\nmaster_port: {ret_port}\n\
             publish_port: {pub_port}\nipv6: False\nacceptance_wait_time: 1\n\
             acceptance_wait_time_max: 0\nauth_timeout: 5\nauth_tries: 2\nrandom_reauth_delay: 0\n\
             recon_default: 100\nrecon_max: 1000\nrecon_randomize: False\nmultiprocessing: False\n\
             mine_enabled: False\ngrains_cache: True\nenable_fqdns_grains: False\n\
             enable_gpu_grains: False\nverify_master_pubkey_sign: True\n"
        ),
    )
    .unwrap();
    let mconf = t.join("m/conf");
    let mut master = spawn(
        Command::new(env!("CARGO_BIN_EXE_salt-master"))
            .arg("-c")
            .arg(&mconf)
            .args(["-l", "info"]),
        &t.join("master.out"),
    );
    let sign_pub = t.join("m/pki/master_sign.pub");
    wait_for("master start", Duration::from_secs(20), || {
        file_contains(&t.join("master.out"), "worker threads") && sign_pub.exists()
    });
    std::fs::copy(&sign_pub, t.join("n/pki/master_sign.pub")).unwrap();
    let _minion = spawn(
        Command::new(venv.join("bin/salt-minion"))
            .arg("-c")
            .arg(t.join("n/conf"))
            .args(["-l", "info", "--disable-keepalive"]),
        &t.join("minion.out"),
    );
    let pre = t.join("m/pki/minions_pre/pym1");
    wait_for("pending key", Duration::from_secs(20), || pre.exists());
    std::fs::rename(&pre, t.join("m/pki/minions/pym1")).unwrap();
    wait_for("minion ready", Duration::from_secs(25), || {
        file_contains(
            &t.join("minion.out"),
            "Minion is ready to receive requests!",
        )
    });

    let out = salt(&mconf, &["pym1", "test.ping"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "pym1:\n    True\n",
        "{out:?}"
    );
    assert!(out.status.success());

    let out = salt(&mconf, &["pym*", "cmd.run", "echo hi"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "pym1:\n    hi\n",
        "{out:?}"
    );
    assert!(out.status.success());

    let out = salt(
        &mconf,
        &[
            "-G",
            "kernel:Linux",
            "--out",
            "json",
            "-t",
            "3",
            "test.ping",
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\n    \"pym1\": true\n}\n",
        "{out:?}"
    );

    // An accepted key whose minion is not running: named as missing, exit 1.
    std::fs::copy(t.join("m/pki/minions/pym1"), t.join("m/pki/minions/ghost")).unwrap();
    let out = salt(&mconf, &["-L", "pym1,ghost", "-t", "2", "test.ping"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("pym1:\n    True\n"), "{stdout}");
    assert!(
        stdout.contains("ghost:\n    Minion did not return. [No response]"),
        "{stdout}"
    );
    assert_eq!(out.status.code(), Some(1));
    std::fs::remove_file(t.join("m/pki/minions/ghost")).unwrap();

    // publisher_acl: nobody may run test.* but not cmd.run; a refusal publishes nothing.
    let out = as_nobody(&mconf, &["pym1", "test.ping"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "pym1:\n    True\n",
        "{out:?}"
    );
    let jobs_before = job_count(&t.join("m/cache"));
    let out = as_nobody(&mconf, &["pym1", "cmd.run", "id"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Authorization error occurred"),
        "{out:?}"
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(job_count(&t.join("m/cache")), jobs_before);

    let out = salt(&mconf, &["nomatch*", "test.ping"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("No minions matched the target"));
    assert_eq!(out.status.code(), Some(2));

    // Dropfile → AES rotation within loop_interval; the minion re-authenticates.
    let dfn = t.join("m/cache/.dfn");
    std::fs::write(&dfn, "rsmaster").unwrap();
    std::fs::set_permissions(&dfn, std::os::unix::fs::PermissionsExt::from_mode(0o400)).unwrap();
    wait_for("rotation", Duration::from_secs(10), || !dfn.exists());
    assert!(file_contains(
        &t.join("master.out"),
        "Rotating master AES key"
    ));
    let out = salt(&mconf, &["pym1", "test.ping", "-t", "10"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "pym1:\n    True\n",
        "{out:?}"
    );

    // Graceful stop on SIGTERM.
    let pid = nix::unistd::Pid::from_raw(master.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(st) = master.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "master did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    assert!(!t.join("m/sock/local_client.sock").exists());
    println!("e2e with Salt {version} took {:?}", started.elapsed());
}
