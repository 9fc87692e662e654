//! Unit tests of `FailoverState`.
use super::*;

#[test]
fn labels_disambiguate_shared_hosts() {
    let l = labels(&[
        MasterAddr::new("a", 1),
        MasterAddr::new("a", 2),
        MasterAddr::new("b", 1),
    ]);
    assert_eq!(l, ["a:1", "a:2", "b"]);
}

#[test]
fn secs_formats_like_salt() {
    assert_eq!(secs(Duration::from_secs(10)), "10");
    assert_eq!(secs(Duration::from_millis(1500)), "1.5");
}

#[test]
fn disable_stops_at_once() {
    let cfg = FailoverConfig {
        master_type: MasterType::Disable,
        masters: vec![],
        ..FailoverConfig::default()
    };
    let now = Instant::now();
    let mut st = FailoverState::new(cfg, 0, now).unwrap();
    assert_eq!(st.phase(), PhaseKind::Stopped);
    assert!(matches!(st.poll_action(), Some(Action::Log { .. })));
    assert_eq!(st.poll_action(), None);
    assert_eq!(st.poll_timeout(), None);
}

#[test]
fn alive_timing_leaves_half_the_interval_for_the_next_master() {
    let mut cfg = FailoverConfig::failover(vec![MasterAddr::new("a", 1)]);
    cfg.alive_interval = Some(Duration::from_secs(5));
    let st = FailoverState::new(cfg, 0, Instant::now()).unwrap();
    let (p, l) = st.alive_timing().unwrap();
    assert_eq!(l, Duration::from_secs(2));
    // Two checks go out within the silence window, and detection (P + L) leaves over 40%
    // of the interval for the next master.
    assert!(CHECKS_TO_LOSE * p <= l);
    assert!((p + l) * 10 <= Duration::from_secs(5) * 6);
}
