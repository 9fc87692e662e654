//! The request server with its own worker pool: a ROUTER whose requests go straight from
//! the socket thread to a fixed set of OS threads, each of which runs the handler and queues
//! the reply back to the socket thread.
//!
//! ```text
//!  ROUTER thread ──bounded queue──▶ worker 1..n: handler(body) ──reply + doorbell──▶ ROUTER
//! ```
//!
//! One hand-off each way per request: no async task, semaphore or blocking-pool hop. With
//! [`PoolServer::bind_inline`] cheap requests take none: an [`Inline`] handler tried on the
//! socket thread first answers them there (its reply is sent at once) and declines the rest,
//! which go to the pool. The queue is bounded (`ServerOptions::queue_capacity`); when it is full the socket thread
//! stops reading, so backpressure reaches libzmq's queues and then the peers, as with
//! [`RouterServer::bind`]. With [`PoolServer::bind_with`] requests a [`Deferrable`] matches
//! (the master's sign-ins) wait in a lane of their own behind all others, bounded by count
//! and age, on at most some of the workers (`lanes.rs`). Replies of one wake-up are sent in
//! one batch (the doorbell coalesces rings).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::lanes::{Deferrable, Dropped, Lanes};
use crate::router::{Intake, Offered, RouterServer};
use crate::{ServerOptions, TransportError};

/// A request handler: request body in, reply body out. Called on the pool's threads,
/// several at once; must not panic on peer input (a panic is caught, logged, and the
/// request goes unanswered, as a crashed Salt worker's would).
pub type Handler = Arc<dyn Fn(&[u8]) -> Vec<u8> + Send + Sync>;

/// A handler tried on the socket thread before the pool: `Some(reply)` answers the request
/// at once, `None` hands it to the pool's [`Handler`]. It must be quick (it holds up every
/// other peer's reads and replies while it runs) and decline anything that could block or
/// take long; like [`Handler`], it must not panic on peer input (a panic is caught, logged,
/// and the request goes to the pool).
pub type Inline = Arc<dyn Fn(&[u8]) -> Option<Vec<u8>> + Send + Sync>;

struct PoolIntake {
    lanes: Arc<Lanes>,
    inline: Option<Inline>,
    handled: Arc<AtomicUsize>,
}

impl Intake for PoolIntake {
    fn offer(&self, req: crate::router::Request) -> Offered {
        if let Some(inline) = &self.inline {
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inline(&req.body))) {
                Ok(Some(reply)) => {
                    self.handled.fetch_add(1, Ordering::Relaxed);
                    return Offered::Answered(req.peer, reply);
                }
                Ok(None) => {}
                Err(_) => tracing::error!(peer = ?req.peer, "inline request handler panicked"),
            }
        }
        match self.lanes.offer(req) {
            Ok(()) => Offered::Taken,
            Err(req) => Offered::Full(req),
        }
    }
}

/// How many handlers are running, so shutdown can wait for them.
#[derive(Default)]
struct InFlight {
    n: Mutex<usize>,
    idle: Condvar,
}

/// A bound ROUTER served by `threads` worker threads running one [`Handler`].
///
/// [`close`](Self::close) (or drop) stops taking requests, lets the handlers that are
/// running finish and their replies go out, then closes the socket.
pub struct PoolServer {
    router: RouterServer,
    lanes: Arc<Lanes>,
    stopping: Arc<AtomicBool>,
    in_flight: Arc<InFlight>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    handled: Arc<AtomicUsize>,
}

impl std::fmt::Debug for PoolServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolServer")
            .field("endpoint", &self.router.endpoint())
            .finish_non_exhaustive()
    }
}

impl PoolServer {
    /// Bind a ROUTER on `endpoint` (options as [`RouterServer::bind`]) and start `threads`
    /// workers (at least one) running `handler`.
    pub fn bind(
        endpoint: &str,
        opts: &ServerOptions,
        threads: usize,
        handler: Handler,
    ) -> Result<Self, TransportError> {
        Self::bind_inline(endpoint, opts, threads, handler, None)
    }

    /// [`bind`](Self::bind) with an [`Inline`] handler that answers cheap requests on the
    /// socket thread (no hand-off to a worker and back) and declines the others.
    pub fn bind_inline(
        endpoint: &str,
        opts: &ServerOptions,
        threads: usize,
        handler: Handler,
        inline: Option<Inline>,
    ) -> Result<Self, TransportError> {
        Self::bind_with(endpoint, opts, threads, handler, inline, None)
    }

