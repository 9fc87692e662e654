//! The worker pool's queue, in two lanes: requests that may wait (the master's sign-ins, an
//! RSA private operation each) queue behind every other request (the signed-in minions'
//! returns and file-server requests), run on at most some of the workers, and are bounded
//! by count and by age, so a sign-in storm cannot stall the minions already served.
//!
//! ```text
//!  offer ─┬─ urgent (bounded: full = the socket thread stops reading) ──▶ any worker, first
//!         └─ deferred (bounded: full = the oldest dropped) ──▶ at most `max_running` workers;
//!                                        one that waited over `max_wait` is dropped unanswered
//! ```
//!
//! A dropped request is never answered: its peer's own timeout and retry bring it back (a
//! Salt minion's `auth_timeout`, 5 s by default, then another try), which costs the server
//! nothing, where any answer a Salt minion accepts costs a signature like the work itself.
//! Work for a request whose peer has stopped waiting is what turns overload into collapse.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use crate::router::Request;

/// Picks the requests that may wait, from their body.
pub type Matcher = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// Which requests may wait behind the others, and how many and how long.
#[derive(Clone)]
pub struct Deferrable {
    /// True for a request that may wait (decided on the socket thread: must be cheap and
    /// must not panic on peer input).
    pub matches: Matcher,
    /// At most this many wait; one more drops the oldest waiting (at least 1).
    pub capacity: usize,
    /// At most this many run at once (at least 1), so the other workers stay free.
    pub max_running: usize,
    /// A request that waited longer than this is dropped at its turn, unanswered.
    pub max_wait: Duration,
}

impl std::fmt::Debug for Deferrable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deferrable")
            .field("capacity", &self.capacity)
            .field("max_running", &self.max_running)
            .field("max_wait", &self.max_wait)
            .finish_non_exhaustive()
    }
}

/// Deferrable requests dropped unanswered since the bind; cheap to clone and read.
#[derive(Clone, Debug, Default)]
pub struct Dropped(Arc<DroppedCounts>);

#[derive(Debug, Default)]
struct DroppedCounts {
    full: AtomicU64,
    stale: AtomicU64,
}

impl Dropped {
    /// Dropped because the deferred lane was full (the oldest waiting made room).
    pub fn full(&self) -> u64 {
        self.0.full.load(Ordering::Relaxed)
    }

    /// Dropped at their turn because they had waited over `max_wait`.
    pub fn stale(&self) -> u64 {
        self.0.stale.load(Ordering::Relaxed)
    }
}

#[derive(Default)]
struct Queues {
    urgent: VecDeque<Request>,
    deferred: VecDeque<Request>,
    deferred_running: usize,
    closed: bool,
}

/// One request taken by a worker; `deferred` ones are handed back with [`Lanes::done`].
pub(crate) struct Taken {
    pub(crate) req: Request,
    pub(crate) deferred: bool,
}

/// The two lanes, shared by the socket thread (offer) and the workers (take).
pub(crate) struct Lanes {
    q: Mutex<Queues>,
    ready: Condvar,
    capacity: usize,
    deferrable: Option<Deferrable>,
    dropped: Dropped,
}

impl Lanes {
    pub(crate) fn new(capacity: usize, deferrable: Option<Deferrable>) -> Self {
        Self {
            q: Mutex::new(Queues::default()),
            ready: Condvar::new(),
            capacity: capacity.max(1),
            deferrable,
            dropped: Dropped::default(),
        }
    }

