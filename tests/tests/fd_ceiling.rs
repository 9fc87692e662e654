//! The descriptor ceiling (issue 39, item 1): a master whose descriptor limit is far below
//! what its minions would take raises its soft limit to `max_open_files` at start (Salt's log
//! lines), then admits new minions only while descriptors remain for its files: 500 swarm
//! minions against a limit of 300, the ones that got in all answer `test.ping`, the others are
//! told "full", and the key store never fails with "Too many open files". Then peers that
//! connect without signing in (a flood of publish-port connections): the master keeps the
//! last descriptors for its files, refuses the rest without spinning, says so, and serves
//! the minions it holds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use salt_integration_tests::bins::target_dir;
use salt_integration_tests::e2e_support::{Cluster, MASTER_READY};
use salt_integration_tests::{ProcSpec, wait_for_log, wait_until, workspace_root};

const SWARM: usize = 500;
const LIMIT: u32 = 300;

/// The swarm load generator (package salt-examples), built like the other binaries
/// (`SALT_RS_BIN_DIR` set: taken from there, as they are).
fn swarm_bin() -> PathBuf {
    if let Some(dir) = std::env::var_os("SALT_RS_BIN_DIR") {
        return PathBuf::from(dir).join("swarm");
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(workspace_root())
        .args([
            "build",
            "--quiet",
            "--profile",
            "test",
            "-p",
            "salt-examples",
            "--bin",
            "swarm",
        ])
        .output()
        .expect("running cargo build");
    assert!(
        out.status.success(),
        "cargo build -p salt-examples --bin swarm: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    target_dir().join("debug").join("swarm")
}

fn accepted(c: &Cluster) -> usize {
    std::fs::read_dir(c.pki().join("minions")).map_or(0, |d| d.count())
}

/// Pings `held-*` until all `n` held minions answer (a minion counted in `pki/minions` may
/// still be subscribing, or its key not yet listed by the master), at most `limit`; returns
/// how many answered the last ping and its output.
fn until_all_held_answer(c: &Cluster, n: usize, limit: Duration) -> (usize, String) {
    let deadline = Instant::now() + limit;
    loop {
        let out = c.salt(&["-t", "10", "held-*", "test.ping"]).unwrap();
        let answered = out.stdout.lines().filter(|l| l.trim() == "True").count();
        if answered >= n || Instant::now() > deadline {
            return (answered, out.stdout);
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Both tests load the machine on purpose (hundreds of swarm minions against a master at its
/// descriptor limit): one at a time, so that neither runs under the other's load (CI runs two
/// tests of a binary at once).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[test]
fn master_at_its_descriptor_limit_refuses_new_minions_and_serves_the_rest() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let swarm = swarm_bin();
    let c = Cluster::new(|m| {
        m.auto_accept(true)
            .set("max_open_files", i64::from(LIMIT))
            .set("loop_interval", 60u32)
    })
    .unwrap();
    // Started with a soft limit below max_open_files and a hard limit at it: the master
    // raises the soft one itself, as Salt's does.
    let conf_dir = c.master_conf().conf_dir();
    let master = ProcSpec::new("master", "prlimit", c.master_conf().dir())
        .args([format!("--nofile=200:{LIMIT}"), "--".into()])
        .args([c.bins().master.clone().into_os_string()])
        .args(["-c".into(), conf_dir.into_os_string()])
        .args(["-l", "info"])
        .spawn()
        .expect("prlimit (util-linux) is needed to start the master under a descriptor limit");
    wait_for_log(&master, MASTER_READY, Duration::from_secs(30)).unwrap();
    let log = master.output();
    assert!(
        log.contains("Current values for max open files soft/hard setting: 200/300"),
        "{log}"
    );
    assert!(log.contains("Raising max open files value to 300"), "{log}");
    assert!(
        log.contains("New values for max open files soft/hard values: 300/300"),
        "{log}"
    );

    let (publish, ret) = c.ports();
    let keys = c.root().join("swarm-keys");
    let t0 = Instant::now();
    let swarm_proc = ProcSpec::new("swarm", &swarm, c.root())
        .args(["-n", &SWARM.to_string(), "--keys", "8", "--sub-at-signin"])
        .args(["--ret-port", &ret.to_string()])
        .args(["--publish-port", &publish.to_string()])
        .args(["--minions-per-req", "10", "--retry-wait", "2"])
        .args(["--run-time", "120", "--interval", "5"])
        .args(["--key-cache".into(), keys.into_os_string()])
        .spawn()
        .unwrap();
    // The ceiling is met, and the number of accepted keys stops growing.
    wait_for_log(
        &master,
        "of the max open files soft setting (300, max_open_files)",
        Duration::from_secs(40),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", swarm_proc.tail(20)));
    let mut last = (accepted(&c), Instant::now());
    wait_until("accepted keys to settle", Duration::from_secs(20), || {
        let n = accepted(&c);
        if n != last.0 {
            last = (n, Instant::now());
        }
        last.1.elapsed() >= Duration::from_secs(3)
    })
    .unwrap();
    let admitted = accepted(&c);
    assert!(
        admitted > 20 && admitted < SWARM,
        "{admitted} keys accepted"
    );

    let out = c.salt(&["-t", "20", "*", "test.ping"]).unwrap();
    let answered = out.stdout.lines().filter(|l| l.trim() == "True").count();
    assert_eq!(
        answered, admitted,
        "every minion that got in answers:\n{}\n{}",
        out.stdout, out.stderr
    );
    eprintln!(
        "fd ceiling {LIMIT}: {admitted} of {SWARM} admitted, {answered} answered test.ping, {:.1} s",
        t0.elapsed().as_secs_f64()
    );

    let log = master.output();
    assert!(
        !log.contains("os error 24"),
        "an EMFILE reached a file read:\n{log}"
    );
    assert!(!log.contains("failed on the master side"), "{log}");
    let swarm_out = swarm_proc.output();
    assert!(swarm_out.contains("master full"), "{swarm_out}");
}

/// The master's WARNING for refused connections: (port, refused, seconds).
fn refusal_lines(log: &str) -> Vec<(String, u64, f64)> {
    log.lines()
        .filter_map(|l| {
            let rest = l.split("Too many open files: the ").nth(1)?;
            let (port, rest) = rest.split_once(" port refused ")?;
            let (n, rest) = rest.split_once(" new connections in the last ")?;
            let (secs, _) = rest.split_once(" s at the max open files soft setting")?;
            Some((port.to_owned(), n.parse().ok()?, secs.parse().ok()?))
        })
        .collect()
}

#[test]
fn master_flooded_with_connections_keeps_a_reserve_does_not_spin_and_serves_its_minions() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    const HELD: usize = 40;
    const FLOOD: usize = 400;
    let swarm = swarm_bin();
    let c = Cluster::new(|m| {
        m.auto_accept(true)
            .set("max_open_files", i64::from(LIMIT))
            .set("loop_interval", 60u32)
    })
    .unwrap();
    let conf_dir = c.master_conf().conf_dir();
    let mut master = ProcSpec::new("master", "prlimit", c.master_conf().dir())
        .args([format!("--nofile={LIMIT}:{LIMIT}"), "--".into()])
        .args([c.bins().master.clone().into_os_string()])
        .args(["-c".into(), conf_dir.into_os_string()])
        .args(["-l", "info"])
        .spawn()
        .expect("prlimit (util-linux) is needed to start the master under a descriptor limit");
    wait_for_log(&master, MASTER_READY, Duration::from_secs(30)).unwrap();
    let (publish, ret) = c.ports();
    let keys = c.root().join("swarm-keys");
    let swarm_args = |n: usize, prefix: &str| {
        vec![
            "-n".to_owned(),
            n.to_string(),
            "--keys".into(),
            "8".into(),
            "--id-prefix".into(),
            prefix.into(),
            "--ret-port".into(),
            ret.to_string(),
            "--publish-port".into(),
            publish.to_string(),
            "--minions-per-req".into(),
            "10".into(),
            "--retry-wait".into(),
            "2".into(),
            "--run-time".into(),
            "120".into(),
            "--interval".into(),
            "5".into(),
            "--key-cache".into(),
            keys.display().to_string(),
        ]
    };
    // The minions the master holds: signed in, subscribed.
    let held = ProcSpec::new("held", &swarm, c.root())
        .args(swarm_args(HELD, "held-"))
        .args(["--sub-at-signin"])
        .spawn()
        .unwrap();
    wait_until(
        "the held minions to sign in",
        Duration::from_secs(40),
        || accepted(&c) >= HELD,
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", held.tail(20)));
    let (before, before_out) = until_all_held_answer(&c, HELD, Duration::from_secs(60));

    // A flood: every one of these connects its publish socket at start, signed in or not,
    // more than the limit allows.
    let flood = ProcSpec::new("flood", &swarm, c.root())
        .args(swarm_args(FLOOD, "flood-"))
        .spawn()
        .unwrap();
    wait_for_log(&master, "port refused", Duration::from_secs(40))
        .unwrap_or_else(|e| panic!("{e}\n{}", flood.tail(20)));

    let out = c.salt(&["-t", "20", "held-*", "test.ping"]).unwrap();
    let answered = out.stdout.lines().filter(|l| l.trim() == "True").count();
    master
        .check_running()
        .unwrap_or_else(|e| panic!("the master died: {e}\n{}", master.tail(40)));
    assert_eq!(before, HELD, "{before_out}");
    assert_eq!(
        answered, HELD,
        "every minion held before the flood answers during it:\n{}\n{}",
        out.stdout, out.stderr
    );

    let log = master.output();
    let lines = refusal_lines(&log);
    assert!(!lines.is_empty(), "{log}");
    // Each refusal pauses accepting on that port for 100 ms, so a port refuses at most
    // ~10 connections a second whatever the load; a spinning listener refuses thousands.
    for (port, n, secs) in &lines {
        let rate = *n as f64 / secs.max(1.0);
        assert!(rate <= 100.0, "{port}: {n} refused in {secs} s\n{log}");
    }
    eprintln!("flood of {FLOOD} over a limit of {LIMIT}: {HELD} held minions answered; {lines:?}");
    assert!(
        !log.contains("os error 24"),
        "an EMFILE reached a file read or write:\n{log}"
    );
    assert!(!log.contains("failed on the master side"), "{log}");
}

/// A sign-in storm (issue 39 item 2): a thousand new minions all signing in at once, each
/// waiting for its answer as a Salt minion does (`auth_timeout` 5 s, then again), against a
/// master with two workers. The sign-ins queue behind the requests of the minions already
/// signed in and run on one worker of the two, so the held minions' `test.ping` returns
/// during the storm; the storm itself gets in (the master keeps signing in).
#[test]
fn sign_in_storm_does_not_stop_the_minions_already_signed_in() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    const HELD: usize = 20;
    const STORM: usize = 1000;
    let swarm = swarm_bin();
    let c = Cluster::new(|m| {
        m.auto_accept(true)
            .set("worker_threads", 2u32)
            .set("loop_interval", 60u32)
    })
    .unwrap();
    let conf_dir = c.master_conf().conf_dir();
    let mut master = ProcSpec::new("master", &c.bins().master, c.master_conf().dir())
        .args(["-c".into(), conf_dir.into_os_string()])
        .args(["-l", "info"])
        .spawn()
        .unwrap();
    wait_for_log(&master, MASTER_READY, Duration::from_secs(30)).unwrap();
    let (publish, ret) = c.ports();
    let keys = c.root().join("swarm-keys");
    let swarm_args = |n: usize, prefix: &str, concurrency: usize| {
        vec![
            "-n".to_owned(),
            n.to_string(),
            "--keys".into(),
            "8".into(),
            "--id-prefix".into(),
            prefix.into(),
            "--ret-port".into(),
            ret.to_string(),
            "--publish-port".into(),
            publish.to_string(),
            "--concurrency".into(),
            concurrency.to_string(),
            "--auth-timeout".into(),
            "5".into(),
            "--run-time".into(),
            "300".into(),
            "--interval".into(),
            "1".into(),
            "--key-cache".into(),
            keys.display().to_string(),
        ]
    };
    let held = ProcSpec::new("held", &swarm, c.root())
        .args(swarm_args(HELD, "held-", 16))
        .args(["--sub-at-signin"])
        .spawn()
        .unwrap();
    wait_until(
        "the held minions to sign in",
        Duration::from_secs(60),
        || accepted(&c) >= HELD,
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", held.tail(20)));
    let (before, before_out) = until_all_held_answer(&c, HELD, Duration::from_secs(90));
    assert_eq!(before, HELD, "{before_out}");

    let storm = ProcSpec::new("storm", &swarm, c.root())
        .args(swarm_args(STORM, "storm-", STORM))
        .args(["--exit-after-signin"])
        .spawn()
        .unwrap();
    // The storm is under way: some of it is in.
    wait_until(
        "the storm to start signing in",
        Duration::from_secs(120),
        || accepted(&c) >= HELD + 20,
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", storm.tail(20)));
    let out = c.salt(&["-t", "60", "held-*", "test.ping"]).unwrap();
    let during = out.stdout.lines().filter(|l| l.trim() == "True").count();
    let in_by_then = accepted(&c) - HELD;
    master
        .check_running()
        .unwrap_or_else(|e| panic!("the master died: {e}\n{}", master.tail(40)));
    assert_eq!(
        during, HELD,
        "every held minion answers during the storm:\n{}\n{}",
        out.stdout, out.stderr
    );
    // And the storm gets in.
    wait_until("the storm to sign in", Duration::from_secs(300), || {
        accepted(&c) >= HELD + STORM
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", storm.tail(20)));
    eprintln!("storm of {STORM}: {HELD} held minions answered with {in_by_then} of the storm in");
    assert!(!master.output().contains("failed on the master side"));
}
