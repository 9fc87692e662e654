//! When to re-authenticate after the master rotated its AES publish key (sans-IO: time is
//! passed in, randomness is seeded).
//!
//! Every connected minion learns of a rotation at the same instant: from the first publish
//! that no longer decrypts. A Python minion re-authenticates at once, so 1,000 minions hit
//! the master's RSA workers in the same second and the slow ones time out and retry — the
//! sign-in stampede of Salt's #25447, #35158 and #64035. Ours waits a random delay drawn
//! uniformly from `[0, window]` first, holding the publish, then signs in again and decodes
//! it once. `window` is `random_reauth_delay` (Salt's option; Salt itself uses it only
//! when a syndic or a restarting minion reconnects) capped at [`MAX_SPREAD`], so that the
//! job which revealed the rotation is still answered inside `salt`'s default 5 s timeout.
//! `random_reauth_delay: 0` restores Salt's immediate re-auth.
//!
//! Requests are unaffected by the rotation (they use the per-minion session key, and the
//! master also honours the previous publish key for `aes_rotation_grace`), so returns of
//! jobs in flight are not lost while the minion waits.

use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Upper bound of the spread, whatever `random_reauth_delay` says.
pub const MAX_SPREAD: Duration = Duration::from_secs(2);

/// The re-auth scheduler of one minion.
#[derive(Debug)]
pub struct ReauthSpread {
    window: Duration,
    rng: StdRng,
    due: Option<Instant>,
}

impl ReauthSpread {
    /// A scheduler spreading over `min(random_reauth_delay, MAX_SPREAD)`, seeded with `seed`.
    pub fn new(random_reauth_delay: Duration, seed: u64) -> Self {
        ReauthSpread {
            window: random_reauth_delay.min(MAX_SPREAD),
            rng: StdRng::seed_from_u64(seed),
            due: None,
        }
    }

    /// The spread window in use.
    pub fn window(&self) -> Duration {
        self.window
    }

    /// A publish did not decrypt at `now` (stale key): schedule a re-auth unless one is
    /// scheduled already. Returns the delay chosen, `None` when one was pending.
    pub fn handle_stale_key(&mut self, now: Instant) -> Option<Duration> {
        if self.due.is_some() {
            return None;
        }
        let delay = if self.window.is_zero() {
            Duration::ZERO
        } else {
            self.window.mul_f64(self.rng.gen_range(0.0..=1.0))
        };
        self.due = Some(now + delay);
        Some(delay)
    }

    /// When [`handle_timeout`](Self::handle_timeout) must be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.due
    }

    /// True (once) when the scheduled re-auth is due at `now`: the caller signs in again.
    pub fn handle_timeout(&mut self, now: Instant) -> bool {
        match self.due {
            Some(t) if t <= now => {
                self.due = None;
                true
            }
            _ => false,
        }
    }

    /// Forget a scheduled re-auth (the connection to that master is gone).
    pub fn cancel(&mut self) {
        self.due = None;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[allow(clippy::disallowed_methods)] // a test's epoch: only differences are used
mod tests {
    use super::*;

    #[test]
    fn one_reauth_per_rotation_after_its_delay() {
        let t0 = Instant::now();
        let mut r = ReauthSpread::new(Duration::from_secs(10), 7);
        assert_eq!(r.window(), MAX_SPREAD, "capped");
        assert_eq!(r.poll_timeout(), None);
        let d = r.handle_stale_key(t0).unwrap();
        assert!(d <= MAX_SPREAD);
        assert_eq!(r.poll_timeout(), Some(t0 + d));
        // More stale publishes while waiting: nothing new scheduled.
        assert_eq!(r.handle_stale_key(t0 + Duration::from_millis(1)), None);
        assert_eq!(r.poll_timeout(), Some(t0 + d));
        if !d.is_zero() {
            assert!(
                !r.handle_timeout(t0 + d - Duration::from_nanos(1)),
                "not yet"
            );
        }
        assert!(r.handle_timeout(t0 + d));
        assert!(!r.handle_timeout(t0 + d), "fires once");
        assert_eq!(r.poll_timeout(), None);
        // The next rotation schedules again.
        assert!(r.handle_stale_key(t0 + Duration::from_secs(5)).is_some());
        r.cancel();
        assert_eq!(r.poll_timeout(), None);
    }

    #[test]
    fn a_fleet_spreads_over_the_window() {
        let t0 = Instant::now();
        let delays: Vec<Duration> = (0..1000u64)
            .map(|seed| {
                ReauthSpread::new(Duration::from_secs(10), seed)
                    .handle_stale_key(t0)
                    .unwrap()
            })
            .collect();
        assert!(delays.iter().all(|d| *d <= MAX_SPREAD));
        // 1,000 minions over 2 s: every quarter of the window gets a fair share (expected
        // 250 each), so at most ~1/4 of the fleet signs in during any half second.
        let mut quarters = [0usize; 4];
        for d in &delays {
            let q = (d.as_secs_f64() / MAX_SPREAD.as_secs_f64() * 4.0) as usize;
            quarters[q.min(3)] += 1;
        }
        assert!(
            quarters.iter().all(|n| (180..=320).contains(n)),
            "{quarters:?}"
        );
    }

    #[test]
    fn zero_delay_is_salts_immediate_reauth_and_seeds_are_deterministic() {
        let t0 = Instant::now();
        let mut r = ReauthSpread::new(Duration::ZERO, 1);
        assert_eq!(r.handle_stale_key(t0), Some(Duration::ZERO));
        assert!(r.handle_timeout(t0));
        let a = ReauthSpread::new(Duration::from_secs(1), 42).handle_stale_key(t0);
        let b = ReauthSpread::new(Duration::from_secs(1), 42).handle_stale_key(t0);
        assert_eq!(a, b);
        assert_eq!(
            ReauthSpread::new(Duration::from_millis(500), 3).window(),
            Duration::from_millis(500)
        );
    }
}