    pub(crate) fn dropped(&self) -> Dropped {
        self.dropped.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queues> {
        self.q.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue `req`; an urgent request is given back when its lane is full (the caller stops
    /// reading until there is room). After [`close`](Self::close) requests are dropped.
    pub(crate) fn offer(&self, req: Request) -> Result<(), Request> {
        let deferred = self
            .deferrable
            .as_ref()
            .is_some_and(|d| (d.matches)(&req.body));
        let mut q = self.lock();
        if q.closed {
            return Ok(());
        }
        if deferred {
            let cap = self.deferrable.as_ref().map_or(1, |d| d.capacity.max(1));
            if q.deferred.len() >= cap {
                q.deferred.pop_front();
                self.dropped.0.full.fetch_add(1, Ordering::Relaxed);
            }
            q.deferred.push_back(req);
        } else {
            if q.urgent.len() >= self.capacity {
                return Err(req);
            }
            q.urgent.push_back(req);
        }
        drop(q);
        self.ready.notify_one();
        Ok(())
    }

    /// The next request for a worker: urgent ones first, then a deferred one while fewer
    /// than `max_running` run. Blocks; `None` once closed.
    pub(crate) fn take(&self) -> Option<Taken> {
        let mut q = self.lock();
        loop {
            if q.closed {
                return None;
            }
            if let Some(req) = q.urgent.pop_front() {
                return Some(Taken {
                    req,
                    deferred: false,
                });
            }
            if let Some(d) = &self.deferrable
                && q.deferred_running < d.max_running.max(1)
            {
                while let Some(req) = q.deferred.pop_front() {
                    if req.received_at.elapsed() > d.max_wait {
                        self.dropped.0.stale.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    q.deferred_running += 1;
                    return Some(Taken {
                        req,
                        deferred: true,
                    });
                }
            }
            q = self.ready.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// A deferred request taken with [`take`](Self::take) is finished.
    pub(crate) fn done(&self, taken_deferred: bool) {
        if !taken_deferred {
            return;
        }
        let mut q = self.lock();
        q.deferred_running = q.deferred_running.saturating_sub(1);
        let more = !q.deferred.is_empty();
        drop(q);
        if more {
            self.ready.notify_one();
        }
    }

    /// Drop what waits and wake every worker to stop.
    pub(crate) fn close(&self) {
        let mut q = self.lock();
        q.closed = true;
        q.urgent.clear();
        q.deferred.clear();
        drop(q);
        self.ready.notify_all();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::router::PeerId;
    use std::time::Instant;

    fn req(body: &str, age: Duration) -> Request {
        Request {
            peer: PeerId::from_bytes(body.as_bytes()),
            body: body.as_bytes().to_vec(),
            received_at: Instant::now().checked_sub(age).unwrap(),
        }
    }

    fn lanes(capacity: usize, max_running: usize) -> Lanes {
        Lanes::new(
            2,
            Some(Deferrable {
                matches: Arc::new(|b: &[u8]| b.starts_with(b"auth")),
                capacity,
                max_running,
                max_wait: Duration::from_secs(5),
            }),
        )
    }

    fn body(t: &Taken) -> &str {
        std::str::from_utf8(&t.req.body).unwrap()
    }

    #[test]
    fn urgent_requests_pass_the_waiting_sign_ins() {
        let l = lanes(10, 1);
        l.offer(req("auth 1", Duration::ZERO)).ok().unwrap();
        l.offer(req("auth 2", Duration::ZERO)).ok().unwrap();
        l.offer(req("ret 1", Duration::ZERO)).ok().unwrap();
        let a = l.take().unwrap();
        assert_eq!(body(&a), "ret 1");
        let b = l.take().unwrap();
        assert_eq!((body(&b), b.deferred), ("auth 1", true));
        // One deferred runs at a time: the next urgent one still gets a worker.
        l.offer(req("ret 2", Duration::ZERO)).ok().unwrap();
        assert_eq!(body(&l.take().unwrap()), "ret 2");
        l.done(true);
        assert_eq!(body(&l.take().unwrap()), "auth 2");
    }

    #[test]
    fn a_full_urgent_lane_gives_the_request_back() {
        let l = lanes(10, 1);
        l.offer(req("ret 1", Duration::ZERO)).ok().unwrap();
        l.offer(req("ret 2", Duration::ZERO)).ok().unwrap();
        assert!(l.offer(req("ret 3", Duration::ZERO)).is_err());
        // The deferred lane is separate: a sign-in is still taken.
        assert!(l.offer(req("auth 1", Duration::ZERO)).is_ok());
    }

    #[test]
    fn a_full_deferred_lane_drops_its_oldest_and_stale_ones_are_dropped_at_their_turn() {
        let l = lanes(2, 4);
        l.offer(req("auth old", Duration::from_secs(60)))
            .ok()
            .unwrap();
        l.offer(req("auth 1", Duration::ZERO)).ok().unwrap();
        l.offer(req("auth 2", Duration::ZERO)).ok().unwrap();
        assert_eq!(l.dropped().full(), 1);
        assert_eq!(body(&l.take().unwrap()), "auth 1");
        assert_eq!(body(&l.take().unwrap()), "auth 2");

        l.offer(req("auth stale", Duration::from_secs(60)))
            .ok()
            .unwrap();
        l.offer(req("auth fresh", Duration::ZERO)).ok().unwrap();
        assert_eq!(body(&l.take().unwrap()), "auth fresh");
        assert_eq!(l.dropped().stale(), 1);
    }

    #[test]
    fn close_wakes_a_waiting_worker() {
        let l = Arc::new(lanes(2, 1));
        let w = {
            let l = Arc::clone(&l);
            std::thread::spawn(move || l.take().is_none())
        };
        std::thread::sleep(Duration::from_millis(50));
        l.close();
        assert!(w.join().unwrap());
        assert!(l.offer(req("ret", Duration::ZERO)).is_ok());
    }
}
