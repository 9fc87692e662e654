//! Replay protection: the publish `serial` check of Salt's Crypticle and a
//! bounded, time-windowed nonce memory for the master's request server.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmpv::Value;

use crate::value::{ValueExt, map_remove};

/// What [`SerialGuard::check`] decided about a decoded publish load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SerialVerdict {
    /// The load had a `serial` greater than any seen before; it was removed from
    /// the load and remembered. Process the load.
    Accepted(i128),
    /// The `serial` was not an integer. Salt's comparison would raise; drop the load.
    Invalid,
    /// The load is not a map or has no `serial` (e.g. 3007 cluster mode). Salt
    /// processes such loads.
    NoSerial,
    /// The `serial` was not greater than the last one seen: a replay. Drop the load
    /// (Salt logs it as critical and returns `{}`).
    Replayed {
        /// The serial received.
        serial: i128,
        /// The last accepted serial.
        last: i128,
    },
}

impl SerialVerdict {
    /// Whether the load should be processed.
    pub fn is_accepted(self) -> bool {
        matches!(self, Self::Accepted(_) | Self::NoSerial)
    }
}

/// The serial replay check Salt's `Crypticle.loads` applies to publish loads (§4.3,
/// §6.1): each publish carries `serial = ++counter` per master AES key, and a
/// receiver drops any serial not above the last one it accepted.
///
/// Salt keeps the last serial per Crypticle instance, i.e. per publish AES key:
/// call [`SerialGuard::reset`] whenever the minion installs a new publish key (the
/// master restarts its counter at 1 with every new key).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SerialGuard {
    last: i128,
}

impl SerialGuard {
    /// A guard that has seen nothing (last serial 0).
    pub fn new() -> Self {
        Self::default()
    }

    /// The last accepted serial (0 initially).
    pub fn last(&self) -> i128 {
        self.last
    }

    /// Forgets the serials seen (a new publish key was installed).
    pub fn reset(&mut self) {
        self.last = 0;
    }

    /// Checks and consumes the `serial` of a decoded publish load, exactly as Salt:
    /// the key is popped from the map whatever the verdict.
    pub fn check(&mut self, load: &mut Value) -> SerialVerdict {
        let Some(serial) = map_remove(load, "serial") else {
            return SerialVerdict::NoSerial;
        };
        let serial = match &serial {
            Value::Integer(i) => match (i.as_i64(), i.as_u64()) {
                (Some(s), _) => i128::from(s),
                (None, Some(u)) => i128::from(u),
                (None, None) => return SerialVerdict::Invalid,
            },
            Value::Boolean(b) => i128::from(*b),
            _ => return SerialVerdict::Invalid,
        };
        if serial <= self.last {
            return SerialVerdict::Replayed {
                serial,
                last: self.last,
            };
        }
        self.last = serial;
        SerialVerdict::Accepted(serial)
    }
}

/// What [`ReplayGuard::check`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayVerdict {
    /// First time this nonce was seen within the window; it is now remembered.
    Fresh,
    /// The nonce was already seen within the window: refuse the request.
    Replayed,
}

/// Remembers request nonces for a time window so a master can refuse a replayed AES
/// request (same ciphertext sent again). Python Salt does not do this itself; it is
/// an optional hardening for the Rust master.
///
/// Memory is bounded: at most `capacity` nonces are kept. Entries older than
/// `window` are forgotten on every call; when the guard is full the oldest entry is
/// evicted early (counted in [`ReplayGuard::evicted`]), so size the capacity above
/// the expected request rate times the window. Pair it with a `ts` freshness check
/// no wider than the window, so a nonce that has been forgotten is also too old to
/// be accepted.
///
/// Time is passed in (`now`), never read from the clock; `now` values must not go
/// backwards (an earlier `now` is treated as equal to the latest seen).
#[derive(Debug)]
pub struct ReplayGuard {
    window: Duration,
    capacity: usize,
    seen: HashSet<Arc<str>>,
    order: VecDeque<(Instant, Arc<str>)>,
    latest: Option<Instant>,
    evicted: u64,
}

impl ReplayGuard {
    /// A guard remembering nonces for `window`, at most `capacity` of them
    /// (a capacity of 0 is raised to 1).
    pub fn new(window: Duration, capacity: usize) -> Self {
        Self {
            window,
            capacity: capacity.max(1),
            seen: HashSet::new(),
            order: VecDeque::new(),
            latest: None,
            evicted: 0,
        }
    }

