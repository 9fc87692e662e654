//! The master's Prometheus metrics (opt-in: `metrics_port`, bound to `metrics_host`,
//! 127.0.0.1 by default): sign-ins by outcome, AES rotations by cause, publishes, returns,
//! request latency, and the minions signed in during this run. Encoded with the
//! `prometheus-client` crate (OpenMetrics text); the `salt-master` binary serves
//! [`Scrape`] with `salt_daemon::metrics_http` (this crate serves no HTTP).

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// A label set with one label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Label {
    /// `outcome` (sign-ins) or `cause` (rotations), as the metric's help text says.
    pub kind: String,
}

/// Every metric of the master, cheap to update from any thread.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// `salt_master_signins_total{kind}`: accepted, pending, rejected, denied, full,
    /// refused (bad id/key), error; dropped_full, dropped_stale (unanswered under
    /// overload, `server/signin_lane.rs`).
    pub signins: Family<Label, Counter>,
    /// `salt_master_limit_hits_total{kind}`: new minions refused at a limit, by limit
    /// (`max_open_files`, `max_minions`).
    pub limit_hits: Family<Label, Counter>,
    /// `salt_master_refused_connections_total{kind}`: TCP connections refused at the
    /// descriptor limit, by port (`publish`, `request`).
    pub refused_connections: Family<Label, Counter>,
    /// `salt_master_aes_rotations_total{kind}`: dropfile, publish_session.
    pub rotations: Family<Label, Counter>,
    /// `salt_master_publishes_total`.
    pub publishes: Counter,
    /// `salt_master_returns_total`.
    pub returns: Counter,
    /// `salt_master_request_duration_seconds`: request handling time on the worker pool.
    pub request_seconds: Histogram,
    /// `salt_master_minions_signed_in`: ids signed in during this run (`max_minions` count).
    pub signed_in: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("salt_master");
        let signins = Family::<Label, Counter>::default();
        registry.register(
            "signins",
            "Sign-in requests by outcome (label kind)",
            signins.clone(),
        );
        let limit_hits = Family::<Label, Counter>::default();
        registry.register(
            "limit_hits",
            "New minions refused at a limit, by limit (label kind: max_open_files, max_minions)",
            limit_hits.clone(),
        );
        let refused_connections = Family::<Label, Counter>::default();
        registry.register(
            "refused_connections",
            "TCP connections refused at the max open files soft limit, by port (label kind: \
             publish, request)",
            refused_connections.clone(),
        );
        let rotations = Family::<Label, Counter>::default();
        registry.register(
            "aes_rotations",
            "AES publish key rotations by cause (label kind)",
            rotations.clone(),
        );
        let publishes = Counter::default();
        registry.register("publishes", "Jobs published", publishes.clone());
        let returns = Counter::default();
        registry.register("returns", "Job returns received", returns.clone());
        let request_seconds = Histogram::new(exponential_buckets(0.000_1, 4.0, 9));
        registry.register(
            "request_duration_seconds",
            "Time to handle one request on the worker pool",
            request_seconds.clone(),
        );
        let signed_in = Gauge::default();
        registry.register(
            "minions_signed_in",
            "Minions signed in during this run",
            signed_in.clone(),
        );
        Metrics {
            registry,
            signins,
            limit_hits,
            refused_connections,
            rotations,
            publishes,
            returns,
            request_seconds,
            signed_in,
        }
    }
}

impl Metrics {
    /// Count one sign-in with `outcome`.
    pub fn signin(&self, outcome: &str) {
        self.signins
            .get_or_create(&Label {
                kind: outcome.to_owned(),
            })
            .inc();
    }

    /// Count `n` sign-ins dropped unanswered (`outcome`: `dropped_full`, `dropped_stale`).
    pub fn signins_dropped(&self, outcome: &str, n: u64) {
        self.signins
            .get_or_create(&Label {
                kind: outcome.to_owned(),
            })
            .inc_by(n);
    }

    /// Count one new minion refused at `limit`.
    pub fn limit_hit(&self, limit: &str) {
        self.limit_hits
            .get_or_create(&Label {
                kind: limit.to_owned(),
            })
            .inc();
    }

    /// Count `n` connections refused on `port` at the descriptor limit.
    pub fn refused(&self, port: &str, n: u64) {
        self.refused_connections
            .get_or_create(&Label {
                kind: port.to_owned(),
            })
            .inc_by(n);
    }

    /// Count one rotation for `cause`.
    pub fn rotation(&self, cause: &str) {
        self.rotations
            .get_or_create(&Label {
                kind: cause.to_owned(),
            })
            .inc();
    }

    /// Record one request's handling time.
    pub fn request(&self, took: Duration) {
        self.request_seconds.observe(took.as_secs_f64());
    }

    /// The OpenMetrics text of every metric.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// What a scrape answers: `refresh` (to update gauges) then the OpenMetrics text. Cheap to
/// clone; handed to the binary in [`crate::Ready`].
#[derive(Clone)]
pub struct Scrape(Arc<dyn Fn() -> String + Send + Sync>);

impl Scrape {
    /// The text of `metrics`, with `refresh` run before each scrape.
    pub fn new(metrics: Arc<Metrics>, refresh: impl Fn(&Metrics) + Send + Sync + 'static) -> Self {
        Self(Arc::new(move || {
            refresh(&metrics);
            metrics.encode()
        }))
    }

    /// The OpenMetrics text now.
    pub fn render(&self) -> String {
        (self.0)()
    }
}

impl std::fmt::Debug for Scrape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scrape")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_show_in_the_text() {
        let m = Metrics::default();
        m.signin("accepted");
        m.signin("accepted");
        m.signin("pending");
        m.rotation("dropfile");
        m.refused("publish", 3);
        m.publishes.inc();
        m.request(Duration::from_millis(2));
        let t = m.encode();
        assert!(
            t.contains("salt_master_signins_total{kind=\"accepted\"} 2"),
            "{t}"
        );
        assert!(
            t.contains("salt_master_signins_total{kind=\"pending\"} 1"),
            "{t}"
        );
        assert!(
            t.contains("salt_master_aes_rotations_total{kind=\"dropfile\"} 1"),
            "{t}"
        );
        assert!(
            t.contains("salt_master_refused_connections_total{kind=\"publish\"} 3"),
            "{t}"
        );
        assert!(t.contains("salt_master_publishes_total 1"), "{t}");
        assert!(
            t.contains("salt_master_request_duration_seconds_count 1"),
            "{t}"
        );
        assert!(t.ends_with("# EOF\n"), "{t}");
    }
}
