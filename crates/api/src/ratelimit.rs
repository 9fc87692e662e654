//! salt-rs only (Salt's salt-api has none): a per-token rate limit, `rest_cherrypy:
//! token_rate_limit` requests per second with a burst of `token_rate_burst` (default: the
//! rate). A token bucket per session token: full at first, one request takes one token,
//! tokens come back at the rate; an empty bucket answers 429 (CherryPy's error page, as every
//! error of ours) with `Retry-After`. Only requests that named a known session are counted,
//! so the map holds at most the live sessions; buckets full again are dropped as it grows.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::StatusCode;

use crate::error::ApiError;

/// How many buckets may be kept before the full ones are dropped.
const KEEP: usize = 1024;

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The buckets of this API process (one per session token).
pub struct RateLimit {
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl std::fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimit")
            .field("rate", &self.rate)
            .field("burst", &self.burst)
            .finish_non_exhaustive()
    }
}

impl RateLimit {
    /// `rate` requests per second, `burst` at once (both at least 1).
    pub fn new(rate: u32, burst: u32) -> Self {
        Self {
            rate: f64::from(rate.max(1)),
            burst: f64::from(burst.max(1)),
            buckets: Mutex::default(),
        }
    }

    /// The limit `rest_cherrypy` asks for (`None`: no limit).
    pub fn from_options(rate: Option<u32>, burst: Option<u32>) -> Option<Self> {
        rate.map(|r| Self::new(r, burst.unwrap_or(r)))
    }

    /// One request of session `id`, now.
    ///
    /// # Errors
    /// 429 when its bucket is empty.
    pub fn take(&self, id: &str) -> Result<(), ApiError> {
        self.take_at(id, Instant::now())
            .map_err(|wait| ApiError::too_many_requests(wait.as_secs().max(1)))
    }

    /// One request of session `id` at `now`; `Err(wait)`: refused, a token comes back after
    /// `wait`.
    fn take_at(&self, id: &str, now: Instant) -> Result<(), Duration> {
        let mut map = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if map.len() >= KEEP && !map.contains_key(id) {
            let (rate, burst) = (self.rate, self.burst);
            map.retain(|_, b| {
                b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * rate < burst
            });
        }
        let b = map.entry(id.to_owned()).or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        let refill = now.saturating_duration_since(b.at).as_secs_f64() * self.rate;
        b.tokens = (b.tokens + refill).min(self.burst);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - b.tokens) / self.rate))
        }
    }
}

impl ApiError {
    /// 429, with the seconds until the next request is allowed (`Retry-After`).
    pub fn too_many_requests(retry_after: u64) -> Self {
        let mut e = Self::status(StatusCode::TOO_MANY_REQUESTS);
        e.retry_after = Some(retry_after);
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_rate() {
        let rl = RateLimit::new(2, 3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(rl.take_at("a", t0).is_ok());
        }
        let wait = rl.take_at("a", t0).unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        // Another token has its own bucket.
        assert!(rl.take_at("b", t0).is_ok());
        // Half a second later one request more, not two.
        let t1 = t0 + Duration::from_millis(500);
        assert!(rl.take_at("a", t1).is_ok());
        assert!(rl.take_at("a", t1).is_err());
        // Idle long enough: the full burst again, never more.
        let t2 = t1 + Duration::from_secs(60);
        for _ in 0..3 {
            assert!(rl.take_at("a", t2).is_ok());
        }
        assert!(rl.take_at("a", t2).is_err());
    }

    #[test]
    fn full_buckets_are_dropped_as_the_map_grows() {
        let rl = RateLimit::new(1, 1);
        let t0 = Instant::now();
        for i in 0..KEEP {
            assert!(rl.take_at(&i.to_string(), t0).is_ok());
        }
        let later = t0 + Duration::from_secs(5);
        assert!(rl.take_at("new", later).is_ok());
        let map = rl.buckets.lock().unwrap();
        assert_eq!(map.len(), 1);
    }

    #[test]
    fn off_unless_asked() {
        assert!(RateLimit::from_options(None, None).is_none());
        let rl = RateLimit::from_options(Some(5), None).unwrap();
        assert_eq!((rl.rate, rl.burst), (5.0, 5.0));
    }
}
