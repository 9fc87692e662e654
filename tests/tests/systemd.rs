//! systemd integration: the unit files pass `systemd-analyze verify`, and both daemons speak
//! the notification protocol to a fake `NOTIFY_SOCKET` (a Unix datagram socket bound here):
//! `READY=1` with a `STATUS=` line — for the master only once its ports accept connections —
//! `WATCHDOG=1` every half `WATCHDOG_USEC`, and `STOPPING=1` on SIGTERM.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpStream;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use salt_integration_tests::config::current_user;
use salt_integration_tests::{
    MasterConf, MinionConf, ProcSpec, TempRoot, bins, command, free_port_pair, require,
};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fake systemd: the datagrams a daemon sends to `$NOTIFY_SOCKET`.
struct FakeSystemd {
    sock: UnixDatagram,
    path: PathBuf,
    got: Vec<String>,
}

impl FakeSystemd {
    fn bind(dir: &Path) -> Self {
        let path = dir.join("notify.sock");
        let sock = UnixDatagram::bind(&path).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        FakeSystemd {
            sock,
            path,
            got: Vec::new(),
        }
    }

    /// Receive until a datagram contains `needle` (returns it) or `timeout` passes.
    fn wait_for(&mut self, needle: &str, timeout: Duration) -> String {
        let end = Instant::now() + timeout;
        let mut buf = [0u8; 4096];
        while Instant::now() < end {
            if let Ok(n) = self.sock.recv(&mut buf) {
                let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
                self.got.push(msg.clone());
                if msg.lines().any(|l| l == needle || l.starts_with(needle)) {
                    return msg;
                }
            }
        }
        panic!(
            "no {needle:?} from the daemon in {timeout:?}; got {:?}",
            self.got
        );
    }
}

#[test]
fn master_is_ready_only_once_its_ports_accept_and_pings_the_watchdog() {
    let b = bins().expect("our binaries");
    let root = TempRoot::new().unwrap();
    let mut systemd = FakeSystemd::bind(root.path());
    let (publish, ret) = free_port_pair().unwrap();
    let conf = MasterConf::new(root.path().join("master"))
        .ports(publish, ret)
        .set("user", current_user().as_str());
    let conf_dir = conf.write().unwrap();
    let mut master = ProcSpec::new("master", &b.master, conf.dir())
        .args(["-c".as_ref(), conf_dir.as_os_str()])
        .env("NOTIFY_SOCKET", &systemd.path)
        .env("WATCHDOG_USEC", "400000")
        .spawn()
        .unwrap();

    let ready = systemd.wait_for("READY=1", Duration::from_secs(60));
    // Both ports accept the moment READY=1 is out: a unit ordered After= can connect.
    TcpStream::connect(("127.0.0.1", ret)).expect("request port bound before READY=1");
    TcpStream::connect(("127.0.0.1", publish)).expect("publish port bound before READY=1");
    let status = ready
        .lines()
        .find(|l| l.starts_with("STATUS="))
        .expect("a STATUS= line with READY=1");
    assert!(status.contains(&ret.to_string()), "{status}");
    assert!(status.contains("accepted minion keys"), "{status}");
    assert!(
        master
            .output()
            .contains("Setting up the master communication server"),
        "keys loaded and the request server set up before READY"
    );

    // WATCHDOG_USEC=0.4 s: a ping every 0.2 s.
    let t0 = Instant::now();
    systemd.wait_for("WATCHDOG=1", Duration::from_secs(10));
    systemd.wait_for("WATCHDOG=1", Duration::from_secs(10));
    assert!(t0.elapsed() < Duration::from_secs(10));

    master.signal(Signal::SIGTERM);
    systemd.wait_for("STOPPING=1", Duration::from_secs(20));
    let status = master
        .wait_exit(Duration::from_secs(30))
        .expect("exits on SIGTERM");
    assert!(status.success(), "{status:?}\n{}", master.tail(20));
}

#[test]
fn minion_notifies_ready_and_stopping_and_is_silent_without_notify_socket() {
    let b = bins().expect("our binaries");
    let root = TempRoot::new().unwrap();
    let mut systemd = FakeSystemd::bind(root.path());
    let (publish, ret) = free_port_pair().unwrap();
    // No master listens there: READY=1 must not wait for a sign-in.
    let conf = MinionConf::new(root.path().join("minion"), "notify-minion")
        .set("master_port", i64::from(ret))
        .set("publish_port", i64::from(publish))
        .set("user", current_user().as_str());
    let conf_dir = conf.write().unwrap();
    let mut minion = ProcSpec::new("minion", &b.minion, conf.dir())
        .args(["-c".as_ref(), conf_dir.as_os_str()])
        .env("NOTIFY_SOCKET", &systemd.path)
        .env("WATCHDOG_USEC", "400000")
        .env("WATCHDOG_PID", "1")
        .spawn()
        .unwrap();
    let ready = systemd.wait_for("READY=1", Duration::from_secs(60));
    assert!(
        ready.contains("STATUS=Running as notify-minion; masters: 127.0.0.1"),
        "{ready}"
    );
    minion.signal(Signal::SIGTERM);
    systemd.wait_for("STOPPING=1", Duration::from_secs(20));
    minion
        .wait_exit(Duration::from_secs(30))
        .expect("exits on SIGTERM");
    assert!(
        !systemd.got.iter().any(|m| m.contains("WATCHDOG=1")),
        "WATCHDOG_PID names another process: no watchdog pings; got {:?}",
        systemd.got
    );
}

/// `systemd-analyze verify` on both units, with ExecStart= pointing at the built binaries
/// (verify checks that the command exists).
#[test]
fn unit_files_verify_clean() {
    let Some(analyze) = require(command("systemd-analyze")) else {
        return;
    };
    let out = Command::new(&analyze).arg("--version").output().unwrap();
    assert!(out.status.success());
    let b = bins().expect("our binaries");
    let root = TempRoot::new().unwrap();
    for (unit, bin) in [
        ("salt-master.service", &b.master),
        ("salt-minion.service", &b.minion),
        ("salt-api.service", &b.master.with_file_name("salt-api")),
    ] {
        let text = std::fs::read_to_string(repo().join("packaging/systemd").join(unit)).unwrap();
        assert!(text.contains("Type=notify"), "{unit}");
        assert!(text.contains("WatchdogSec="), "{unit}");
        let name = format!("/usr/bin/{}", unit.trim_end_matches(".service"));
        assert!(text.contains(&format!("ExecStart={name}\n")), "{unit}");
        let path = root.path().join(unit);
        std::fs::write(
            &path,
            text.replace(
                &format!("ExecStart={name}"),
                &format!("ExecStart={}", bin.display()),
            ),
        )
        .unwrap();
        let out = Command::new(&analyze)
            .args(["verify", "--man=no"])
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Only messages about this unit count: the host's own units may have issues.
        let ours: Vec<&str> = stderr.lines().filter(|l| l.contains(unit)).collect();
        assert!(
            out.status.success() && ours.is_empty(),
            "{unit}: systemd-analyze verify:\n{stderr}"
        );
    }
}
