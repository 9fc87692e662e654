//! Salt 3008's batches (issue 38), recorded live from Salt 3008.5's master and `salt` and from
//! ours, each with the same three stock 3008.5 minions:
//! * `salt -b 1` and `salt -b 50%`: every group under one jid (`--show-jid` prints the same jid
//!   for each group), `jobs.lookup_jid` of it showing all three minions, the batch's events
//!   `salt/batch/<jid>/new`, `progress`, `complete` with Salt's keys;
//! * `salt --async -b 1`: "Executed batch command with job ID: <jid>", the master runs the
//!   other groups under that jid (`batch.status` completed 3 of 3, `jobs.lookup_jid` all
//!   three, `batch.list_active` empty at the end), events `new`, `progress`, `complete`;
//! * `batch.stop` on a running async batch: True, the batch halted with reason `stop`,
//!   `salt/batch/<jid>/halted` fired, the minions not yet run left out.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use salt_integration_tests::interop_support::{Daemon, SaltCli, Side, serial, venv_for};
use salt_integration_tests::{MasterConf, MinionConf, TempRoot, bins, free_port_pair};
use serde_json::Value;

const VERSION: &str = "3008.5";
const IDS: [&str; 3] = ["bt1", "bt2", "bt3"];

#[derive(Debug, Default)]
struct Record {
    /// Per `-b` spec: the jids `--show-jid` printed and the minions `jobs.lookup_jid` shows.
    sync: BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>,
    /// `Executed batch command with job ID: <jid>` with the jid replaced.
    async_line: String,
    /// `batch.status` of the async batch once done, and the minions of its `lookup_jid`.
    async_status: Value,
    async_minions: BTreeSet<String>,
    /// `batch.list_active` at the end.
    list_active: Value,
    /// On our master: `batch.status` of a `salt --async -b 1` by Salt 3008.5's own `salt`
    /// (which writes `.batch.p` itself), and its `lookup_jid` minions.
    py_async: Option<(Value, BTreeSet<String>)>,
    /// `batch.stop`'s answer and the stopped batch's `batch.status`.
    stop_answer: Value,
    stop_status: Value,
    /// Tag kind (jid replaced) -> the keys of each event of that kind, and the kinds in order.
    events: BTreeMap<String, BTreeSet<String>>,
    halted: Vec<Value>,
}

