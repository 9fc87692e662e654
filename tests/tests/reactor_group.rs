//! The reactor in a master group on a real PostgreSQL (issue 35, item 1; docs/group.md, "The
//! reactor"): two masters of one group run the same reactor; every event is fired on both
//! (`salt-run event.send` on each, as a multi-master minion's `event.send` reaches every
//! master) and its reaction (`wheel.file_roots.write` into the reacting master's own
//! `file_roots`) happens exactly once, on the leader. `salt-run reactor.is_leader` is true on
//! exactly one member; when the leader stops, the other takes over and reacts; a restarted
//! member does not take the lead back; `reactor.set_leader False` on the leader hands the lead
//! to the other, `True` takes part again (and answers whether it leads).
//!
//! Under `CI=true` a missing PostgreSQL fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use salt_integration_tests::pg::Postgres;
use salt_integration_tests::process::{Proc, ProcSpec};
use salt_integration_tests::root::TempRoot;
use salt_integration_tests::wait::{wait_until, wait_until_some};
use salt_integration_tests::{MasterConf, Yaml, bins, ports, run_with_timeout};
use serde_json::Value;

const MARK_SLS: &str = "mark:
  wheel.file_roots.write:
    - path: reacted-{{ data['n'] }}
    - data: reacted
";

struct Member {
    proc: Proc,
    conf_dir: PathBuf,
    /// Its `file_roots` (base): where its reactions write.
    srv: PathBuf,
}

fn member(root: &Path, name: &str, pg: &Postgres, sls: &Path) -> Member {
    let (publish, ret) = ports::free_port_pair().unwrap();
    let srv = root.join(format!("srv-{name}"));
    std::fs::create_dir_all(&srv).unwrap();
    let conf = MasterConf::new(root.join(name))
        .id(name)
        .ports(publish, ret)
        .set(
            "file_roots",
            Yaml::Raw(format!("{{base: ['{}']}}", srv.display())),
        )
        .set(
            "reactor",
            Yaml::Raw(format!("\n  - 'myco/*': ['{}']", sls.display())),
        );
    let conf_dir = conf.write().unwrap();
    let file = conf_dir.join("master");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(&pg.group_conf("g1"));
    std::fs::write(&file, text).unwrap();
    let proc = ProcSpec::new(name, &bins().unwrap().master, conf.dir())
        .args(["-c".into(), conf_dir.clone().into_os_string()])
        .args(["-l", "info"])
        .spawn()
        .unwrap();
    Member {
        proc,
        conf_dir,
        srv,
    }
}

/// `salt-run --out json <args>` on `m`; `None` when it fails (a master not up yet).
fn try_run(m: &Member, args: &[&str]) -> Option<Value> {
    let mut c = std::process::Command::new(bins().unwrap().salt.with_file_name("salt-run"));
    c.arg("-c")
        .arg(&m.conf_dir)
        .args(["--out", "json"])
        .args(args);
    let out = run_with_timeout(c, Duration::from_secs(60)).ok()?;
    if !out.success() {
        return None;
    }
    serde_json::from_str(out.stdout.trim()).ok()
}

fn run(m: &Member, args: &[&str]) -> Value {
    try_run(m, args).unwrap_or_else(|| panic!("salt-run {args:?}\n{}", m.proc.tail(40)))
}

/// `reactor.is_leader` on `m` (a `salt-run` that fails, say a master not up yet or a
/// reactor not started, is asked again; `false` only from an answer).
fn leads(m: &Member) -> bool {
    let answer = wait_until_some(Duration::from_secs(60), || {
        try_run(m, &["reactor.is_leader"]).filter(Value::is_boolean)
    });
    answer.unwrap_or_else(|| panic!("no reactor.is_leader answer\n{}", m.proc.tail(40)))
        == Value::Bool(true)
}

/// Which of `a`, `b` leads (`true`: `a`), once one does.
fn leader_of(a: &Member, b: &Member) -> bool {
    wait_until_some(Duration::from_secs(60), || {
        if leads(a) {
            Some(true)
        } else if leads(b) {
            Some(false)
        } else {
            None
        }
    })
    .unwrap_or_else(|| panic!("no leader\n{}\n{}", a.proc.tail(30), b.proc.tail(30)))
}

fn reacted(m: &Member, n: u32) -> bool {
    m.srv.join(format!("reacted-{n}")).exists()
}

/// Fire `myco/ev` with `n` on every member of `fire_on`; exactly one of `members` (the one
/// named `leader`) reacts.
fn once(members: &[&Member], fire_on: &[&Member], leader: &Member, n: u32) {
    for m in fire_on {
        assert_eq!(
            run(m, &["event.send", "myco/ev", &format!("{{\"n\": {n}}}")]),
            Value::Bool(true)
        );
    }
    wait_until(&format!("reaction {n}"), Duration::from_secs(30), || {
        reacted(leader, n)
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", leader.proc.tail(40)));
    // Each member's events were fired before the leader's reaction was seen; a follower
    // that reacted would have written by now.
    std::thread::sleep(Duration::from_secs(1));
    let count = members.iter().filter(|m| reacted(m, n)).count();
    assert_eq!(count, 1, "event {n} reacted on {count} members");
}

#[test]
fn one_reaction_per_group() {
    let root = TempRoot::new().unwrap();
    let Some(pg) = Postgres::start(&root.dir("pg").unwrap()).unwrap() else {
        return;
    };
    let sls = root.path().join("mark.sls");
    std::fs::write(&sls, MARK_SLS).unwrap();
    let a = member(root.path(), "ma", &pg, &sls);
    let b = member(root.path(), "mb", &pg, &sls);
    // Exactly one leads.
    let (mut leader, mut other) = if leader_of(&a, &b) { (a, b) } else { (b, a) };
    assert!(
        !leads(&other),
        "two leaders\n{}\n{}",
        leader.proc.tail(30),
        other.proc.tail(30)
    );
    // Every event fired on both members reacts once, on the leader.
    for n in 1..=3 {
        once(&[&leader, &other], &[&other, &leader], &leader, n);
    }
    // The leader stops: the other takes over and reacts.
    leader.proc.stop(Duration::from_secs(10));
    wait_until("failover", Duration::from_secs(30), || leads(&other))
        .unwrap_or_else(|e| panic!("{e}\n{}", other.proc.tail(40)));
    once(&[&leader, &other], &[&other], &other, 4);
    // The old leader comes back as a follower.
    leader.proc.restart().unwrap();
    assert!(!leads(&leader), "a restarted member took the lead back");
    assert!(leads(&other));
    once(&[&leader, &other], &[&leader, &other], &other, 5);
    // set_leader False on the leader (`other` now): it steps down and the restarted member
    // (`leader`) takes over.
    assert_eq!(
        run(&other, &["reactor.set_leader", "value=False"]),
        Value::Bool(false)
    );
    wait_until("handover", Duration::from_secs(30), || leads(&leader))
        .unwrap_or_else(|e| panic!("{e}\n{}", leader.proc.tail(40)));
    assert!(!leads(&other));
    once(&[&leader, &other], &[&other, &leader], &leader, 6);
    // set_leader True takes part again: the lead is taken, so it answers False.
    assert_eq!(
        run(&other, &["reactor.set_leader", "value=True"]),
        Value::Bool(false)
    );
    leader.proc.stop(Duration::from_secs(10));
    wait_until(
        "failover to the member back in",
        Duration::from_secs(30),
        || leads(&other),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", other.proc.tail(40)));
    other.proc.stop(Duration::from_secs(10));
    drop(pg);
}
