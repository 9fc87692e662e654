//! The master event bus for Salt's own Python tools (issue #33, item 3), for Salt 3006.30,
//! 3007.17 and 3008.5, each run first against Salt's own master and then against ours with
//! the same steps and the same checks:
//!
//! 1. a Python `salt.utils.event.get_master_event(opts, sock_dir, listen=True)` reader is
//!    connected before anything happens;
//! 2. our minion asks to be accepted; Python `salt-key -a` (on the master's own config) accepts
//!    it and fires `salt/key`, which the reader sees; the minion's sign-in gives `salt/auth`;
//! 3. `test.ping` through the side's `salt` gives `salt/job/<jid>/new` and
//!    `salt/job/<jid>/ret/<id>` to the reader;
//! 4. a Python `fire_event({'x': 1}, 'myco/custom')` reaches the side's own
//!    `salt-run state.event` (ours: our `salt-run`) and the Python reader.
//!
//! Our master speaks the 3006 framing to 3006's tools with `event_bus_framing: ipc`. Under
//! `CI=true` a missing venv fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use salt_integration_tests::bus_listener;
use salt_integration_tests::interop_support::{Daemon, SaltCli, Side, serial, venv_for};
use salt_integration_tests::{
    MasterConf, MinionConf, ProcSpec, SaltVenv, TempRoot, bins, free_port_pair, run_with_timeout,
    wait_until,
};
use serde_json::Value;

#[test]
fn events_3006() {
    run("3006.30");
}

#[test]
fn events_3007() {
    run("3007.17");
}

#[test]
fn events_3008() {
    run("3008.5");
}

/// Fires `{'x': 1}` under `myco/custom` into the master's pull socket.
const FIRE: &str = r#"
import sys
import salt.config, salt.utils.event
opts = salt.config.master_config(sys.argv[1])
ev = salt.utils.event.get_master_event(opts, opts["sock_dir"], listen=False)
print("FIRED", ev.fire_event({"x": 1}, "myco/custom"), flush=True)
ev.destroy()
"#;

fn venv(version: &str) -> Option<SaltVenv> {
    salt_integration_tests::require(venv_for(version))
}

fn run(version: &str) {
    let Some(venv) = venv(version) else {
        return;
    };
    let _guard = serial();
    let ours = Side::Ours(bins().unwrap());
    let py = Side::Salt(venv.clone());
    for master_side in [&py, &ours] {
        scenario(version, &venv, master_side, &ours);
    }
}

fn python(venv: &SaltVenv, dir: &Path, name: &str, code: &str, args: &[&str]) -> ProcSpec {
    let script = dir.join(format!("{name}.py"));
    std::fs::write(&script, code).unwrap();
    ProcSpec::new(name, venv.bin("python"), dir)
        .args([script.as_os_str()])
        .args(args)
}

