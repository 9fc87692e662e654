//! Reactor options (issue 35, item 1) against Salt 3007.17's master as the reference; the
//! same steps on Salt's master, then on ours (no minions needed):
//!
//! 1. `reactor_worker_threads: 1`, `reactor_worker_hwm: 1`, and four `myco/slow` events whose
//!    reaction is `runner.test.sleep` (300 s): one reaction runs, one waits in the queue, the
//!    two beyond the queue are dropped and logged (Salt: "TaskPool queue is full!"). The two
//!    masters log the same number of drops (2, whatever the timing: the running sleep never
//!    ends within the test), counted once more after the master stopped.
//! 2. Then a `caller.` reaction: ours refuses it by name in its log ("caller reactions are not
//!    implemented by salt-rs"); what Salt's master does with it is printed, not compared (Salt
//!    3007.17's reactor reads the master's config as a minion's and keeps retrying a master
//!    named `salt`, which also holds up the reactions after it: so this step comes last).
//! 3. `reactor_niceness: 5`: Salt's master starts and renices its reactor process (a process
//!    of the master at niceness 5); ours, whose reactor is no process of its own, does not
//!    start and says why, naming `reactor_niceness`.
//!
//! Under `CI=true` a missing venv fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use salt_integration_tests::interop_support::{Daemon, Side, serial, venv_for};
use salt_integration_tests::{MasterConf, TempRoot, Yaml, bins, free_port_pair, run_with_timeout};
use salt_integration_tests::{require, wait_until};

const SLOW_SLS: &str = "sleep:\n  runner.test.sleep:\n    - args:\n      - s_time: 300\n";
const CALLER_SLS: &str =
    "call:\n  caller.file.touch:\n    - args:\n      - name: @OUT@/caller-touched\n";

/// Lines of the master's log file that tell of a reaction dropped for a full queue (its
/// console shows them too).
fn drops(master: &Daemon) -> usize {
    std::fs::read_to_string(&master.log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("queue is full"))
        .count()
}

fn salt_run(side: &Side, conf_dir: &Path, args: &[&str]) {
    let bin = side.salt_bin().with_file_name("salt-run");
    let mut c = std::process::Command::new(bin);
    c.arg("-c").arg(conf_dir).args(args);
    let out = run_with_timeout(c, Duration::from_secs(120)).unwrap();
    assert!(out.success(), "salt-run {args:?}: {out:?}");
}

fn master_conf(root: &Path, rdir: &Path) -> (MasterConf, (u16, u16)) {
    let r = |f: &str| rdir.join(f).display().to_string();
    let ports = free_port_pair().unwrap();
    let conf = MasterConf::new(root.join("m"))
        .id("ropt")
        .ports(ports.0, ports.1)
        .set("worker_threads", 2u32)
        .set("reactor_worker_threads", 1u32)
        .set("reactor_worker_hwm", 1u32)
        .set(
            "reactor",
            Yaml::Raw(format!(
                "\n  - 'myco/slow': ['{}']\n  - 'myco/caller': ['{}']",
                r("slow.sls"),
                r("caller.sls")
            )),
        );
    (conf, ports)
}

