//! A master that does not answer (SIGSTOP, the lab's "freeze"): `salt` and `salt-run` give up
//! with Salt's "Salt request timed out. The master is not responding. ..." and exit 2 within
//! `-t × 3` seconds (Salt's `request_channel_tries`), also when the master freezes while a job
//! runs; `salt-key` works on the pki dir and never waits on the master. After SIGCONT the
//! master serves again. The master is thawed whatever happens (a guard), then stopped with the
//! cluster.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use salt_integration_tests::e2e_support::{Cluster, KeyDir, MINION_READY};
use salt_integration_tests::{CmdOutput, wait_for_log, wait_until};

const START: Duration = Duration::from_secs(30);

/// Salt's message (salt/client/__init__.py `LocalClient.pub`), first sentence.
const TIMED_OUT: &str = "Salt request timed out. The master is not responding. You may need to \
     run your command with `--async`";

/// Sends SIGCONT to the master's process group when dropped: a failing assertion never leaves
/// it stopped.
struct Frozen(Pid);

impl Frozen {
    fn freeze(pgid: i32) -> Self {
        let pgid = Pid::from_raw(pgid);
        killpg(pgid, Signal::SIGSTOP).expect("SIGSTOP the master");
        Self(pgid)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        let _ = killpg(self.0, Signal::SIGCONT);
    }
}

/// Gave up with Salt's message on stdout, exit 2, within `bound`.
fn timed_out(out: &CmdOutput, bound: Duration) {
    assert!(out.stdout.starts_with(TIMED_OUT), "{out:?}");
    assert_eq!(out.status.and_then(|s| s.code()), Some(2), "{out:?}");
    assert!(out.elapsed < bound, "took {:?}: {out:?}", out.elapsed);
}

#[test]
fn a_frozen_master_times_out_salt_and_salt_run_not_salt_key() {
    let mut c = Cluster::new(|m| m).unwrap();
    let pgid = c.start_master().unwrap().pid();
    let m1 = c.minion("m1").unwrap();
    c.wait_key(KeyDir::Pending, "m1", START).unwrap();
    c.accept("m1").unwrap();
    wait_for_log(&m1, MINION_READY, START).unwrap();
    let out = c.salt(&["-t", "10", "m1", "test.ping"]).unwrap();
    assert_eq!(out.stdout, "m1:\n    True\n", "{out:?}");

    // Frozen before the request: no answer to the publish within 2 s × 3.
    let frozen = Frozen::freeze(pgid);
    let out = c.salt(&["-t", "2", "*", "test.ping"]).unwrap();
    timed_out(&out, Duration::from_secs(6 + 4));
    assert!(out.elapsed >= Duration::from_secs(6), "{out:?}");
    println!("salt -t 2 on a frozen master: {:?}", out.elapsed);
    let out = c.salt_run(&["-t", "2", "jobs.list_jobs"]).unwrap();
    timed_out(&out, Duration::from_secs(6 + 4));
    println!("salt-run -t 2 on a frozen master: {:?}", out.elapsed);
    if salt_integration_tests::e2e_support::has_salt_key(&c.bins().key) {
        let t0 = Instant::now();
        let mut key = std::process::Command::new(&c.bins().key);
        key.arg("-c").arg(c.master_conf().conf_dir()).arg("-L");
        let out = salt_integration_tests::run_with_timeout(key, Duration::from_secs(30)).unwrap();
        assert!(out.success() && out.stdout.contains("m1"), "{out:?}");
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    }
    drop(frozen);
    answers_again(&c);

    // Frozen while a job runs: the job was published, the stream is quiet (the minion
    // sleeps); the next check of the master gets no answer.
    std::thread::scope(|s| {
        let job = s.spawn(|| c.salt(&["-t", "2", "m1", "cmd.run", "sleep 20"]).unwrap());
        wait_for_log(&m1, "Executing command 'sleep 20'", START).unwrap();
        let t0 = Instant::now();
        let frozen = Frozen::freeze(pgid);
        let out = job.join().unwrap();
        let after = t0.elapsed();
        drop(frozen);
        // Noticed at the next check (≤ 2 s of quiet), given 2 s × 3 to answer.
        timed_out(&out, Duration::from_secs(40));
        assert!(
            after < Duration::from_secs(2 + 6 + 4),
            "{after:?} after the freeze"
        );
        println!("salt -t 2 with the master frozen mid-job: gave up {after:?} after the freeze");
    });
    answers_again(&c);
}

/// After SIGCONT the master serves again: `m1` answers a ping (the minion may first have to
/// notice the master is back).
fn answers_again(c: &Cluster) {
    let answered = wait_until("m1 answers after the thaw", Duration::from_secs(90), || {
        c.salt(&["-t", "10", "m1", "test.ping"])
            .is_ok_and(|o| o.stdout == "m1:\n    True\n")
    });
    assert!(answered.is_ok(), "{answered:?}");
}
