//! The socket-thread plumbing shared by every socket type.
//!
//! Each handle owns one OS thread, and that thread owns a private `zmq::Context` and every
//! socket of the handle; no zmq socket ever crosses threads. The tokio side sends work over
//! a tokio unbounded channel and rings a [`Doorbell`]: one byte on a Unix socket pair that
//! the thread's `zmq_poll` watches next to its zmq sockets. (A socket pair rather than an
//! inproc PAIR socket because the sending side must be callable from any thread at once;
//! an inproc socket would need a lock around a zmq socket.) Rings are coalesced with a
//! flag, so a burst of replies costs one write.
//!
//! Shutdown: [`Worker::stop`] (or dropping it) sets the stop flag, rings, and joins the
//! thread. The thread closes its sockets and drops its context last, which waits for
//! linger to expire, so when `stop` returns the port is released and libzmq's own I/O
//! threads are gone too.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};

use crate::TransportError;

/// Wakes a socket thread from any thread.
#[derive(Debug)]
pub(crate) struct Doorbell {
    rung: AtomicBool,
    stop: AtomicBool,
    tx: UnixStream,
    rx: UnixStream,
}

impl Doorbell {
    pub(crate) fn new() -> io::Result<Self> {
        let (tx, rx) = UnixStream::pair()?;
        tx.set_nonblocking(true)?;
        rx.set_nonblocking(true)?;
        Ok(Self {
            rung: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            tx,
            rx,
        })
    }

    /// Wake the thread (after queueing work). Cheap when a ring is already pending.
    ///
    /// `SeqCst` here and in [`clear`](Self::clear) (a store, then a full fence, before the
    /// thread looks at its queue and the stop flag): with acquire/release only, the thread's
    /// reset of the flag could become visible after its read of the queue or of `stop` (x86
    /// lets a load pass an earlier store), a ring in between would find the flag still set
    /// and write nothing, and the thread would poll on with the work or the stop unseen.
    /// That lost wake-up left an idle REQ thread in `zmq_poll` with no timeout while its
    /// owner joined it (`routing` test, once in many runs).
    pub(crate) fn ring(&self) {
        if !self.rung.swap(true, Ordering::SeqCst) {
            // Both ends live as long as this struct, so the write cannot hit a closed peer;
            // a full buffer (WouldBlock) means a wake is pending anyway.
            let _ = (&self.tx).write(&[1]);
        }
    }

    /// The fd to put in `zmq_poll`.
    pub(crate) fn fd(&self) -> RawFd {
        self.rx.as_raw_fd()
    }

    /// Called by the thread after waking, *before* it drains its command queue.
    ///
    /// Order matters: drain the socket first, then reset the flag. The other order loses
    /// wake-ups: a ring between the reset and the drain would write a byte that the drain
    /// swallows, leaving the flag set with nothing to poll, so no later ring would write.
    /// With this order a ring that finds the flag still set queued its work before the
    /// reset, and the caller's queue drain (which follows) picks it up.
    pub(crate) fn clear(&self) {
        let mut buf = [0u8; 64];
        while matches!((&self.rx).read(&mut buf), Ok(n) if n > 0) {}
        self.rung.store(false, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    pub(crate) fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn request_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.ring();
    }
}

/// Owner of a socket thread: stops and joins it on [`stop`](Self::stop) or drop.
#[derive(Debug)]
pub(crate) struct Worker {
    bell: Arc<Doorbell>,
    join: Mutex<Option<JoinHandle<()>>>,
}

impl Worker {
    /// Spawn `body` on a named thread. `body` gets the doorbell to poll and must return
    /// soon after `bell.stopping()` turns true.
    pub(crate) fn spawn<F>(name: &str, bell: Arc<Doorbell>, body: F) -> Result<Self, TransportError>
    where
        F: FnOnce(Arc<Doorbell>) + Send + 'static,
    {
        let thread_bell = Arc::clone(&bell);
        let join = thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || body(thread_bell))?;
        Ok(Self {
            bell,
            join: Mutex::new(Some(join)),
        })
    }

    pub(crate) fn bell(&self) -> &Doorbell {
        &self.bell
    }