fn scenario(version: &str, venv: &SaltVenv, side: &Side, ours: &Side) {
    let label = format!("Salt {version}, {} master", side.label());
    println!("== {label}");
    let root = TempRoot::new().unwrap();
    let ports = free_port_pair().unwrap();
    let mut mconf = MasterConf::new(root.path().join("m"))
        .id("evmaster")
        .ports(ports.0, ports.1)
        .set("worker_threads", 2u32);
    if matches!(side, Side::Ours(_)) && version.starts_with("3006") {
        mconf = mconf.set("event_bus_framing", "ipc");
    }
    let mut master = Daemon::start_master(side, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    // What Python tools look for in sock_dir: the event bus, and workers.ipc (salt-api's
    // `_is_master_running`), each a socket something listens on.
    for name in [
        "master_event_pub.ipc",
        "master_event_pull.ipc",
        "workers.ipc",
    ] {
        use std::os::unix::fs::{FileTypeExt, PermissionsExt};
        let p = master.dir.join("sock").join(name);
        let meta = std::fs::metadata(&p).unwrap_or_else(|e| panic!("{label}: {name}: {e}"));
        println!(
            "{label}: {name} mode {:o}, socket: {}",
            meta.permissions().mode() & 0o777,
            meta.file_type().is_socket()
        );
        // Salt 3008.5's pooled request server binds `workers-<pool>.ipc`; its `workers.ipc`
        // is not a socket. Ours must be.
        if matches!(side, Side::Ours(_)) || name != "workers.ipc" {
            assert!(
                meta.file_type().is_socket(),
                "{label}: {name} is not a socket"
            );
        }
    }
    let conf_dir = master.conf_dir.clone();
    let conf_file = conf_dir.join("master");
    let conf = conf_file.to_str().unwrap();
    let work = root.dir("work").unwrap();

    // 1. The Python reader.
    let mut listener = bus_listener::start(venv, &work, Path::new(conf), 600, &label);

    // 2. A minion, accepted with Python salt-key: salt/key, then salt/auth.
    let mid = "evminion";
    let minion_conf = MinionConf::new(root.path().join(mid), mid)
        .ports(ports.0, ports.1)
        .set("auth_timeout", 5u32);
    let mut minion = Daemon::start_minion(ours, &minion_conf).unwrap();
    let pending = master.pki().join("minions_pre").join(mid);
    wait_until("the minion's key pending", Duration::from_secs(60), || {
        pending.exists()
    })
    .unwrap_or_else(|e| panic!("{label}: {e}\n{}", minion.proc.tail(30)));
    let mut c = std::process::Command::new(venv.key());
    c.arg("-c").arg(&conf_dir).args(["-a", mid, "-y"]);
    let out = run_with_timeout(c, Duration::from_secs(60)).unwrap();
    assert!(out.success(), "{label}: Python salt-key -a: {out:?}");
    let key = bus_listener::seen(&listener, "salt/key", |t, d| {
        // 3006/3007's salt-key says "accept", 3008.5's "accepted" (with the key's `pub`).
        t == "salt/key" && d["id"] == mid && (d["act"] == "accept" || d["act"] == "accepted")
    });
    assert_eq!(key["result"], Value::Bool(true), "{label}: {key}");
    minion.wait_minion_ready().unwrap();
    let auth = bus_listener::seen(&listener, "salt/auth (accepted)", |t, d| {
        t == "salt/auth" && d["id"] == mid && d["act"] == "accept"
    });
    assert_eq!(auth["result"], Value::Bool(true), "{label}: {auth}");
    assert!(
        auth["pub"]
            .as_str()
            .is_some_and(|p| p.contains("PUBLIC KEY")),
        "{auth}"
    );

    // 3. test.ping: the job's new and ret events.
    let cli = SaltCli::new(side, &conf_dir);
    let ping = cli
        .until_answer(mid, &[mid, "test.ping"], Duration::from_secs(60))
        .unwrap();
    assert_eq!(ping, Value::Bool(true), "{label}");
    let new = bus_listener::seen(&listener, "salt/job/<jid>/new for test.ping", |t, d| {
        t.starts_with("salt/job/") && t.ends_with("/new") && d["fun"] == "test.ping"
    });
    let jid = new["jid"].as_str().unwrap().to_owned();
    assert_eq!(new["minions"], serde_json::json!([mid]), "{label}: {new}");
    let ret = bus_listener::seen(&listener, "salt/job/<jid>/ret/<id>", |t, _| {
        t == format!("salt/job/{jid}/ret/{mid}")
    });
    assert_eq!(ret["return"], Value::Bool(true), "{label}: {ret}");
    assert_eq!(ret["fun"], "test.ping", "{label}: {ret}");
    assert_eq!(ret["id"], mid, "{label}: {ret}");

    // 4. A Python fire_event reaches the side's salt-run state.event and the Python reader.
    let salt_run = match side {
        Side::Ours(b) => b.salt.with_file_name("salt-run"),
        Side::Salt(v) => v.bin("salt-run"),
    };
    let mut watcher = ProcSpec::new("state-event", salt_run, &work)
        .args([std::ffi::OsStr::new("-c"), conf_dir.as_os_str()])
        .args(["state.event", "myco/*", "count=1"])
        .spawn()
        .unwrap();
    let fire = python(venv, &work, "fire", FIRE, &[conf]);
    wait_until(
        "salt-run state.event prints the fired event",
        Duration::from_secs(90),
        || {
            if watcher.output().contains("myco/custom") {
                return true;
            }
            // The runner connects on its own time: fire until it has seen one.
            let mut c = std::process::Command::new(&fire.program);
            c.args(&fire.args);
            let _ = run_with_timeout(c, Duration::from_secs(30));
            watcher.output().contains("myco/custom")
        },
    )
    .unwrap_or_else(|e| panic!("{label}: {e}\n{}", watcher.tail(30)));
    let line = watcher
        .output()
        .lines()
        .find(|l| l.starts_with("myco/custom"))
        .unwrap()
        .to_owned();
    assert!(line.contains("\"x\": 1"), "{label}: {line}");
    let custom = bus_listener::seen(&listener, "myco/custom", |t, _| t == "myco/custom");
    assert_eq!(custom["x"], 1, "{label}: {custom}");
    assert!(custom["_stamp"].is_string(), "{label}: {custom}");
    println!("{label}: salt/key, salt/auth, job new/ret and myco/custom all delivered");

    watcher.stop(Duration::from_secs(5));
    listener.stop(Duration::from_secs(5));
    minion.proc.stop(Duration::from_secs(10));
    master.proc.stop(Duration::from_secs(15));
}

/// `ipc_mode: tcp`: the same bus on loopback `tcp_master_pub_port` / `tcp_master_pull_port`
/// (Salt 3007.17's tools; Salt's master first, then ours).
#[test]
fn events_ipc_mode_tcp_3007() {
    let Some(venv) = venv("3007.17") else {
        return;
    };
    let _guard = serial();
    let ours = Side::Ours(bins().unwrap());
    let py = Side::Salt(venv.clone());
    for side in [&py, &ours] {
        let label = format!("ipc_mode: tcp, {} master", side.label());
        let root = TempRoot::new().unwrap();
        let ports = free_port_pair().unwrap();
        let bus = free_port_pair().unwrap();
        let mconf = MasterConf::new(root.path().join("m"))
            .ports(ports.0, ports.1)
            .set("worker_threads", 2u32)
            .set("ipc_mode", "tcp")
            .set("tcp_master_pub_port", bus.0)
            .set("tcp_master_pull_port", bus.1);
        let mut master = Daemon::start_master(side, &mconf).unwrap();
        // (The harness's readiness wait looks for Salt's master_event_pub.ipc: not here.)
        wait_until("the bus's loopback ports", Duration::from_secs(90), || {
            [bus.0, bus.1]
                .iter()
                .all(|p| std::net::TcpStream::connect(("127.0.0.1", *p)).is_ok())
        })
        .unwrap_or_else(|e| panic!("{label}: {e}\n{}", master.proc.tail(30)));
        for name in ["master_event_pub.ipc", "master_event_pull.ipc"] {
            assert!(
                !master.dir.join("sock").join(name).exists(),
                "{label}: {name} exists"
            );
        }
        let conf_file = master.conf_dir.join("master");
        let conf = conf_file.to_str().unwrap();
        let work = root.dir("work").unwrap();
        let mut listener = bus_listener::start(&venv, &work, Path::new(conf), 300, &label);
        let fire = python(&venv, &work, "fire", FIRE, &[conf]);
        wait_until(
            "the reader sees myco/custom",
            Duration::from_secs(60),
            || {
                let mut c = std::process::Command::new(&fire.program);
                c.args(&fire.args);
                let _ = run_with_timeout(c, Duration::from_secs(30));
                bus_listener::events(&listener)
                    .iter()
                    .any(|e| e["tag"] == "myco/custom")
            },
        )
        .unwrap_or_else(|e| panic!("{label}: {e}\n{}", listener.tail(30)));
        println!(
            "{label}: myco/custom delivered over loopback {}/{}",
            bus.0, bus.1
        );
        listener.stop(Duration::from_secs(5));
        master.proc.stop(Duration::from_secs(15));
    }
}
