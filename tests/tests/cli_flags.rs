//! Salt's process flags on our daemons: `--version`, `--versions-report`, `--pid-file`
//! (written with our pid, removed on a clean exit) and `-d` (detaches, keeps serving, stops
//! on SIGTERM by the pid in its pid file).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use salt_integration_tests::config::current_user;
use salt_integration_tests::{
    MasterConf, MinionConf, ProcSpec, TempRoot, bins, free_port_pair, wait_until,
};
use salt_integration_tests::{both, command, require, root};

fn run(bin: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(bin).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn version_and_versions_report() {
    let b = bins().expect("our binaries");
    for (bin, name) in [(&b.master, "salt-master"), (&b.minion, "salt-minion")] {
        let (ok, out) = run(bin, &["--version"]);
        assert!(ok);
        assert!(
            out.starts_with(&format!(
                "{name} {} (salt-rs; wire-compatible with Salt 3006, 3007 and 3008)",
                env!("CARGO_PKG_VERSION")
            )),
            "{out}"
        );
        let (ok, out) = run(bin, &["--versions-report"]);
        assert!(ok);
        for section in ["Salt Version:", "Dependency Versions:", "System Versions:"] {
            assert!(out.contains(section), "{name}: {section} in\n{out}");
        }
        assert!(out.contains("libzmq: 4."), "{out}");
        assert!(out.contains(&format!("program: {name}")), "{out}");
    }
}

#[test]
fn master_pid_file_is_written_and_removed_on_sigterm() {
    let b = bins().expect("our binaries");
    let root = TempRoot::new().unwrap();
    let (publish, ret) = free_port_pair().unwrap();
    let conf = MasterConf::new(root.path().join("master"))
        .ports(publish, ret)
        .set("user", current_user().as_str());
    let conf_dir = conf.write().unwrap();
    let pid_file = root.path().join("run/custom-master.pid");
    let mut master = ProcSpec::new("master", &b.master, conf.dir())
        .args([
            "-c".as_ref(),
            conf_dir.as_os_str(),
            "--pid-file".as_ref(),
            pid_file.as_os_str(),
        ])
        .spawn()
        .unwrap();
    let want = format!("{}\n", master.pid());
    wait_until("the pid file", Duration::from_secs(30), || {
        std::fs::read_to_string(&pid_file).is_ok_and(|s| s == want)
    })
    .unwrap();
    master.signal(Signal::SIGTERM);
    let status = master.wait_exit(Duration::from_secs(30)).expect("exits");
    assert!(status.success(), "{status:?}");
    assert!(!pid_file.exists(), "pid file removed on a clean exit");
}

/// Kills a detached daemon by pid when the test ends, whatever happened.
struct Detached(Option<i32>);

impl Drop for Detached {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

fn alive(pid: i32) -> bool {
    // A zombie is not alive: only the reaper (init) can clear it.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.split(") ").nth(1).is_some_and(|r| r.starts_with('Z')))
}

#[test]
fn minion_daemonizes_with_d_and_stops_on_sigterm() {
    let b = bins().expect("our binaries");
    let root = TempRoot::new().unwrap();
    let (publish, ret) = free_port_pair().unwrap();
    let conf = MinionConf::new(root.path().join("minion"), "detached-minion")
        .set("master_port", i64::from(ret))
        .set("publish_port", i64::from(publish))
        .set("user", current_user().as_str());
    let conf_dir = conf.write().unwrap();
    let pid_file: PathBuf = root.path().join("detached.pid");
    let status = Command::new(&b.minion)
        .arg("-d")
        .arg("-c")
        .arg(&conf_dir)
        .arg("--pid-file")
        .arg(&pid_file)
        .status()
        .unwrap();
    assert!(status.success(), "-d returns at once with 0: {status:?}");
    let mut guard = Detached(None);
    wait_until("the daemon's pid file", Duration::from_secs(30), || {
        guard.0 = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        guard.0.is_some()
    })
    .unwrap();
    let pid = guard.0.unwrap();
    assert!(alive(pid), "the detached minion runs");
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    assert!(String::from_utf8_lossy(&cmdline).contains("salt-minion"));
    // It is in its own session, not the test's process group.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit(") ").next().unwrap().split(' ').collect();
    assert_eq!(fields[3], pid.to_string(), "session leader after setsid");

    kill(Pid::from_raw(pid), Signal::SIGTERM).unwrap();
    wait_until("the daemon to exit", Duration::from_secs(30), || {
        !alive(pid)
    })
    .unwrap();
    guard.0 = None;
    wait_until("its pid file to go", Duration::from_secs(10), || {
        !pid_file.exists()
    })
    .unwrap();
}

/// `-u USER`: the master binds its ports and loads its keys as root, then hands its
/// directories to the user and runs as that user (real and effective ids), still serving.
#[test]
fn master_runs_as_the_user_given_with_u_after_binding() {
    let Some(_) = require(both(root(), command("useradd"))) else {
        return;
    };
    const USER: &str = "saltrs-test";
    /// Removes the throwaway user this test created, whatever happens.
    struct CreatedUser(bool);
    impl Drop for CreatedUser {
        fn drop(&mut self) {
            if self.0 {
                let _ = Command::new("userdel").arg(USER).status();
            }
        }
    }
    let mut created = CreatedUser(false);
    if nix::unistd::User::from_name(USER).ok().flatten().is_none() {
        let st = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                USER,
            ])
            .status();
        assert!(
            st.as_ref().is_ok_and(|s| s.success()),
            "useradd {USER}: {st:?}"
        );
        created.0 = true;
    }
    let uid = nix::unistd::User::from_name(USER).unwrap().unwrap().uid;
    let b = bins().expect("our binaries");
    let root = TempRoot::new().unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        // As /etc/salt is: traversable by the user the daemon becomes.
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (publish, ret) = free_port_pair().unwrap();
    let conf = MasterConf::new(root.path().join("master"))
        .ports(publish, ret)
        .set("user", "root");
    let conf_dir = conf.write().unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(conf.dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut master = ProcSpec::new("master", &b.master, conf.dir())
        .args([
            "-c".as_ref(),
            conf_dir.as_os_str(),
            "-u".as_ref(),
            USER.as_ref(),
        ])
        .spawn()
        .unwrap();
    salt_integration_tests::wait_for_log(
        &master,
        "Running as user saltrs-test",
        Duration::from_secs(60),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", master.tail(30)));
    let status = std::fs::read_to_string(format!("/proc/{}/status", master.pid())).unwrap();
    let uids: Vec<&str> = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .unwrap()
        .split_whitespace()
        .skip(1)
        .collect();
    assert!(uids.iter().all(|u| *u == uid.to_string()), "{uids:?}");
    {
        use std::os::unix::fs::MetadataExt as _;
        let pem = std::fs::metadata(conf.pki_dir().join("master.pem")).unwrap();
        assert_eq!(pem.uid(), uid.as_raw(), "pki_dir handed over");
    }
    // Still serving on the ports bound as root.
    std::net::TcpStream::connect(("127.0.0.1", ret)).expect("request port");
    master.signal(Signal::SIGTERM);
    master.wait_exit(Duration::from_secs(30)).expect("exits");
}