fn salt_run_json(side: &Side, conf: &Path, args: &[&str]) -> Value {
    let run = side.salt_bin().with_file_name("salt-run");
    let out = Command::new(&run)
        .arg("-c")
        .arg(conf)
        .args(args)
        .args(["--out", "json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "{} salt-run {args:?}: not JSON ({e}): {text} / {}",
            side.label(),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn lookup_minions(side: &Side, conf: &Path, jid: &str) -> BTreeSet<String> {
    let v = salt_run_json(side, conf, &["jobs.lookup_jid", jid]);
    v.as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

fn is_jid(p: &str) -> bool {
    p.len() == 20 && p.bytes().all(|b| b.is_ascii_digit())
}

fn record(master_side: &Side, py: &Side) -> Record {
    let root = TempRoot::new().unwrap();
    let ports = free_port_pair().unwrap();
    let mconf = MasterConf::new(root.path().join("m"))
        .ports(ports.0, ports.1)
        .auto_accept(true);
    let mut master = Daemon::start_master(master_side, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let conf = master.conf_dir.clone();
    let salt_run = master_side.salt_bin().with_file_name("salt-run");
    let listen = || {
        Command::new(&salt_run)
            .arg("-c")
            .arg(&conf)
            .args(["state.event", "salt/batch/*", "count=-1"])
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
    let minions: Vec<Daemon> = IDS
        .iter()
        .map(|id| {
            Daemon::start_minion(
                py,
                &MinionConf::new(root.path().join(id), id).ports(ports.0, ports.1),
            )
            .unwrap()
        })
        .collect();
    for m in &minions {
        m.wait_minion_ready().unwrap();
    }
    let cli = SaltCli::new(master_side, &conf);
    for id in IDS {
        cli.until_answer(id, &[id, "test.ping"], Duration::from_secs(90))
            .unwrap();
    }
    let salt = |args: &[&str]| {
        salt_integration_tests::cli::salt(
            &master_side.salt_bin(),
            None,
            &conf,
            args,
            Duration::from_secs(120),
        )
        .unwrap()
    };
    let mut rec = Record::default();
    for spec in ["1", "50%"] {
        let out = salt(&["-b", spec, "--show-jid", "bt*", "test.ping", "-t", "20"]);
        eprintln!("{} -b {spec}: {out:?}", master_side.label());
        // Salt 3008 prints each return as `{<id>: ret, jid: <jid>, retcode: 0}`.
        let jids: BTreeSet<String> = out
            .stdout
            .lines()
            .map(str::trim)
            .filter(|l| is_jid(l))
            .map(str::to_owned)
            .collect();
        let jid = jids.iter().next().cloned().unwrap_or_default();
        for id in IDS {
            assert!(out.stdout.contains(&format!("{id}:")), "{out:?}");
        }
        rec.sync.insert(
            spec.into(),
            (jids, lookup_minions(master_side, &conf, &jid)),
        );
    }
    // --async -b 1: handed to the master.
    let out = salt(&["--async", "-b", "1", "bt*", "test.ping", "-t", "20"]);
    eprintln!("{} --async -b 1: {out:?}", master_side.label());
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("Executed batch command"))
        .unwrap_or_else(|| panic!("{out:?}"))
        .to_owned();
    let jid = line.rsplit(' ').next().unwrap().to_owned();
    rec.async_line = line.replace(&jid, "<jid>");
    let limit = Instant::now() + Duration::from_secs(90);
    loop {
        let st = salt_run_json(master_side, &conf, &["batch.status", &jid]);
        if st["completed"] == 3 || Instant::now() > limit {
            rec.async_status = st;
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    rec.async_minions = lookup_minions(master_side, &conf, &jid);
    rec.list_active = salt_run_json(master_side, &conf, &["batch.list_active"]);
    if matches!(master_side, Side::Ours(_)) {
        let out = salt_integration_tests::cli::salt(
            &py.salt_bin(),
            None,
            &conf,
            &["--async", "-b", "1", "bt*", "test.ping", "-t", "20"],
            Duration::from_secs(120),
        )
        .unwrap();
        let jid = out
            .stdout
            .trim()
            .rsplit(' ')
            .next()
            .unwrap_or_else(|| panic!("{out:?}"))
            .to_owned();
        let limit = Instant::now() + Duration::from_secs(90);
        let st = loop {
            let st = salt_run_json(master_side, &conf, &["batch.status", &jid]);
            if st["completed"] == 3 || Instant::now() > limit {
                break st;
            }
            std::thread::sleep(Duration::from_secs(1));
        };
        rec.py_async = Some((st, lookup_minions(master_side, &conf, &jid)));
    }
    // batch.stop while the first group sleeps.
    let out = salt(&["--async", "-b", "1", "bt*", "test.sleep", "40", "-t", "60"]);
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("Executed batch command"))
        .unwrap_or_else(|| panic!("{out:?}"))
        .to_owned();
    let jid = line.rsplit(' ').next().unwrap().to_owned();
    rec.stop_answer = salt_run_json(master_side, &conf, &["batch.stop", &jid]);
    std::thread::sleep(Duration::from_secs(3));
    rec.stop_status = salt_run_json(master_side, &conf, &["batch.status", &jid]);
    std::thread::sleep(Duration::from_secs(2));
    let pid = nix::unistd::Pid::from_raw(i32::try_from(listener.id()).unwrap());
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let got = listener.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&got.stdout).into_owned();
    eprintln!("{} events:\n{text}", master_side.label());
    for line in text.lines() {
        let Some((tag, data)) = line.split_once('\t') else {
            continue;
        };
        let Ok(data) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        let kind: Vec<&str> = tag
            .split('/')
            .map(|p| if is_jid(p) { "<jid>" } else { p })
            .collect();
        let kind = kind.join("/");
        let keys: BTreeSet<String> = data
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        if kind.ends_with("/halted") {
            rec.halted.push(data.clone());
        }
        rec.events.entry(kind).or_default().extend(keys);
    }
    drop(minions);
    rec
}

/// The summary's values that do not depend on timing or ids.
fn stable(status: &Value) -> Value {
    let mut m = serde_json::Map::new();
    for k in [
        "fun",
        "tgt",
        "tgt_type",
        "total",
        "completed",
        "active",
        "pending",
        "failed",
        "batch_size",
        "halted",
        "halted_reason",
        "driver",
    ] {
        m.insert(k.into(), status.get(k).cloned().unwrap_or(Value::Null));
    }
    Value::Object(m)
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn batches_match_salt_3008() {
    let Some(venv) = salt_integration_tests::require(venv_for(VERSION)) else {
        return;
    };
    let _guard = serial();
    let py = Side::Salt(venv);
    let theirs = record(&py, &py);
    let ours = record(&Side::Ours(bins().unwrap()), &py);
    eprintln!("Salt: {theirs:#?}\nours: {ours:#?}");
    let all: BTreeSet<String> = IDS.iter().map(|s| (*s).to_owned()).collect();
    for (side, rec) in [("salt", &theirs), ("ours", &ours)] {
        for (spec, (jids, minions)) in &rec.sync {
            assert_eq!(
                jids.len(),
                1,
                "{side} -b {spec}: one jid for the batch: {jids:?}"
            );
            assert_eq!(
                minions, &all,
                "{side} -b {spec}: lookup_jid shows every minion"
            );
        }
        assert_eq!(rec.async_minions, all, "{side} --async -b 1: lookup_jid");
        assert_eq!(rec.list_active, Value::Array(vec![]), "{side}: list_active");
        assert_eq!(rec.stop_answer, Value::Bool(true), "{side}: batch.stop");
    }
    let (st, minions) = ours.py_async.clone().unwrap();
    assert_eq!(
        stable(&st),
        stable(&theirs.async_status),
        "Salt's `salt --async -b`, our master"
    );
    assert_eq!(minions, all);
    assert_eq!(ours.async_line, theirs.async_line);
    assert_eq!(stable(&ours.async_status), stable(&theirs.async_status));
    assert_eq!(keys(&ours.async_status), keys(&theirs.async_status));
    // Stopped while its first group sleeps: halted, the groups not yet run left pending (how
    // far it got depends on how fast `salt-run` starts, so the counts are checked, not equal).
    for (side, st) in [("salt", &theirs.stop_status), ("ours", &ours.stop_status)] {
        assert_eq!(
            (
                &st["halted"],
                &st["halted_reason"],
                &st["driver"],
                &st["total"]
            ),
            (&true.into(), &"stop".into(), &"master".into(), &3.into()),
            "{side}: {st}"
        );
        let n = |k: &str| st[k].as_u64().unwrap();
        assert_eq!(
            n("completed") + n("active") + n("pending") + n("failed"),
            3,
            "{side}: {st}"
        );
        assert!(n("pending") >= 1, "{side}: {st}");
    }
    assert_eq!(keys(&ours.stop_status), keys(&theirs.stop_status));
    let kinds = |r: &Record| r.events.keys().cloned().collect::<BTreeSet<_>>();
    assert_eq!(kinds(&ours), kinds(&theirs), "the batch events fired");
    for (kind, k) in &theirs.events {
        assert_eq!(ours.events.get(kind), Some(k), "{kind}: keys");
    }
    let reasons = |r: &Record| {
        r.halted
            .iter()
            .map(|h| h["reason"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(reasons(&ours), reasons(&theirs), "halted reasons");
}
