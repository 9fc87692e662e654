//! The minion's Prometheus metrics (opt-in: `metrics_port` in the minion config): the
//! master in use, how often the minion left a master and why, and the round-trip time of
//! its alive checks (`master_alive_interval`), encoded with `prometheus-client`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use salt_failover::LeaveCause;

/// `{master="host:port"}`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MasterLabel {
    /// The master's address.
    pub master: String,
}

/// `{kind="..."}`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    /// The cause.
    pub kind: String,
}

/// Every metric of the minion.
#[derive(Debug)]
pub struct MinionMetrics {
    registry: Registry,
    /// `salt_minion_master{master}`: 1 for the master in use, 0 for the others seen.
    pub master: Family<MasterLabel, Gauge>,
    /// `salt_minion_failovers_total{kind}`: times the minion left a master, by cause.
    pub failovers: Family<KindLabel, Counter>,
    /// `salt_minion_alive_check_seconds`: round trip of each successful alive check.
    pub alive_rtt: Histogram,
    seen: [AtomicU64; 3],
}

impl Default for MinionMetrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("salt_minion");
        let master = Family::<MasterLabel, Gauge>::default();
        registry.register(
            "master",
            "1 for the master in use (label master), 0 for the others",
            master.clone(),
        );
        let failovers = Family::<KindLabel, Counter>::default();
        registry.register(
            "failovers",
            "Times the minion left a master, by cause (label kind)",
            failovers.clone(),
        );
        let alive_rtt = Histogram::new(exponential_buckets(0.000_25, 4.0, 8));
        registry.register(
            "alive_check_seconds",
            "Round trip of the alive checks to the current master",
            alive_rtt.clone(),
        );
        MinionMetrics {
            registry,
            master,
            failovers,
            alive_rtt,
            seen: Default::default(),
        }
    }
}

impl MinionMetrics {
    /// The minion now uses `current` (all other known masters go to 0).
    pub fn set_master(&self, current: &str, all: &[String]) {
        for m in all {
            let v = i64::from(m == current);
            self.master
                .get_or_create(&MasterLabel { master: m.clone() })
                .set(v);
        }
    }

    /// Bring the failover counters up to the state machine's totals.
    pub fn sync_failovers(&self, counts: &[(LeaveCause, u64); 3]) {
        for (i, (cause, n)) in counts.iter().enumerate() {
            let Some(seen) = self.seen.get(i) else {
                continue;
            };
            let before = seen.swap(*n, Ordering::Relaxed);
            let c = self.failovers.get_or_create(&KindLabel {
                kind: cause.as_str().to_owned(),
            });
            if *n > before {
                c.inc_by(*n - before);
            }
        }
    }

    /// Record one alive-check round trip.
    pub fn alive(&self, rtt: Duration) {
        self.alive_rtt.observe(rtt.as_secs_f64());
    }

    /// The OpenMetrics text.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn master_failovers_and_rtt_in_the_text() {
        let m = MinionMetrics::default();
        let all = vec!["10.0.0.1:4506".to_owned(), "10.0.0.2:4506".to_owned()];
        m.set_master("10.0.0.2:4506", &all);
        let counts = [
            (LeaveCause::PublishChannelDown, 0),
            (LeaveCause::AliveCheckFailed, 2),
            (LeaveCause::Failback, 1),
        ];
        m.sync_failovers(&counts);
        m.sync_failovers(&counts); // idempotent
        m.alive(Duration::from_millis(3));
        let t = m.encode();
        assert!(
            t.contains("salt_minion_master{master=\"10.0.0.2:4506\"} 1"),
            "{t}"
        );
        assert!(
            t.contains("salt_minion_master{master=\"10.0.0.1:4506\"} 0"),
            "{t}"
        );
        assert!(
            t.contains("salt_minion_failovers_total{kind=\"alive_check_failed\"} 2"),
            "{t}"
        );
        assert!(
            t.contains("salt_minion_failovers_total{kind=\"failback\"} 1"),
            "{t}"
        );
        assert!(t.contains("salt_minion_alive_check_seconds_count 1"), "{t}");
    }
}