fn start(side: &Side, (conf, ports): &(MasterConf, (u16, u16))) -> Daemon {
    let mut master = Daemon::start_master(side, conf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    master
}

/// Steps 1 and 2 on one side: (drops logged, what came of the `caller.` reaction).
fn scenario(side: &Side) -> (usize, String) {
    let label = side.label();
    let root = TempRoot::new().unwrap();
    let out = root.dir("out").unwrap();
    let rdir = root.dir("reactor").unwrap();
    std::fs::write(rdir.join("slow.sls"), SLOW_SLS).unwrap();
    let caller = CALLER_SLS.replace("@OUT@", &out.display().to_string());
    std::fs::write(rdir.join("caller.sls"), caller).unwrap();
    let conf = master_conf(root.path(), &rdir);
    let mut master = start(side, &conf);
    let conf_dir = master.conf_dir.clone();

    for _ in 0..4 {
        salt_run(side, &conf_dir, &["event.send", "myco/slow"]);
    }
    wait_until(
        &format!("{label}: two dropped reactions logged"),
        Duration::from_secs(90),
        || drops(&master) >= 2,
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", master.proc.tail(60)));
    salt_run(side, &conf_dir, &["event.send", "myco/caller"]);
    let touched = out.join("caller-touched");
    let refused = "caller reactions are not implemented by salt-rs";
    let seen = wait_until(
        "the caller reaction's outcome",
        Duration::from_secs(30),
        || {
            touched.exists()
                || master.proc.output().contains(refused)
                || master.proc.output().contains("failed to execute caller")
        },
    );
    let caller = if touched.exists() {
        "the file was touched".to_owned()
    } else if master.proc.output().contains(refused) {
        "refused by name".to_owned()
    } else if seen.is_ok() {
        "logged as failed".to_owned()
    } else {
        "nothing within 30 s".to_owned()
    };
    println!("{label}: caller. reaction: {caller}");

    master.proc.stop(Duration::from_secs(20));
    let n = drops(&master);
    println!("{label}: {n} reactions dropped for a full queue");
    (n, caller)
}

/// The niceness of every process descended from `pid` (field 19 of `/proc/<pid>/stat`).
fn descendant_niceness(pid: i32) -> Vec<i64> {
    let mut parent: HashMap<i32, (i32, i64)> = HashMap::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // After the command's closing parenthesis: state, ppid, ... (nice is the 17th).
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if let (Some(pp), Some(nice)) = (f.get(1), f.get(16)) {
            parent.insert(p, (pp.parse().unwrap_or(0), nice.parse().unwrap_or(0)));
        }
    }
    let descends = |mut p: i32| {
        while let Some((pp, _)) = parent.get(&p) {
            if *pp == pid {
                return true;
            }
            p = *pp;
        }
        false
    };
    parent
        .iter()
        .filter(|(p, _)| descends(**p))
        .map(|(_, (_, n))| *n)
        .collect()
}

#[test]
fn reactor_options_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let ours = Side::Ours(bins().unwrap());
    let py = Side::Salt(venv);

    let (salt_drops, salt_caller) = scenario(&py);
    let (our_drops, our_caller) = scenario(&ours);
    assert_eq!(
        our_drops, salt_drops,
        "reactions dropped beyond reactor_worker_hwm"
    );
    assert_eq!(
        salt_drops, 2,
        "Salt's master: two reactions beyond the queue"
    );
    assert_eq!(
        our_caller, "refused by name",
        "our caller. reaction (Salt's: {salt_caller})"
    );

    // 3. reactor_niceness.
    let root = TempRoot::new().unwrap();
    let rdir = root.dir("reactor").unwrap();
    std::fs::write(rdir.join("slow.sls"), SLOW_SLS).unwrap();
    std::fs::write(rdir.join("caller.sls"), "{}\n").unwrap();
    let (conf, ports) = master_conf(root.path(), &rdir);
    let mut master = start(&py, &(conf.set("reactor_niceness", 5u32), ports));
    let pid = master.proc.pid();
    wait_until(
        "a process of Salt's master at niceness 5 (its reactor)",
        Duration::from_secs(60),
        || descendant_niceness(pid).contains(&5),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", master.proc.tail(40)));
    master.proc.stop(Duration::from_secs(20));

    let root = TempRoot::new().unwrap();
    let rdir = root.dir("reactor").unwrap();
    let (conf, _) = master_conf(root.path(), &rdir);
    let conf = conf.set("reactor_niceness", 5u32);
    let mut master = Daemon::start_master(&ours, &conf).unwrap();
    let status = master.proc.wait_exit(Duration::from_secs(60));
    assert!(
        status.is_some_and(|s| !s.success()),
        "our master with reactor_niceness: {status:?}\n{}",
        master.proc.tail(20)
    );
    assert!(
        master.proc.output().contains("reactor_niceness"),
        "our master's refusal names reactor_niceness:\n{}",
        master.proc.tail(20)
    );
}
