//! Events as Salt 3008 emits them (issue 38), recorded live from Salt 3008.5's master and from
//! ours with the same stock 3008.5 minion, and compared normalised (jid and ids replaced, the
//! data compared by keys, `act`/`result` by value):
//! * `salt/auth` with `act: accept`, `result: True`;
//! * `salt --start-event`: `salt/job/<jid>/start/<id>` fired by the minion, with Salt's keys;
//! * `salt/job/<jid>/ret/<id>`;
//! * every `_stamp` timezone-aware UTC (`2026-11-27T12:00:00.123456+00:00`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Duration;

use salt_integration_tests::interop_support::{Daemon, SaltCli, Side, serial, venv_for};
use salt_integration_tests::{MasterConf, MinionConf, TempRoot, bins, free_port_pair};
use serde_json::Value;

const VERSION: &str = "3008.5";

/// Tag kind (jid and minion id normalised) -> the event's data.
type Events = BTreeMap<String, Value>;

fn record(master_side: &Side, py: &Side) -> Events {
    let root = TempRoot::new().unwrap();
    let ports = free_port_pair().unwrap();
    let mconf = MasterConf::new(root.path().join("m"))
        .ports(ports.0, ports.1)
        .auto_accept(true);
    let mut master = Daemon::start_master(master_side, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let salt_run = master_side.salt_bin().with_file_name("salt-run");
    // Listener first: the sign-in's `salt/auth` comes before anything else. A listener started
    // before the master's local socket exists leaves at once: start it again.
    let listen = || {
        Command::new(&salt_run)
            .arg("-c")
            .arg(&master.conf_dir)
            .args(["state.event", "salt/*", "count=-1"])
            // Python's stdout to a pipe is block-buffered: unbuffered, nothing is lost at SIGTERM.
            .env("PYTHONUNBUFFERED", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut listener = listen();
    for _ in 0..10 {
        std::thread::sleep(Duration::from_secs(3));
        if listener.try_wait().unwrap().is_none() {
            break;
        }
        listener = listen();
    }
    let minion = Daemon::start_minion(
        py,
        &MinionConf::new(root.path().join("ev1"), "ev1").ports(ports.0, ports.1),
    )
    .unwrap();
    minion.wait_minion_ready().unwrap();
    let cli = SaltCli::new(master_side, &master.conf_dir);
    cli.until_answer("ev1", &["ev1", "test.ping"], Duration::from_secs(60))
        .unwrap();
    let out = salt_integration_tests::cli::salt(
        &master_side.salt_bin(),
        None,
        &master.conf_dir,
        &["--start-event", "ev1", "test.ping", "-t", "20"],
        Duration::from_secs(80),
    )
    .unwrap();
    assert!(out.stdout.contains("True"), "{out:?}");
    std::thread::sleep(Duration::from_secs(3));
    let pid = nix::unistd::Pid::from_raw(i32::try_from(listener.id()).unwrap());
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let got = listener.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&got.stdout).into_owned();
    eprintln!(
        "{} listener: {} bytes; stderr: {}",
        master_side.label(),
        text.len(),
        String::from_utf8_lossy(&got.stderr)
    );
    let mut events = Events::new();
    for line in text.lines() {
        let Some((tag, data)) = line.split_once('\t') else {
            continue;
        };
        let Ok(data) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        let kind: Vec<&str> = tag
            .split('/')
            .map(|p| {
                if p.len() == 20 && p.bytes().all(|b| b.is_ascii_digit()) {
                    "<jid>"
                } else {
                    p
                }
            })
            .collect();
        events.entry(kind.join("/")).or_insert(data);
    }
    events
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    k.sort();
    k
}

fn stamp_is_aware_utc(s: &str) -> bool {
    let re = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00$").unwrap();
    re.is_match(s)
}

#[test]
fn events_match_salt_3008() {
    let Some(venv) = salt_integration_tests::require(venv_for(VERSION)) else {
        return;
    };
    let _guard = serial();
    let py = Side::Salt(venv);
    let theirs = record(&py, &py);
    let ours = record(&Side::Ours(bins().unwrap()), &py);
    for (side, events) in [("salt", &theirs), ("ours", &ours)] {
        for (tag, data) in events.iter() {
            let stamp = data["_stamp"].as_str().unwrap_or("");
            assert!(stamp_is_aware_utc(stamp), "{side} {tag}: _stamp {stamp:?}");
        }
    }
    for kind in [
        "salt/auth",
        "salt/job/<jid>/start/ev1",
        "salt/job/<jid>/ret/ev1",
    ] {
        let t = theirs
            .get(kind)
            .unwrap_or_else(|| panic!("Salt 3008.5 fired no {kind}: {theirs:#?}"));
        let o = ours
            .get(kind)
            .unwrap_or_else(|| panic!("ours fired no {kind}: {ours:#?}"));
        let (mut tk, mut ok) = (keys(t), keys(o));
        if kind.contains("/ret/") {
            // Metric/trace keys a minion may add are carried as they come; compare Salt's.
            tk.retain(|k| !k.starts_with("trace"));
            ok.retain(|k| !k.starts_with("trace"));
        }
        assert_eq!(ok, tk, "{kind} keys: ours {o} / Salt {t}");
    }
    for field in ["act", "result"] {
        assert_eq!(
            ours["salt/auth"][field], theirs["salt/auth"][field],
            "salt/auth {field}"
        );
    }
    assert_eq!(theirs["salt/auth"]["act"], "accept");
}
