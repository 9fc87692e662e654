//! The opt-in Prometheus endpoints (issue 8, item 4), scraped over plain HTTP: off by
//! default; with `metrics_port` the master serves `GET /metrics` on 127.0.0.1 and its
//! counters move with a sign-in, a publish and its return; the minion's shows its master,
//! failovers by cause and alive-check round trips.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use salt_integration_tests::e2e_support::{Cluster, KeyDir, MINION_READY};
use salt_integration_tests::{free_port_pair, wait_for_log};

const START: Duration = Duration::from_secs(40);

fn get(port: u16, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The value of the sample line starting with `name` (`name{labels} value`).
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn scrape_shows_signins_publishes_and_returns() {
    let (port, _) = free_port_pair().unwrap();
    let mut c = Cluster::new(|m| m.set("metrics_port", i64::from(port))).unwrap();
    c.start_master().unwrap();
    wait_for_log(
        c.master().unwrap(),
        "Serving Prometheus metrics on http://127.0.0.1:",
        START,
    )
    .unwrap();
    let first = get(port, "/metrics");
    assert!(first.starts_with("HTTP/1.1 200 OK"), "{first}");
    assert!(first.contains("application/openmetrics-text"), "{first}");
    assert!(first.trim_end().ends_with("# EOF"), "{first}");
    assert!(get(port, "/nope").starts_with("HTTP/1.1 404"));

    let m = c.minion("mx1").unwrap();
    c.wait_key(KeyDir::Pending, "mx1", START).unwrap();
    c.accept("mx1").unwrap();
    wait_for_log(&m, MINION_READY, START).unwrap();
    let out = c.salt(&["-t", "20", "mx1", "test.ping"]).unwrap();
    assert!(out.stdout.contains("True"), "{}", out.stdout);

    let text = get(port, "/metrics");
    assert!(
        sample(&text, "salt_master_signins_total{kind=\"pending\"}").unwrap() >= 1.0,
        "{text}"
    );
    assert!(
        sample(&text, "salt_master_signins_total{kind=\"accepted\"}").unwrap() >= 1.0,
        "{text}"
    );
    assert!(
        sample(&text, "salt_master_publishes_total").unwrap() >= 1.0,
        "{text}"
    );
    assert!(
        sample(&text, "salt_master_returns_total").unwrap() >= 1.0,
        "{text}"
    );
    assert_eq!(
        sample(&text, "salt_master_minions_signed_in"),
        Some(1.0),
        "{text}"
    );
    assert!(
        sample(&text, "salt_master_request_duration_seconds_count").unwrap() >= 2.0,
        "{text}"
    );
}

#[test]
fn minion_scrape_shows_its_master_failovers_and_alive_round_trips() {
    let mut c = Cluster::new(|m| m).unwrap();
    c.start_master().unwrap();
    let (port, _) = free_port_pair().unwrap();
    let conf = c
        .minion_conf("mx2")
        .set("metrics_port", i64::from(port))
        .set("master_alive_interval", 1u32);
    let m = c.spawn_minion(&conf).unwrap();
    c.wait_key(KeyDir::Pending, "mx2", START).unwrap();
    c.accept("mx2").unwrap();
    wait_for_log(&m, MINION_READY, START).unwrap();
    let ret = c.ports().1;
    let mut text = String::new();
    salt_integration_tests::wait_until("an alive check in the metrics", START, || {
        text = get(port, "/metrics");
        sample(&text, "salt_minion_alive_check_seconds_count").is_some_and(|n| n >= 1.0)
    })
    .unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert_eq!(
        sample(
            &text,
            &format!("salt_minion_master{{master=\"127.0.0.1:{ret}\"}}")
        ),
        Some(1.0),
        "{text}"
    );
    for kind in ["publish_channel_down", "alive_check_failed", "failback"] {
        assert_eq!(
            sample(
                &text,
                &format!("salt_minion_failovers_total{{kind=\"{kind}\"}}")
            ),
            Some(0.0),
            "{text}"
        );
    }
}

#[test]
fn no_endpoint_without_metrics_port() {
    let mut c = Cluster::new(|m| m).unwrap();
    c.start_master().unwrap();
    assert!(
        !c.master().unwrap().output().contains("Prometheus"),
        "metrics are opt-in"
    );
}
