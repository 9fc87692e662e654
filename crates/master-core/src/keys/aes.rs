//! The master-wide publish AES key (§6.1): fresh at every start, rotated on the dropfile and
//! every `publish_session`. Each publish takes the next `serial`; rotation resets it.
//!
//! A minion drops a publish whose serial is not above the last it saw (Salt's
//! `Crypticle.loads`), so publishes go out in serial order. The order is kept by a line, not
//! by holding the lock while a publish is signed: a publish takes a [`Ticket`] (key, serial,
//! place in line), encrypts and signs with it in parallel with the others, and is sent when
//! its turn comes ([`Ticket::in_turn`]); a rotation takes a place in the same line, so every
//! publish given the old key is sent before any given the new one.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
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
    /// Signalled when the line moves ([`Keys::sent`]).
    turn: Condvar,
}

#[derive(Debug)]
struct Keys {
    current: Arc<PublishKey>,
    serial: u64,
    /// The key before the last rotation, and when it was replaced.
    previous: Option<(Arc<PublishKey>, Instant)>,
    /// The place in line the next [`Ticket`] gets.
    next: u64,
    /// Places in line done (sent, failed or given up): the ticket whose place equals this
    /// has its turn.
    sent: u64,
}

impl Keys {
    fn take_place(&mut self) -> u64 {
        self.next += 1;
        self.next - 1
    }
}

/// A publish's place in line, with the key and serial it was given ([`AesState::ticket`]).
/// Its turn passes when it is dropped — after [`Ticket::in_turn`], or unused (a failed
/// publish, a panic) — so the line never stalls.
#[must_use = "a ticket holds up the publishes behind it until it is used or dropped"]
pub struct Ticket<'a> {
    state: &'a AesState,
    place: u64,
    /// The key to encrypt and sign with.
    pub key: Arc<PublishKey>,
    /// The serial to put in the load.
    pub serial: u64,
}

impl Ticket<'_> {
    /// Wait for this ticket's turn and run `send`; the next ticket goes when this one is
    /// dropped, on return (or when `send` panics).
    pub fn in_turn<T>(self, send: impl FnOnce() -> T) -> T {
        drop(self.wait_turn());
        send()
    }

    fn wait_turn(&self) -> MutexGuard<'_, Keys> {
        let mut k = self.state.lock();
        while k.sent < self.place {
            k = self.state.turn.wait(k).unwrap_or_else(|e| e.into_inner());
        }
        k
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        self.wait_turn().sent = self.place + 1;
        self.state.turn.notify_all();
    }
}

impl AesState {
    /// Start with `key`, serial 0.
    pub fn new(key: PublishKey) -> Self {
        AesState {
            inner: Mutex::new(Keys {
                current: Arc::new(key),
                serial: 0,
                previous: None,
                next: 0,
                sent: 0,
            }),
            turn: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Keys> {
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

    /// [`rotate`](Self::rotate) with the time passed in (tests). Returns once every publish
    /// given the old key is sent.
    pub fn rotate_at(&self, key: PublishKey, now: Instant) {
        let mut k = self.lock();
        let old = std::mem::replace(&mut k.current, Arc::new(key));
        k.previous = Some((old.clone(), now));
        k.serial = 0;
        let place = k.take_place();
        drop(k);
        drop(self.ticket_at(place, old, 0));
    }

    /// The key replaced by the last rotation, if that rotation is less than `grace` before
    /// `now`: requests still encrypted with it are accepted during the window so that jobs in
    /// flight survive a rotation. A zero `grace` never returns a key.
    pub fn previous_within(&self, grace: Duration, now: Instant) -> Option<Arc<PublishKey>> {
        let k = self.lock();
        let (key, at) = k.previous.as_ref()?;
        (now.saturating_duration_since(*at) < grace).then(|| key.clone())
    }

    /// The current key, the next serial and the next place in line: encrypt and sign with
    /// them, then send in [`Ticket::in_turn`].
    pub fn ticket(&self) -> Ticket<'_> {
        let mut k = self.lock();
        k.serial += 1;
        let (key, serial) = (k.current.clone(), k.serial);
        let place = k.take_place();
        self.ticket_at(place, key, serial)
    }

    fn ticket_at(&self, place: u64, key: Arc<PublishKey>, serial: u64) -> Ticket<'_> {
        Ticket {
            state: self,
            place,
            key,
            serial,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::SeqCst;
    use std::sync::atomic::{AtomicBool, AtomicUsize};

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
        assert_eq!(state.ticket().serial, 1);
        assert_eq!(state.ticket().serial, 2);
        let t0 = Instant::now();
        state.rotate_at(key(), t0);
        let second = state.current().crypticle.key_string().to_owned();
        assert_eq!(state.ticket().serial, 1);
        state.rotate_at(key(), t0);
        let prev = state.previous_within(Duration::from_secs(60), t0).unwrap();
        assert_eq!(prev.crypticle.key_string(), second);
    }

    #[test]
    fn publishes_go_out_in_serial_order_though_signed_in_parallel() {
        let state = Arc::new(AesState::new(key()));
        let sent = Arc::new(Mutex::new(Vec::new()));
        // How many "signatures" were under way at once, at most.
        let (signing, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|sc| {
            for t in 0..4u64 {
                let (state, sent, signing, most) = (state.clone(), sent.clone(), &signing, &most);
                sc.spawn(move || {
                    for i in 0..50u64 {
                        let ticket = state.ticket();
                        let serial = ticket.serial;
                        // "Signing" takes longer for some than for those behind them.
                        most.fetch_max(signing.fetch_add(1, SeqCst) + 1, SeqCst);
                        std::thread::sleep(Duration::from_micros((t * 7 + i * 13) % 300 + 50));
                        signing.fetch_sub(1, SeqCst);
                        if i % 10 == 3 {
                            drop(ticket); // a failed publish: its place passes, unsent
                        } else {
                            ticket.in_turn(|| sent.lock().unwrap().push(serial));
                        }
                    }
                });
            }
        });
        assert!(most.load(SeqCst) > 1, "signed one at a time");
        let sent = sent.lock().unwrap();
        assert_eq!(sent.len(), 4 * 45);
        assert!(
            sent.windows(2).all(|w| w[0] < w[1]),
            "out of order: {sent:?}"
        );
    }

    #[test]
    fn a_rotation_waits_for_the_publishes_given_the_old_key() {
        let state = Arc::new(AesState::new(key()));
        let old = state.current().crypticle.key_string().to_owned();
        let ticket = state.ticket();
        let rotated = Arc::new(AtomicBool::new(false));
        std::thread::scope(|sc| {
            let (s, r) = (state.clone(), rotated.clone());
            sc.spawn(move || {
                s.rotate_at(key(), Instant::now());
                r.store(true, SeqCst);
            });
            std::thread::sleep(Duration::from_millis(50));
            assert!(!rotated.load(SeqCst));
            // Given before the rotation: the old key, and sent before the rotation returns.
            assert_eq!(ticket.key.crypticle.key_string(), old);
            ticket.in_turn(|| ());
        });
        assert!(rotated.load(SeqCst));
        let next = state.ticket();
        assert_ne!(next.key.crypticle.key_string(), old);
        assert_eq!(next.serial, 1);
    }
}
