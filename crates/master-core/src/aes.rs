//! The master-wide publish AES key (§6.1): fresh at every start, rotated on the dropfile and
//! every `publish_session`. Each publish takes the next `serial`; rotation resets it.

use std::sync::{Arc, Mutex};
use std::time::Instant;

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
        let crypticle = Crypticle::generate();
        let digest = hex::encode(Sha256::digest(crypticle.key_string().as_bytes()));
        let sig = master.x931_sign(digest.as_bytes())?;
        Ok(PublishKey {
            crypticle,
            sig,
            created: Instant::now(),
        })
    }
}

/// The current publish key and its serial counter.
#[derive(Debug)]
pub struct AesState {
    inner: Mutex<(Arc<PublishKey>, u64)>,
}

impl AesState {
    /// Start with `key`, serial 0.
    pub fn new(key: PublishKey) -> Self {
        AesState {
            inner: Mutex::new((Arc::new(key), 0)),
        }
    }

    /// The current key.
    pub fn current(&self) -> Arc<PublishKey> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone()
    }

    /// Install a new key; the serial starts again.
    pub fn rotate(&self, key: PublishKey) {
        *self.inner.lock().unwrap_or_else(|e| e.into_inner()) = (Arc::new(key), 0);
    }

    /// Run `f` with the current key and the next serial, holding the lock so publishes go
    /// out in serial order.
    pub fn with_next_serial<T>(&self, f: impl FnOnce(&PublishKey, u64) -> T) -> T {
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        guard.1 += 1;
        let serial = guard.1;
        f(&guard.0, serial)
    }
}
