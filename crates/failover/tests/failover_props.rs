//! Property tests: random fault schedules over three scripted masters.
//!
//! For any schedule: never two masters at once and the master list never loses a master (the
//! `Sim` checks both at every step); no livelock; and when, after the last fault, at least one
//! master is up and accepting, the minion ends up connected to a healthy master within a
//! bound.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use proptest::prelude::*;
use salt_failover::sim::{Answer, FakeMaster, Health, Sim};
use salt_failover::{EXIT_REJECTED, FailoverConfig, MasterAddr};

/// Faults happen in the first 300 s.
const FAULT_WINDOW_MS: u64 = 300_000;
/// After the last fault, a minion with a healthy accepting master must be connected within
/// this: detection (A + 1 <= 11 s) + pending waits (3 x 30 s) + two rounds of timeouts and
/// backoff (2 x (3 x 5 s + 30 s)).
const RECOVERY_BOUND: Duration = Duration::from_secs(200);

fn health() -> impl Strategy<Value = Health> {
    prop_oneof![
        3 => Just(Health::Up),
        2 => Just(Health::Exited),
        1 => Just(Health::Frozen),
        1 => Just(Health::BlackHole),
    ]
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        5 => Just(Answer::Accept),
        1 => Just(Answer::Full),
        1 => Just(Answer::Broken),
        1 => Just(Answer::Unresolvable),
        1 => Just(Answer::Reject),
    ]
}

fn master() -> impl Strategy<Value = FakeMaster> {
    (
        answer(),
        0u32..3,
        prop::collection::vec((0..FAULT_WINDOW_MS, health()), 0..6),
        prop::collection::vec(0..FAULT_WINDOW_MS, 0..3),
    )
        .prop_map(|(answer, pending, mut changes, blips)| {
            changes.sort_by_key(|c| c.0);
            let mut m = FakeMaster::new(answer).pending(pending);
            for (at, h) in changes {
                m = m.at(Duration::from_millis(at), h);
            }
            for at in blips {
                m = m.blip(Duration::from_millis(at));
            }
            m
        })
}

#[derive(Clone, Debug)]
struct Knobs {
    random_master: bool,
    failback: bool,
    rejected_retry: bool,
    alive_secs: u64,
    wait_secs: u64,
    wait_max_secs: u64,
    zmq_heartbeats: bool,
    seed: u64,
}

fn knobs() -> impl Strategy<Value = Knobs> {
    (
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.8),
        1u64..=10,
        1u64..=5,
        0u64..=30,
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(
            |(
                random_master,
                failback,
                rejected_retry,
                alive_secs,
                wait_secs,
                wait_max_secs,
                zmq_heartbeats,
                seed,
            )| Knobs {
                random_master,
                failback,
                rejected_retry,
                alive_secs,
                wait_secs,
                wait_max_secs,
                zmq_heartbeats,
                seed,
            },
        )
}

fn config(k: &Knobs) -> FailoverConfig {
    let masters = (0..3)
        .map(|i| MasterAddr::new(format!("10.0.0.{}", i + 1), 4506))
        .collect();
    FailoverConfig {
        random_master: k.random_master,
        failback: k.failback,
        rejected_retry: k.rejected_retry,
        alive_interval: Some(Duration::from_secs(k.alive_secs)),
        acceptance_wait_time: Duration::from_secs(k.wait_secs),
        acceptance_wait_time_max: Duration::from_secs(k.wait_max_secs),
        retry_dns: None,
        ..FailoverConfig::failover(masters)
    }
}

/// Health of `m` after its last scripted change.
fn final_health(m: &FakeMaster) -> Health {
    m.health.last().map_or(Health::Up, |c| c.1)
}

fn last_fault(masters: &[FakeMaster]) -> Duration {
    masters
        .iter()
        .flat_map(|m| {
            m.health
                .iter()
                .map(|c| c.0)
                .chain(m.sub_blips.iter().copied())
        })
        .max()
        .unwrap_or(Duration::ZERO)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, .. ProptestConfig::default() })]

    #[test]
    fn failover_invariants(k in knobs(), masters in prop::collection::vec(master(), 3)) {
        let t0 = last_fault(&masters);
        let good_exists = masters
            .iter()
            .any(|m| m.answer == Answer::Accept && final_health(m) == Health::Up);
        let may_exit = !k.rejected_retry && masters.iter().any(|m| m.answer == Answer::Reject);
        let mut sim = Sim::new(config(&k), masters.clone(), k.seed);
        sim.zmq_heartbeats = k.zmq_heartbeats;

        // Livelock guard: far fewer steps than simulated milliseconds.
        let end = t0 + RECOVERY_BOUND;
        sim.drive_bounded(end, 200_000).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(sim.violations.is_empty(), "{:#?}", sim.violations);

        if let Some((_, code)) = sim.exit {
            prop_assert!(may_exit, "unexpected exit {code}");
            prop_assert_eq!(code, EXIT_REJECTED);
            return Ok(());
        }
        if !good_exists {
            return Ok(());
        }
        // A failback attempt to a preferred master that answers pings but does not take us
        // may be in progress at `end`; it resolves within a round of quick answers and
        // timeouts.
        let settle = end + Duration::from_secs(20);
        while !sim.connected_to_healthy() && sim.elapsed() < settle {
            let step = sim.elapsed() + Duration::from_millis(100);
            sim.drive_bounded(step, 10_000).map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
        prop_assert!(
            sim.connected_to_healthy(),
            "not connected to a healthy master {:?} after the last fault at {:?}; phase {:?}; \
             tail of log: {:#?}",
            RECOVERY_BOUND,
            t0,
            sim.st.phase(),
            sim.logs().iter().rev().take(15).collect::<Vec<_>>()
        );
        prop_assert!(sim.violations.is_empty(), "{:#?}", sim.violations);
    }
}