    /// Stop the thread and wait for it (idempotent).
    pub(crate) fn stop(&self) {
        self.bell.request_stop();
        let join = self
            .join
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(join) = join
            && join.thread().id() != thread::current().id()
            && join.join().is_err()
        {
            tracing::error!("transport thread panicked");
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Connections a listening socket refused since its bind: accepts that failed (`EMFILE`
/// and the like) and connections closed at once to keep the descriptor reserve (the
/// patched libzmq, `third_party/zeromq-src/README.md`); each pauses accepting for 100 ms.
/// Counted from the socket monitor; cheap to clone, read from any thread.
#[derive(Clone, Debug, Default)]
pub struct RefusedConnections(Arc<AtomicU64>);

impl RefusedConnections {
    /// Refusals so far.
    pub fn count(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    pub(crate) fn add(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

/// A process-unique inproc endpoint for a monitor socket.
pub(crate) fn inproc_name(kind: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "inproc://salt-transport-{kind}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// One decoded socket-monitor event.
#[derive(Clone, Debug, Eq, PartialEq)]
pub(crate) struct MonitorEvent {
    pub(crate) event: u16,
    pub(crate) value: u32,
    pub(crate) address: Vec<u8>,
}

impl MonitorEvent {
    /// Decode libzmq's two-frame monitor message: `[u16 event LE, u32 value LE][address]`.
    /// Returns `None` on any other shape (never panics).
    pub(crate) fn decode(frames: &[Vec<u8>]) -> Option<Self> {
        let head = frames.first()?;
        let event = u16::from_le_bytes(head.get(0..2)?.try_into().ok()?);
        let value = u32::from_le_bytes(head.get(2..6)?.try_into().ok()?);
        let address = frames.get(1).cloned().unwrap_or_default();
        Some(Self {
            event,
            value,
            address,
        })
    }

    pub(crate) fn is(&self, ev: zmq::SocketEvent) -> bool {
        self.event == ev.to_raw()
    }
}

/// Attach a monitor for `events` to `sock` and return the connected PAIR that receives them.
pub(crate) fn attach_monitor(
    ctx: &zmq::Context,
    sock: &zmq::Socket,
    kind: &str,
    events: &[zmq::SocketEvent],
) -> Result<zmq::Socket, TransportError> {
    let name = inproc_name(kind);
    let mask = events.iter().fold(0i32, |m, e| m | i32::from(e.to_raw()));
    sock.monitor(&name, mask)
        .map_err(TransportError::zmq("socket monitor"))?;
    let pair = ctx
        .socket(zmq::PAIR)
        .map_err(TransportError::zmq("socket PAIR"))?;
    pair.set_linger(0)
        .map_err(TransportError::zmq("setsockopt LINGER"))?;
    pair.connect(&name)
        .map_err(TransportError::zmq("connect monitor"))?;
    Ok(pair)
}

/// Read every pending monitor event without blocking.
pub(crate) fn drain_monitor(pair: &zmq::Socket, mut on_event: impl FnMut(MonitorEvent)) {
    loop {
        match pair.recv_multipart(zmq::DONTWAIT) {
            Ok(frames) => match MonitorEvent::decode(&frames) {
                Some(ev) => on_event(ev),
                None => tracing::debug!(frames = frames.len(), "undecodable monitor event"),
            },
            Err(zmq::Error::EAGAIN) => break,
            Err(e) => {
                tracing::debug!(error = %e, "monitor recv failed");
                break;
            }
        }
    }
}

/// Poll timeout in ms for zmq_poll, rounded up so a deadline is not busy-polled: -1
/// (forever) when `None`.
pub(crate) fn poll_ms(timeout: Option<std::time::Duration>) -> i64 {
    timeout.map_or(-1, |d| {
        i64::try_from(d.as_micros().div_ceil(1000)).unwrap_or(i64::MAX)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn monitor_event_decoding_is_total() {
        assert_eq!(MonitorEvent::decode(&[]), None);
        assert_eq!(MonitorEvent::decode(&[vec![1, 0, 0]]), None);
        let ev =
            MonitorEvent::decode(&[vec![0x00, 0x02, 7, 0, 0, 0], b"tcp://x:1".to_vec()]).unwrap();
        assert_eq!(ev.event, 0x0200);
        assert_eq!(ev.value, 7);
        assert_eq!(ev.address, b"tcp://x:1");
        assert!(ev.is(zmq::SocketEvent::DISCONNECTED));
        // a missing address frame is tolerated
        assert!(MonitorEvent::decode(&[vec![1, 0, 0, 0, 0, 0]]).is_some());
    }

    /// Many rings racing with clear: every queued item must be seen, none stranded.
    #[test]
    fn doorbell_never_loses_a_wakeup() {
        use std::sync::mpsc;
        let bell = Arc::new(Doorbell::new().unwrap());
        let (tx, rx) = mpsc::channel::<u32>();
        const N: u32 = 200_000;
        let producers: Vec<_> = (0..4)
            .map(|_| {
                let (b, tx) = (Arc::clone(&bell), tx.clone());
                thread::spawn(move || {
                    for i in 0..N / 4 {
                        tx.send(i).unwrap();
                        b.ring();
                    }
                })
            })
            .collect();
        let mut seen = 0;
        while seen < N {
            let mut items = [zmq::PollItem::from_fd(bell.fd(), zmq::POLLIN)];
            // a lost wake-up shows as a 5 s stall
            assert_eq!(
                zmq::poll(&mut items, 5000).unwrap(),
                1,
                "lost wake-up at {seen}"
            );
            bell.clear();
            while rx.try_recv().is_ok() {
                seen += 1;
            }
        }
        for p in producers {
            p.join().unwrap();
        }
    }

    #[test]
    fn doorbell_coalesces_and_clears() {
        let bell = Doorbell::new().unwrap();
        bell.ring();
        bell.ring();
        let mut buf = [0u8; 8];
        assert_eq!((&bell.rx).read(&mut buf).unwrap(), 1, "two rings, one byte");
        bell.ring(); // still flagged: no new byte
        assert!((&bell.rx).read(&mut buf).is_err());
        bell.clear();
        bell.ring();
        assert_eq!((&bell.rx).read(&mut buf).unwrap(), 1);
    }
}