    /// [`bind_inline`](Self::bind_inline) with a [`Deferrable`] lane: the requests it
    /// matches wait behind all others (see `lanes.rs`).
    pub fn bind_with(
        endpoint: &str,
        opts: &ServerOptions,
        threads: usize,
        handler: Handler,
        inline: Option<Inline>,
        deferrable: Option<Deferrable>,
    ) -> Result<Self, TransportError> {
        let lanes = Arc::new(Lanes::new(opts.queue_capacity, deferrable));
        let handled = Arc::new(AtomicUsize::new(0));
        let intake = PoolIntake {
            lanes: Arc::clone(&lanes),
            inline,
            handled: Arc::clone(&handled),
        };
        let router = RouterServer::bind_to(endpoint, opts, intake)?;
        let stopping = Arc::new(AtomicBool::new(false));
        let in_flight = Arc::new(InFlight::default());
        let mut workers = Vec::new();
        for i in 0..threads.max(1) {
            let ctx = WorkerCtx {
                lanes: Arc::clone(&lanes),
                replier: router.replier(),
                handler: Arc::clone(&handler),
                stopping: Arc::clone(&stopping),
                in_flight: Arc::clone(&in_flight),
                handled: Arc::clone(&handled),
            };
            let spawned = thread::Builder::new()
                .name(format!("salt-worker-{i}"))
                .spawn(move || ctx.run());
            match spawned {
                Ok(j) => workers.push(j),
                Err(e) => {
                    let pool = Self {
                        router,
                        lanes,
                        stopping,
                        in_flight,
                        workers: Mutex::new(workers),
                        handled,
                    };
                    pool.close(Duration::ZERO);
                    return Err(e.into());
                }
            }
        }
        Ok(Self {
            router,
            lanes,
            stopping,
            in_flight,
            workers: Mutex::new(workers),
            handled,
        })
    }

    /// Deferrable requests dropped unanswered so far ([`Deferrable`]).
    pub fn dropped(&self) -> Dropped {
        self.lanes.dropped()
    }

    /// The bound endpoint with the real port.
    pub fn endpoint(&self) -> &str {
        self.router.endpoint()
    }

    /// Connections refused since the bind ([`RouterServer::refused_connections`]).
    pub fn refused_connections(&self) -> crate::RefusedConnections {
        self.router.refused_connections()
    }

    /// Requests answered so far.
    pub fn handled(&self) -> usize {
        self.handled.load(Ordering::Relaxed)
    }

    /// Stop taking requests (queued ones are dropped, as libzmq drops them when the socket
    /// closes), wait up to `grace` for running handlers, then close the socket (lingering for
    /// unsent replies). Returns false if handlers were still running after `grace`.
    /// Blocks; idempotent.
    pub fn close(&self, grace: Duration) -> bool {
        self.stopping.store(true, Ordering::Release);
        let workers =
            std::mem::take(&mut *self.workers.lock().unwrap_or_else(PoisonError::into_inner));
        // Drop what waits and wake every worker blocked on the queue: they stop.
        self.lanes.close();
        let deadline = Instant::now() + grace;
        let mut n = self
            .in_flight
            .n
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut done = true;
        while *n > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                done = false;
                break;
            }
            n = self
                .in_flight
                .idle
                .wait_timeout(n, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        drop(n);
        if done {
            for w in workers {
                let _ = w.join();
            }
        }
        self.router.close();
        done
    }
}

impl Drop for PoolServer {
    fn drop(&mut self) {
        self.close(Duration::from_secs(10));
    }
}

struct WorkerCtx {
    lanes: Arc<Lanes>,
    replier: crate::Replier,
    handler: Handler,
    stopping: Arc<AtomicBool>,
    in_flight: Arc<InFlight>,
    handled: Arc<AtomicUsize>,
}

