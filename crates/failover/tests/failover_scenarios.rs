//! Scenario tests for `FailoverState`, run on the deterministic `Sim` (fake clock, scripted
//! masters). Each test states the Salt behaviour it checks.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use salt_failover::sim::{Answer, FakeMaster, Health, Sim};
use salt_failover::{
    Action, EXIT_REJECTED, EXIT_UNRESOLVABLE, FailoverConfig, MasterAddr, MasterType, PhaseKind,
};

const fn s(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn addrs(n: usize) -> Vec<MasterAddr> {
    (0..n)
        .map(|i| MasterAddr::new(format!("172.16.0.{}", 10 + i), 4506))
        .collect()
}

/// The tutorial's setup: failover over three masters, alive interval 5 s, fast waits.
fn failover_cfg(n: usize) -> FailoverConfig {
    FailoverConfig {
        alive_interval: Some(s(5)),
        acceptance_wait_time: s(1),
        retry_dns: None,
        ..FailoverConfig::failover(addrs(n))
    }
}

fn single_cfg() -> FailoverConfig {
    FailoverConfig {
        masters: addrs(1),
        master_type: MasterType::Str,
        alive_interval: Some(s(5)),
        acceptance_wait_time: s(1),
        auth_tries: 2,
        ..FailoverConfig::default()
    }
}

fn assert_clean(sim: &Sim) {
    assert!(sim.violations.is_empty(), "{:#?}", sim.violations);
}

/// Positions of `lines` in `sim`'s log, which must appear in this order.
fn assert_in_order(sim: &Sim, from: Duration, lines: &[&str]) {
    let logs = sim.logs();
    let mut i = 0;
    for want in lines {
        let found = logs[i..]
            .iter()
            .position(|(at, _, m)| *at >= from && m == want)
            .unwrap_or_else(|| panic!("missing {want:?} (in order) in {:#?}", &logs[i..]));
        i += found + 1;
    }
}

#[test]
fn ordered_failover_logs_the_tutorial_lines() {
    let masters = vec![
        FakeMaster::accept().at(s(30), Health::Exited),
        FakeMaster::accept(),
        FakeMaster::accept(),
    ];
    let mut sim = Sim::new(failover_cfg(3), masters, 1);
    sim.run_until(s(60)).unwrap();
    assert_clean(&sim);
    let conns = sim.connections();
    assert_eq!(conns.len(), 2, "{conns:?}");
    assert_eq!(conns[0].1, 0);
    assert!(conns[0].0 < s(1));
    assert_eq!(conns[1].1, 1);
    assert_in_order(
        &sim,
        s(30),
        &[
            "Connection to master 172.16.0.10 lost",
            "Trying to tune in to next master from master-list",
            "Removing possibly failed master 172.16.0.10 from list of masters",
            "Master ip address changed from 172.16.0.10 to 172.16.0.11",
            "Attempting to authenticate with the Salt Master at 172.16.0.11",
            "Authentication with master successful!",
        ],
    );
    assert_eq!(sim.st.master_order(), &[1, 2, 0]);
    assert_eq!(sim.st.current_master(), Some(1));
    // The first sign-in goes to the first master, not the second.
    assert_eq!(sim.sign_ins, vec![1, 1, 0]);
}

#[test]
fn exit_is_detected_from_the_sub_disconnect() {
    for a in [1, 2, 5, 10, 30] {
        let mut cfg = failover_cfg(2);
        cfg.alive_interval = Some(s(a));
        let masters = vec![
            FakeMaster::accept().at(s(100) + ms(123), Health::Exited),
            FakeMaster::accept(),
        ];
        let mut sim = Sim::new(cfg, masters, 1);
        sim.run_until(s(200)).unwrap();
        assert_clean(&sim);
        let lost = sim
            .first_log_after(s(100), "Connection to master 172.16.0.10 lost")
            .unwrap();
        let detect = lost - (s(100) + ms(123));
        assert!(detect <= s(a) + s(1), "A={a}: detected after {detect:?}");
        // The SUB disconnect plus a refused confirming check: no timeout involved at all,
        // so well within a second whatever the interval.
        assert!(detect <= ms(50), "A={a}: detected after {detect:?}");
        assert_eq!(sim.st.current_master(), Some(1));
    }
}

/// Frozen (SIGSTOP) and black-holed masters send no RST and the Sim models no ZeroMQ
/// heartbeat: only the alive checks can notice. Sweep the fault instant across a whole check
/// period to hit the worst case.
#[test]
fn freeze_and_black_hole_are_detected_within_half_the_alive_interval() {
    for health in [Health::Frozen, Health::BlackHole] {
        for a in [1u64, 3, 5, 10] {
            let mut worst = Duration::ZERO;
            for k in 0..40u64 {
                let fault = s(60) + Duration::from_millis(k * a * 1000 / 40);
                let mut cfg = failover_cfg(2);
                cfg.alive_interval = Some(s(a));
                let masters = vec![FakeMaster::accept().at(fault, health), FakeMaster::accept()];
                let mut sim = Sim::new(cfg, masters, 7);
                sim.run_until(s(120)).unwrap();
                assert_clean(&sim);
                let lost = sim
                    .first_log_after(s(60), "Connection to master 172.16.0.10 lost")
                    .unwrap_or_else(|| panic!("{health:?} A={a} k={k}: never detected"));
                assert!(lost >= fault, "false positive before the fault");
                worst = worst.max(lost - fault);
                assert_eq!(sim.st.current_master(), Some(1));
                assert_eq!(
                    sim.st.leave_counts()[1],
                    (salt_failover::LeaveCause::AliveCheckFailed, 1),
                    "counted for metrics"
                );
            }
            // Detection within P + L = A/6 + 0.4 A, leaving over 40% of the interval for
            // the next master's sign-in (docs/failover.md, "Detection time argument").
            assert!(
                worst <= s(a) / 6 + s(a) * 4 / 10 + ms(10),
                "{health:?} A={a}: worst detection {worst:?}"
            );
            // And it is not trivially fast either: a check must go unanswered for L.
            assert!(worst >= s(a) * 4 / 10, "{health:?} A={a}: worst {worst:?}");
        }
    }
}

#[test]
fn zmq_heartbeats_catch_a_black_hole_too() {
    let masters = vec![
        FakeMaster::accept().at(s(30), Health::BlackHole),
        FakeMaster::accept(),
    ];
    let mut sim = Sim::new(failover_cfg(2), masters, 1);
    sim.zmq_heartbeats = true;
    sim.run_until(s(60)).unwrap();
    let lost = sim.first_log_after(s(30), "lost").unwrap();
    assert!(lost - s(30) <= s(6));
    assert_eq!(sim.st.current_master(), Some(1));
}

/// Salt #66497: "connection lost" after each alive interval on a healthy master. Here the
/// SUB connection blips (disconnect + reconnect 100 ms later) while the master is fine: the
/// confirming alive check answers and nothing happens.
#[test]
fn no_false_positive_on_a_healthy_master() {
    let master = FakeMaster::accept()
        .blip(s(10))
        .blip(s(20) + ms(300))
        .blip(s(21))
        .blip(s(400));
    let mut sim = Sim::new(failover_cfg(2), vec![master, FakeMaster::accept()], 3);
    sim.run_until(s(600)).unwrap();
    assert_clean(&sim);
    assert!(
        sim.first_log_after(s(0), "lost").is_none(),
        "{:#?}",
        sim.logs()
    );
    assert_eq!(
        sim.count(s(0), s(600), |a| matches!(a, Action::Disconnect { .. })),
        0
    );
    assert_eq!(sim.connections().len(), 1);
    assert_eq!(sim.st.current_master(), Some(0));
    // Alive checks every A/6 = 0.83 s over ten minutes (plus a few confirmations).
    let checks = sim.count(s(0), s(600), |a| matches!(a, Action::SendAliveCheck { .. }));
    assert!((715..=730).contains(&checks), "{checks} alive checks");
}

#[test]
fn shuffle_is_deterministic_by_seed() {
    let run = |seed| {
        let cfg = FailoverConfig {
            random_master: true,
            ..failover_cfg(5)
        };
        let masters = (0..5).map(|_| FakeMaster::accept()).collect();
        let mut sim = Sim::new(cfg, masters, seed);
        sim.run_until(s(1)).unwrap();
        let first = sim.connections()[0].1;
        let order = sim.st.master_order().to_vec();
        assert_eq!(
            order[0], first,
            "the first master of the shuffled order is tried first"
        );
        order
    };
    assert_eq!(run(42), run(42));
    let distinct: std::collections::HashSet<_> = (0..20).map(run).collect();
    assert!(distinct.len() > 5, "shuffle looks constant: {distinct:?}");
}

#[test]
fn reshuffle_after_loss_keeps_the_lost_master_last() {
    for seed in 0..20 {
        let cfg = FailoverConfig {
            random_master: true,
            ..failover_cfg(4)
        };
        let masters: Vec<_> = (0..4)
            .map(|_| FakeMaster::accept().at(s(30), Health::Exited))
            .collect();
        let mut sim = Sim::new(cfg, masters, seed);
        sim.run_until(s(29)).unwrap();
        let first = sim.st.current_master().unwrap();
        sim.run_until(s(33)).unwrap();
        assert!(sim.first_log_after(s(30), "lost").is_some());
        assert_eq!(*sim.st.master_order().last().unwrap(), first);
    }
}

#[test]
fn failback_after_the_interval_once_the_preferred_master_answers() {
    let cfg = FailoverConfig {
        failback: true,
        failback_interval: Some(s(10)),
        ..failover_cfg(2)
    };
    let masters = vec![
        FakeMaster::accept()
            .at(s(5), Health::Exited)
            .at(s(40), Health::Up),
        FakeMaster::accept(),
    ];
    let mut sim = Sim::new(cfg, masters, 1);
    sim.run_until(s(80)).unwrap();
    assert_clean(&sim);
    let conns = sim.connections();
    assert_eq!(conns.iter().map(|c| c.1).collect::<Vec<_>>(), vec![0, 1, 0]);
    let left = sim.st.leave_counts();
    assert_eq!(left[2].1, 1, "one failback: {left:?}");
    assert_eq!(left[0].1 + left[1].1, 1, "one loss: {left:?}");
    let on_secondary = conns[1].0;
    // Failback pings start one interval after the switch, and repeat every interval.
    let pings: Vec<Duration> = sim
        .trace
        .iter()
        .filter(|r| matches!(r.action, Action::SendFailbackPing { idx: 0, .. }))
        .map(|r| r.at)
        .collect();
    assert!(pings[0] >= on_secondary + s(10) && pings[0] < on_secondary + s(10) + ms(50));
    for w in pings.windows(2) {
        assert!(w[1] - w[0] >= s(10), "{pings:?}");
    }
    // Back on the preferred master within one interval of it coming back, not before.
    assert!(
        conns[2].0 >= s(40) && conns[2].0 <= s(50) + ms(100),
        "{conns:?}"
    );
    assert!(
        sim.first_log_after(s(40), "answered the failback ping")
            .is_some()
    );
    assert_eq!(sim.st.master_order()[0], 0);
    // No failback pings while on the preferred master.
    assert_eq!(
        sim.count(conns[2].0 + ms(100), s(80), |a| matches!(
            a,
            Action::SendFailbackPing { .. }
        )),
        0
    );
}

#[test]
fn failback_interval_defaults_to_alive_interval() {
    let cfg = FailoverConfig {
        failback: true,
        ..failover_cfg(2)
    };
    let masters = vec![
        FakeMaster::accept().at(s(5), Health::Exited),
        FakeMaster::accept(),
    ];
    let sim = Sim::new(cfg, masters, 1);
    assert_eq!(sim.st.config().failback_interval, Some(s(5)));
}

#[test]
fn all_full_backs_off_and_never_spins() {
    let cfg = FailoverConfig {
        acceptance_wait_time: s(10),
        acceptance_wait_time_max: s(80),
        ..failover_cfg(3)
    };
    let masters = (0..3).map(|_| FakeMaster::new(Answer::Full)).collect();
    let mut sim = Sim::new(cfg, masters, 1);
    sim.drive_bounded(s(3600), 20_000).unwrap();
    assert_clean(&sim);
    assert_eq!(sim.st.phase(), PhaseKind::BackingOff);
    let line = "No master could be reached or all masters are full or rejected us (unreachable: \
                0, full: 3, rejected: 0, unresolvable: 0); retrying in 10 seconds";
    assert!(sim.info_lines().contains(&line), "{:#?}", sim.info_lines());
    // Waits double: 10, 20, 40, 80, 80, ... so rounds start at about 0, 10, 30, 70, 150, 230.
    let rounds: Vec<Duration> = sim
        .trace
        .iter()
        .filter(|r| matches!(r.action, Action::SignIn { idx: 0, .. }))
        .map(|r| r.at)
        .collect();
    let secs: Vec<u64> = rounds.iter().take(6).map(|d| d.as_secs()).collect();
    assert_eq!(secs, vec![0, 10, 30, 70, 150, 230]);
    for minute in 0..60 {
        let n = sim.count(s(minute * 60), s(minute * 60 + 60), |a| {
            matches!(a, Action::SignIn { .. })
        });
        assert!(n <= 3 * 6, "minute {minute}: {n} sign-ins");
    }
}

#[test]
fn zero_acceptance_wait_still_backs_off() {
    let cfg = FailoverConfig {
        acceptance_wait_time: Duration::ZERO,
        ..failover_cfg(3)
    };
    let masters = (0..3).map(|_| FakeMaster::new(Answer::Full)).collect();
    let mut sim = Sim::new(cfg, masters, 1);
    sim.drive_bounded(s(600), 20_000).unwrap();
    let n = sim.count(s(0), s(60), |a| matches!(a, Action::SignIn { .. }));
    assert!(n <= 3 * 61, "{n} sign-ins in a minute");
}

#[test]
fn dead_masters_time_out_in_turn_then_back_off() {
    let cfg = FailoverConfig {
        master_tries: 2,
        ..failover_cfg(3)
    };
    let masters = (0..3)
        .map(|_| FakeMaster::accept().at(Duration::ZERO, Health::Exited))
        .collect();
    let mut sim = Sim::new(cfg, masters, 1);
    sim.run_until(s(60)).unwrap();
    assert_clean(&sim);
    assert_in_order(
        &sim,
        s(0),
        &[
            "Master 172.16.0.10 could not be reached, trying next master (if any)",
            "Master 172.16.0.11 could not be reached, trying next master (if any)",
            "Master 172.16.0.12 could not be reached, trying next master (if any)",
            "No master could be reached or all masters are full or rejected us (unreachable: 3, \
             full: 0, rejected: 0, unresolvable: 0); retrying in 1 seconds",
            "No master could be reached or all masters are full or rejected us (unreachable: 3, \
             full: 0, rejected: 0, unresolvable: 0); retrying in 1 seconds",
            "No master could be reached or all masters denied the minion's connection attempt.",
        ],
    );
}

#[test]
fn pending_keeps_the_master() {
    let cfg = FailoverConfig {
        acceptance_wait_time: s(10),
        acceptance_wait_time_max: s(60),
        ..failover_cfg(2)
    };
    let masters = vec![FakeMaster::accept().pending(3), FakeMaster::accept()];
    let mut sim = Sim::new(cfg, masters, 1);
    sim.run_until(s(200)).unwrap();
    assert_clean(&sim);
    assert_eq!(sim.sign_ins, vec![4, 0], "never moves to the second master");
    let tries: Vec<u64> = sim
        .trace
        .iter()
        .filter(|r| matches!(r.action, Action::SignIn { .. }))
        .map(|r| r.at.as_secs())
        .collect();
    // Waits 10, 20, 40 (doubling up to acceptance_wait_time_max), each after a 10 ms answer.
    assert_eq!(tries, vec![0, 10, 30, 70]);
    assert_eq!(sim.connections(), vec![(s(70) + ms(40), 0)]);
    assert!(sim.info_lines().contains(
        &"The Salt Master has cached the public key for this node, this salt minion will wait \
          for 10 seconds before attempting to re-authenticate"
    ));
}

#[test]
fn rejected_exits_77_after_salts_delay() {
    for seed in 0..10 {
        let masters = vec![FakeMaster::new(Answer::Reject), FakeMaster::accept()];
        let mut sim = Sim::new(failover_cfg(2), masters, seed);
        sim.run_until(s(60)).unwrap();
        assert_clean(&sim);
        let (at, code) = sim.exit.unwrap();
        assert_eq!(code, EXIT_REJECTED);
        assert!(at >= s(10) && at <= s(20) + ms(20), "{at:?}");
        assert_eq!(sim.sign_ins, vec![1, 0]);
        assert_eq!(sim.st.phase(), PhaseKind::Stopped);
        assert!(
            sim.info_lines()
                .iter()
                .any(|l| l.starts_with("The Salt Master has rejected this minion's public key!"))
        );
    }
}

#[test]
fn rejected_retry_moves_on_in_failover_mode() {
    let cfg = FailoverConfig {
        rejected_retry: true,
        ..failover_cfg(2)
    };
    let masters = vec![FakeMaster::new(Answer::Reject), FakeMaster::accept()];
    let mut sim = Sim::new(cfg, masters, 1);
    sim.run_until(s(60)).unwrap();
    assert_clean(&sim);
    assert!(sim.exit.is_none());
    assert_eq!(sim.st.current_master(), Some(1));
}

#[test]
fn rejected_retry_waits_on_a_single_master() {
    let cfg = FailoverConfig {
        rejected_retry: true,
        acceptance_wait_time: s(10),
        ..single_cfg()
    };
    let mut sim = Sim::new(cfg, vec![FakeMaster::new(Answer::Reject)], 1);
    sim.run_until(s(100)).unwrap();
    assert!(sim.exit.is_none());
    assert_eq!(sim.st.phase(), PhaseKind::AwaitingAcceptance);
    // 10 s apart (acceptance_wait_time_max 0 = no growth): 0, 10, ..., 90.
    assert_eq!(sim.sign_ins, vec![10]);
}

#[test]
fn single_master_logs_lost_and_re_established() {
    let master = FakeMaster::accept()
        .at(s(30), Health::Exited)
        .at(s(60), Health::Up);
    let mut sim = Sim::new(single_cfg(), vec![master], 1);
    sim.run_until(s(120)).unwrap();
    assert_clean(&sim);
    let lost = sim
        .first_log_after(s(30), "Connection to master 172.16.0.10 lost")
        .unwrap();
    assert!(lost - s(30) <= s(6));
    let back = sim
        .first_log_after(s(30), "Connection to master 172.16.0.10 re-established")
        .unwrap();
    assert!(back >= s(60) && back <= s(60) + s(10), "{back:?}");
    assert_eq!(sim.connections().len(), 2);
    assert!(sim.first_log_after(s(0), "Trying to tune in").is_none());
    assert!(
        sim.first_log_after(s(0), "Master ip address changed")
            .is_none()
    );
    assert_eq!(sim.st.current_master(), Some(0));
}

#[test]
fn single_master_freeze_is_logged_too() {
    let master = FakeMaster::accept()
        .at(s(30), Health::Frozen)
        .at(s(45), Health::Up);
    let mut sim = Sim::new(single_cfg(), vec![master], 1);
    sim.run_until(s(120)).unwrap();
    let lost = sim.first_log_after(s(30), "lost").unwrap();
    assert!(lost - s(30) <= s(6));
    assert!(sim.first_log_after(lost, "re-established").is_some());
}

#[test]
fn single_master_auth_tries_then_backoff() {
    let master = FakeMaster::accept().at(Duration::ZERO, Health::Frozen);
    let mut sim = Sim::new(single_cfg(), vec![master], 1);
    sim.run_until(s(11)).unwrap();
    // auth_tries 2: two attempts of auth_timeout (5 s) back to back, then a 1 s backoff.
    let tries: Vec<u64> = sim
        .trace
        .iter()
        .filter(|r| matches!(r.action, Action::SignIn { .. }))
        .map(|r| r.at.as_secs())
        .collect();
    assert_eq!(tries, vec![0, 5, 11]);
}

/// In failover mode a master whose port refuses connections fails each sign-in at once
/// (fail-fast client), but the minion still never spins: one round over the list, then at
/// least 1 s of backoff.
#[test]
fn refused_sign_ins_back_off_and_never_spin() {
    let masters = vec![
        FakeMaster::accept().at(Duration::ZERO, Health::Exited),
        FakeMaster::accept().at(Duration::ZERO, Health::Exited),
    ];
    let mut sim = Sim::new(failover_cfg(2), masters, 1);
    sim.drive_bounded(s(60), 10_000).unwrap();
    let tries = sim.count(s(6), s(60), |a| matches!(a, Action::SignIn { .. }));
    assert!(tries <= 2 * 54 + 2, "{tries} sign-ins in 54 s");
    assert!(tries >= 2, "still trying: {tries}");
}

#[test]
fn unresolvable_master_is_skipped_in_failover_mode() {
    let masters = vec![FakeMaster::new(Answer::Unresolvable), FakeMaster::accept()];
    let mut sim = Sim::new(failover_cfg(2), masters, 1);
    sim.run_until(s(5)).unwrap();
    assert_eq!(sim.st.current_master(), Some(1));
    assert!(
        sim.info_lines()
            .contains(&"Master 172.16.0.10 could not be resolved, trying next master (if any)")
    );
}

#[test]
fn unresolvable_single_master_exits_42_or_retries_dns() {
    let cfg = FailoverConfig {
        retry_dns: None,
        ..single_cfg()
    };
    let mut sim = Sim::new(cfg, vec![FakeMaster::new(Answer::Unresolvable)], 1);
    sim.run_until(s(5)).unwrap();
    assert_eq!(sim.exit.map(|e| e.1), Some(EXIT_UNRESOLVABLE));

    let cfg = FailoverConfig {
        retry_dns: Some(s(30)),
        ..single_cfg()
    };
    let mut sim = Sim::new(cfg, vec![FakeMaster::new(Answer::Unresolvable)], 1);
    sim.run_until(s(100)).unwrap();
    assert!(sim.exit.is_none());
    assert_eq!(sim.sign_ins, vec![4]);
    assert!(sim.info_lines().contains(
        &"Master hostname: '172.16.0.10' not found or not responsive. Retrying in 30 seconds"
    ));
}

#[test]
fn failover_forces_salts_settings() {
    let cfg = FailoverConfig {
        retry_dns: Some(s(30)),
        auth_tries: 7,
        ..FailoverConfig::failover(addrs(2))
    };
    let sim = Sim::new(cfg, vec![FakeMaster::accept(), FakeMaster::accept()], 1);
    assert_eq!(sim.st.config().auth_tries, 1);
    assert_eq!(sim.st.config().retry_dns, None);
}

#[test]
fn flapping_master_does_not_strand_the_minion() {
    let mut m0 = FakeMaster::accept();
    for k in 0..20 {
        m0 = m0
            .at(s(20 + k * 10), Health::Exited)
            .at(s(25 + k * 10), Health::Up);
    }
    let masters = vec![m0, FakeMaster::accept(), FakeMaster::new(Answer::Full)];
    let cfg = FailoverConfig {
        failback: true,
        ..failover_cfg(3)
    };
    let mut sim = Sim::new(cfg, masters, 9);
    sim.drive_bounded(s(400), 50_000).unwrap();
    assert_clean(&sim);
    assert!(sim.connected_to_healthy());
}

#[test]
fn close_disconnects_and_stops() {
    let mut sim = Sim::new(
        failover_cfg(2),
        vec![FakeMaster::accept(), FakeMaster::accept()],
        1,
    );
    sim.run_until(s(3)).unwrap();
    let now = sim.now;
    sim.st.close(now);
    assert_eq!(sim.st.poll_action(), Some(Action::Disconnect { idx: 0 }));
    assert_eq!(sim.st.poll_timeout(), None);
    assert_eq!(sim.st.current_master(), None);
}

#[test]
fn broken_master_is_skipped() {
    let masters = vec![FakeMaster::new(Answer::Broken), FakeMaster::accept()];
    let mut sim = Sim::new(failover_cfg(2), masters, 1);
    sim.run_until(s(2)).unwrap();
    assert_eq!(sim.st.current_master(), Some(1));
}

/// A preferred master that answers pings but is full would make a naive failback hop back
/// and forth every interval; each failed failback doubles the interval instead.
#[test]
fn failback_to_a_full_preferred_master_backs_off() {
    let cfg = FailoverConfig {
        failback: true,
        failback_interval: Some(s(10)),
        ..failover_cfg(2)
    };
    let masters = vec![FakeMaster::new(Answer::Full), FakeMaster::accept()];
    let mut sim = Sim::new(cfg, masters, 1);
    sim.run_until(s(400)).unwrap();
    assert_clean(&sim);
    let pings: Vec<u64> = sim
        .trace
        .iter()
        .filter(|r| matches!(r.action, Action::SendFailbackPing { .. }))
        .map(|r| r.at.as_secs())
        .collect();
    // 10 s, then 20, 40, 80, 160 (capped at 16x) after each failed failback.
    assert_eq!(pings, vec![10, 30, 70, 150, 310]);
    assert_eq!(sim.st.current_master(), Some(1));
    assert!(
        sim.first_log_after(s(0), "Failback to master 172.16.0.10 did not succeed")
            .is_some()
    );
}

/// Without `master_alive_interval`, a SUB disconnect is still confirmed by one alive check
/// (timeout `auth_timeout`), and there are no periodic checks.
#[test]
fn without_alive_interval_only_confirmed_sub_disconnects_count() {
    let cfg = FailoverConfig {
        alive_interval: None,
        ..failover_cfg(2)
    };
    let masters = vec![
        FakeMaster::accept().blip(s(10)).at(s(30), Health::Exited),
        FakeMaster::accept(),
    ];
    let mut sim = Sim::new(cfg, masters, 1);
    sim.run_until(s(60)).unwrap();
    assert_clean(&sim);
    // One confirmation for the blip, one for the exit.
    assert_eq!(
        sim.count(s(0), s(60), |a| matches!(a, Action::SendAliveCheck { .. })),
        2
    );
    let lost = sim
        .first_log_after(s(0), "Connection to master 172.16.0.10 lost")
        .unwrap();
    assert!(lost > s(30) && lost <= s(30) + s(5) + ms(50), "{lost:?}");
    assert_eq!(sim.st.current_master(), Some(1));
}

/// A healthy master on a loaded machine: every answer takes 1.8 s (round trip), longer than a
/// third of the interval (the old per-check timeout), shorter than the silence window (0.4 A).
/// With SUB blips on top, the minion still never leaves it.
#[test]
fn slow_but_healthy_master_is_never_left() {
    let master = FakeMaster::accept().blip(s(30)).blip(s(200) + ms(700));
    let mut sim = Sim::new(failover_cfg(2), vec![master, FakeMaster::accept()], 5);
    sim.latency = ms(900);
    sim.run_until(s(600)).unwrap();
    assert_clean(&sim);
    assert!(
        sim.first_log_after(s(0), "lost").is_none(),
        "{:#?}",
        sim.logs()
    );
    assert_eq!(sim.st.current_master(), Some(0));
}

/// The retry line names the master's port and why the attempt failed.
#[test]
fn auth_retry_line_names_the_port_and_the_reason() {
    let master = FakeMaster::accept().at(s(0), Health::BlackHole);
    let mut sim = Sim::new(single_cfg(), vec![master], 1);
    sim.run_until(s(120)).unwrap();
    let want = "Attempt to authenticate with the salt master 172.16.0.10:4506 failed (try 1 of 2): \
                no answer within";
    assert!(
        sim.first_log_after(s(0), want).is_some(),
        "{:#?}",
        sim.logs()
    );
    assert!(
        sim.first_log_after(s(0), "port 4506 reachable?").is_some(),
        "{:#?}",
        sim.logs()
    );
}

/// Issue #15, shape 2: the SUB reports a disconnect a few milliseconds after its handshake
/// (cause not found: not reproduced at the transport level, `crates/transport/tests/
/// sub_stability.rs`), on a master that answers slowly (1.8 s round trips, more than the
/// former `A/3` check timeout of 1.67 s at `A` = 5, which made this a loss 1.7 s after
/// joining). Wherever the drop falls in the first 4 s (sign-in answered at 1.8 s), every 5 ms,
/// the minion keeps its master: the confirming check is answered within `0.4·A`.
#[test]
fn a_sub_drop_right_after_joining_a_slow_healthy_master_is_not_a_loss() {
    for k in 0..800u64 {
        let at = ms(5 * k);
        let master = FakeMaster::accept().blip(at);
        let mut sim = Sim::new(failover_cfg(2), vec![master, FakeMaster::accept()], k);
        sim.latency = ms(900); // one way: 1.8 s round trips
        sim.run_until(s(30)).unwrap();
        assert_clean(&sim);
        assert!(
            sim.first_log_after(s(0), "lost").is_none(),
            "blip at {at:?}: {:#?}",
            sim.logs()
        );
        assert_eq!(sim.connections().len(), 1, "blip at {at:?}");
        assert_eq!(sim.st.current_master(), Some(0), "blip at {at:?}");
    }
}
