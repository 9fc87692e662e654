//! The master-wide publish AES key (§6.1): fresh at every start, rotated on the dropfile and
//! every `publish_session`. Each publish takes the next `serial`; rotation resets it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use salt_pki::{Crypticle, PrivateKey};
use sha2::{Digest, Sha256};

/// One publish key and what is derived from it once.
pub struct PublishKey {
    /// The Crypticle (its key string is the secret sent in auth replies).
    pub crypticle: Crypticle,
    /// X9.31 signature by master.pem over hex(sha256(key string)): the auth reply `sig`,
    /// the same for every sign-in until the next rotation.
    pub sig: Vec<u8>,
    /// When it was made.
    pub created: Instant,
}

impl std::fmt::Debug for PublishKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PublishKey")
            .field("created", &self.created)
            .finish_non_exhaustive()
    }
}

impl PublishKey {
    /// Generate a key and its signature.
    pub fn generate(master: &PrivateKey) -> Result<Self, salt_pki::Error> {
        Self::sign(master, Crypticle::generate())
    }

    /// The key a master group agreed on (its Crypticle key string), signed by this master.
    pub fn from_key_string(master: &PrivateKey, key: &str) -> Result<Self, salt_pki::Error> {
        Self::sign(master, Crypticle::from_key_string(key)?)
    }

    fn sign(master: &PrivateKey, crypticle: Crypticle) -> Result<Self, salt_pki::Error> {
        let digest = hex::encode(Sha256::digest(crypticle.key_string().as_bytes()));
        let sig = master.x931_sign(digest.as_bytes())?;
        Ok(PublishKey {
            crypticle,
            sig,
            created: Instant::now(),
        })
    }
}

/// The current publish key and its serial counter, plus the key it replaced (kept for the
/// grace window after a rotation, see [`AesState::previous_within`]).
#[derive(Debug)]
pub struct AesState {
    inner: Mutex<Keys>,
}

#[derive(Debug)]
struct Keys {
    current: Arc<PublishKey>,
    serial: u64,
    /// The key before the last rotation, and when it was replaced.
    previous: Option<(Arc<PublishKey>, Instant)>,
}

impl AesState {
    /// Start with `key`, serial 0.
    pub fn new(key: PublishKey) -> Self {
        AesState {
            inner: Mutex::new(Keys {
                current: Arc::new(key),
                serial: 0,
                previous: None,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Keys> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current key.
    pub fn current(&self) -> Arc<PublishKey> {
        self.lock().current.clone()
    }

    /// Install a new key; the serial starts again and the old key becomes the previous one.
    pub fn rotate(&self, key: PublishKey) {
        self.rotate_at(key, Instant::now());
    }

    /// [`rotate`](Self::rotate) with the time passed in (tests).
    pub fn rotate_at(&self, key: PublishKey, now: Instant) {
        let mut k = self.lock();
        let old = std::mem::replace(&mut k.current, Arc::new(key));
        k.previous = Some((old, now));
        k.serial = 0;
    }

    /// The key replaced by the last rotation, if that rotation is less than `grace` before
    /// `now`: requests still encrypted with it are accepted during the window so that jobs in
    /// flight survive a rotation. A zero `grace` never returns a key.
    pub fn previous_within(&self, grace: Duration, now: Instant) -> Option<Arc<PublishKey>> {
        let k = self.lock();
        let (key, at) = k.previous.as_ref()?;
        (now.saturating_duration_since(*at) < grace).then(|| key.clone())
    }

    /// Run `f` with the current key and the next serial, holding the lock so publishes go
    /// out in serial order.
    pub fn with_next_serial<T>(&self, f: impl FnOnce(&PublishKey, u64) -> T) -> T {
        let mut guard = self.lock();
        guard.serial += 1;
        let serial = guard.serial;
        f(&guard.current, serial)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn key() -> PublishKey {
        PublishKey {
            crypticle: Crypticle::generate(),
            sig: Vec::new(),
            created: Instant::now(),
        }
    }

    #[test]
    fn previous_key_is_kept_for_the_grace_window_only() {
        let state = AesState::new(key());
        let t0 = Instant::now();
        let grace = Duration::from_secs(60);
        assert!(
            state.previous_within(grace, t0).is_none(),
            "no rotation yet"
        );
        let first = state.current().crypticle.key_string().to_owned();
        state.rotate_at(key(), t0);
        let prev = state
            .previous_within(grace, t0 + Duration::from_secs(59))
            .unwrap();
        assert_eq!(prev.crypticle.key_string(), first);
        assert_ne!(state.current().crypticle.key_string(), first);
        assert!(
            state.previous_within(grace, t0 + grace).is_none(),
            "window over"
        );
        assert!(
            state.previous_within(Duration::ZERO, t0).is_none(),
            "0 = off"
        );
    }

    #[test]
    fn rotation_restarts_the_serial_and_only_one_previous_key_is_kept() {
        let state = AesState::new(key());
        assert_eq!(state.with_next_serial(|_, s| s), 1);
        assert_eq!(state.with_next_serial(|_, s| s), 2);
        let t0 = Instant::now();
        state.rotate_at(key(), t0);
        let second = state.current().crypticle.key_string().to_owned();
        assert_eq!(state.with_next_serial(|_, s| s), 1);
        state.rotate_at(key(), t0);
        let prev = state.previous_within(Duration::from_secs(60), t0).unwrap();
        assert_eq!(prev.crypticle.key_string(), second);
    }
}