impl WorkerCtx {
    fn run(self) {
        while let Some(taken) = self.lanes.take() {
            let deferred = taken.deferred;
            let req = taken.req;
            if self.stopping.load(Ordering::Acquire) {
                self.lanes.done(deferred);
                continue;
            }
            *self
                .in_flight
                .n
                .lock()
                .unwrap_or_else(PoisonError::into_inner) += 1;
            let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                (self.handler)(&req.body)
            }));
            match reply {
                Ok(reply) => {
                    // Counted before the reply leaves: a peer holding its reply sees it.
                    self.handled.fetch_add(1, Ordering::Relaxed);
                    let _ = self.replier.reply(req.peer, reply);
                }
                Err(_) => tracing::error!(peer = ?req.peer, "request handler panicked"),
            }
            self.lanes.done(deferred);
            let mut n = self
                .in_flight
                .n
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            *n -= 1;
            if *n == 0 {
                self.in_flight.idle.notify_all();
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn opts() -> ServerOptions {
        ServerOptions {
            heartbeat: None,
            linger: Duration::from_millis(100),
            ..ServerOptions::default()
        }
    }

    /// Every request of several REQ peers gets its own reply, from several workers.
    #[test]
    fn pool_answers_each_peer() {
        let handler: Handler = Arc::new(|b: &[u8]| {
            let mut r = b"re:".to_vec();
            r.extend_from_slice(b);
            r
        });
        let pool = PoolServer::bind("tcp://127.0.0.1:*", &opts(), 3, handler).unwrap();
        let ctx = zmq::Context::new();
        let peers: Vec<_> = (0..4)
            .map(|_| {
                let s = ctx.socket(zmq::REQ).unwrap();
                s.set_linger(0).unwrap();
                s.set_rcvtimeo(10_000).unwrap();
                s.connect(pool.endpoint()).unwrap();
                s
            })
            .collect();
        for round in 0..50 {
            for (i, s) in peers.iter().enumerate() {
                s.send(format!("{i}-{round}").as_bytes(), 0).unwrap();
            }
            for (i, s) in peers.iter().enumerate() {
                let got = s.recv_bytes(0).unwrap();
                assert_eq!(got, format!("re:{i}-{round}").into_bytes());
            }
        }
        assert_eq!(pool.handled(), 200);
        assert!(pool.close(Duration::from_secs(5)));
    }

    /// An inline handler answers what it takes on the socket thread; what it declines (or
    /// panics on) reaches the pool's workers.
    #[test]
    fn inline_answers_cheap_requests_and_declines_the_rest() {
        let handler: Handler = Arc::new(|b: &[u8]| {
            let mut r = format!("pool-{:?}:", thread::current().name()).into_bytes();
            r.extend_from_slice(b);
            r
        });
        let inline: Inline = Arc::new(|b: &[u8]| {
            assert!(b != b"boom", "inline handler panics on purpose");
            b.starts_with(b"cheap").then(|| {
                let mut r = format!("inline-{:?}:", thread::current().name()).into_bytes();
                r.extend_from_slice(b);
                r
            })
        });
        let pool = PoolServer::bind_inline("tcp://127.0.0.1:*", &opts(), 2, handler, Some(inline))
            .unwrap();
        let ctx = zmq::Context::new();
        let s = ctx.socket(zmq::REQ).unwrap();
        s.set_linger(0).unwrap();
        s.set_rcvtimeo(10_000).unwrap();
        s.connect(pool.endpoint()).unwrap();
        let ask = |b: &[u8]| {
            s.send(b, 0).unwrap();
            String::from_utf8(s.recv_bytes(0).unwrap()).unwrap()
        };
        assert_eq!(ask(b"cheap 1"), "inline-Some(\"zmq-router\"):cheap 1");
        assert!(ask(b"dear 2").starts_with("pool-Some(\"salt-worker-"));
        assert!(
            ask(b"boom").ends_with(":boom"),
            "a panic hands over to the pool"
        );
        assert_eq!(ask(b"cheap 3"), "inline-Some(\"zmq-router\"):cheap 3");
        assert_eq!(pool.handled(), 4);
        assert!(pool.close(Duration::from_secs(5)));
    }

    /// A handler that panics leaves the pool serving the next request.
    #[test]
    fn a_panicking_handler_does_not_stop_the_pool() {
        let handler: Handler = Arc::new(|b: &[u8]| {
            assert!(b != b"boom", "handler panics on purpose");
            b.to_vec()
        });
        let pool = PoolServer::bind("tcp://127.0.0.1:*", &opts(), 1, handler).unwrap();
        let ctx = zmq::Context::new();
        let boom = ctx.socket(zmq::REQ).unwrap();
        boom.set_linger(0).unwrap();
        boom.connect(pool.endpoint()).unwrap();
        boom.send(&b"boom"[..], 0).unwrap();
        let ok = ctx.socket(zmq::REQ).unwrap();
        ok.set_linger(0).unwrap();
        ok.set_rcvtimeo(10_000).unwrap();
        ok.connect(pool.endpoint()).unwrap();
        ok.send(&b"fine"[..], 0).unwrap();
        assert_eq!(ok.recv_bytes(0).unwrap(), b"fine");
        drop(pool);
    }

    /// `close` waits for a running handler and its reply still goes out.
    #[test]
    fn close_lets_a_running_handler_finish() {
        let handler: Handler = Arc::new(|b: &[u8]| {
            thread::sleep(Duration::from_millis(300));
            b.to_vec()
        });
        let pool = Arc::new(PoolServer::bind("tcp://127.0.0.1:*", &opts(), 1, handler).unwrap());
        let ctx = zmq::Context::new();
        let s = ctx.socket(zmq::REQ).unwrap();
        s.set_linger(0).unwrap();
        s.set_rcvtimeo(10_000).unwrap();
        s.connect(pool.endpoint()).unwrap();
        s.send(&b"slow"[..], 0).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while pool.in_flight.n.lock().map(|n| *n).unwrap_or(0) == 0 {
            assert!(Instant::now() < deadline, "handler never started");
            thread::sleep(Duration::from_millis(5));
        }
        let p = Arc::clone(&pool);
        let closer = thread::spawn(move || p.close(Duration::from_secs(5)));
        assert_eq!(s.recv_bytes(0).unwrap(), b"slow");
        assert!(closer.join().unwrap());
    }
}