    /// Checks `nonce` at time `now` and remembers it if fresh.
    pub fn check(&mut self, nonce: &str, now: Instant) -> ReplayVerdict {
        let now = match self.latest {
            Some(l) if l > now => l,
            _ => now,
        };
        self.latest = Some(now);
        self.expire(now);
        if self.seen.contains(nonce) {
            return ReplayVerdict::Replayed;
        }
        while self.order.len() >= self.capacity {
            if let Some((_, old)) = self.order.pop_front() {
                self.seen.remove(&old);
                self.evicted = self.evicted.saturating_add(1);
            } else {
                break;
            }
        }
        let key: Arc<str> = Arc::from(nonce);
        self.seen.insert(Arc::clone(&key));
        self.order.push_back((now, key));
        ReplayVerdict::Fresh
    }

    /// Forgets entries older than the window at `now`.
    pub fn expire(&mut self, now: Instant) {
        while let Some((t, _)) = self.order.front() {
            if now.saturating_duration_since(*t) <= self.window {
                break;
            }
            if let Some((_, old)) = self.order.pop_front() {
                self.seen.remove(&old);
            }
        }
    }

    /// Number of nonces currently remembered.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether no nonce is remembered.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Number of nonces evicted before their window ended because the guard was full.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }
}

/// Helper for request servers: is the load's `ts` within `ttl` seconds of `now_unix`
/// (seconds since the epoch)? Mirrors Salt's `request_server_ttl` check
/// (`now - ts > ttl` rejects); a missing or non-integer `ts` is not fresh.
pub fn ts_is_fresh(load: &Value, now_unix: i64, ttl: i64) -> bool {
    load.get("ts")
        .and_then(Value::as_i64)
        .is_some_and(|ts| now_unix.saturating_sub(ts) <= ttl)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::map;

    #[test]
    fn serial_guard_follows_crypticle() {
        let mut g = SerialGuard::new();
        let mut load = map([
            ("fun", Value::from("test.ping")),
            ("serial", Value::from(1)),
        ]);
        assert_eq!(g.check(&mut load), SerialVerdict::Accepted(1));
        assert_eq!(load, map([("fun", Value::from("test.ping"))]));
        let mut again = map([("serial", Value::from(1))]);
        assert_eq!(
            g.check(&mut again),
            SerialVerdict::Replayed { serial: 1, last: 1 }
        );
        assert_eq!(again, map([]));
        let mut next = map([("serial", Value::from(5))]);
        assert_eq!(g.check(&mut next), SerialVerdict::Accepted(5));
        let mut older = map([("serial", Value::from(3))]);
        assert!(!g.check(&mut older).is_accepted());
        let mut none = map([("fun", Value::Nil)]);
        assert_eq!(g.check(&mut none), SerialVerdict::NoSerial);
        assert_eq!(g.check(&mut Value::Nil), SerialVerdict::NoSerial);
        let mut bad = map([("serial", Value::from("7"))]);
        assert_eq!(g.check(&mut bad), SerialVerdict::Invalid);
        g.reset();
        let mut one = map([("serial", Value::from(1))]);
        assert!(g.check(&mut one).is_accepted());
        let mut big = map([("serial", Value::from(u64::MAX))]);
        assert_eq!(
            g.check(&mut big),
            SerialVerdict::Accepted(i128::from(u64::MAX))
        );
    }

    #[test]
    fn replay_guard_window_and_capacity() {
        #[allow(clippy::disallowed_methods)] // any instant will do as the origin
        let t0 = Instant::now();
        let mut g = ReplayGuard::new(Duration::from_secs(60), 3);
        assert_eq!(g.check("a", t0), ReplayVerdict::Fresh);
        assert_eq!(
            g.check("a", t0 + Duration::from_secs(1)),
            ReplayVerdict::Replayed
        );
        assert_eq!(
            g.check("b", t0 + Duration::from_secs(2)),
            ReplayVerdict::Fresh
        );
        // After the window "a" is forgotten.
        assert_eq!(
            g.check("a", t0 + Duration::from_secs(61)),
            ReplayVerdict::Fresh
        );
        assert_eq!(g.len(), 2);
        // A clock going backwards is clamped.
        assert_eq!(g.check("b", t0), ReplayVerdict::Replayed);
        // Capacity bound: oldest evicted.
        assert_eq!(
            g.check("c", t0 + Duration::from_secs(62)),
            ReplayVerdict::Fresh
        );
        assert_eq!(
            g.check("d", t0 + Duration::from_secs(62)),
            ReplayVerdict::Fresh
        );
        assert_eq!(g.len(), 3);
        assert_eq!(g.evicted(), 1);
        assert_eq!(
            g.check("b", t0 + Duration::from_secs(62)),
            ReplayVerdict::Fresh
        );
        g.expire(t0 + Duration::from_secs(1000));
        assert!(g.is_empty());
    }

    #[test]
    fn ts_freshness() {
        let load = map([("ts", Value::from(1000))]);
        assert!(ts_is_fresh(&load, 1010, 10));
        assert!(!ts_is_fresh(&load, 1011, 10));
        assert!(!ts_is_fresh(&map([]), 1000, 10));
    }
}
