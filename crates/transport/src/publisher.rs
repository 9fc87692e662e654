//! The publisher: a bound PUB socket (Salt's `publish_port`, 4505).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::mpsc;

use crate::options::ms;
use crate::router::last_endpoint;
use crate::worker::{Doorbell, RefusedConnections, Worker, attach_monitor, drain_monitor};
use crate::{PublisherOptions, TransportError};

/// A bound PUB socket on its own thread.
///
/// [`publish`](Self::publish) never blocks: PUB drops messages for a subscriber whose queue
/// is at `hwm`, and messages published before a subscriber has connected and subscribed are
/// lost ("slow joiner"); both are ZeroMQ semantics that Salt lives with. The handle is cheap
/// to clone; the thread stops when the last clone is dropped or on [`close`](Self::close).
#[derive(Clone, Debug)]
pub struct Publisher {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    commands: mpsc::UnboundedSender<Vec<Vec<u8>>>,
    peers: Arc<AtomicUsize>,
    refused: RefusedConnections,
    endpoint: String,
    worker: Worker,
}

impl Publisher {
    /// Bind a PUB on `endpoint` (`tcp://127.0.0.1:*` picks a free port; see
    /// [`endpoint`](Self::endpoint)). Sets `SNDHWM`/`RCVHWM` = `hwm`, `BACKLOG`, `LINGER`,
    /// heartbeats, and a monitor that counts connected peers.
    pub fn bind(endpoint: &str, opts: PublisherOptions) -> Result<Self, TransportError> {
        let ctx = zmq::Context::new();
        let mut sock = ctx
            .socket(zmq::PUB)
            .map_err(TransportError::zmq("socket PUB"))?;
        sock.set_sndhwm(opts.hwm)
            .map_err(TransportError::zmq("setsockopt SNDHWM"))?;
        sock.set_rcvhwm(opts.hwm)
            .map_err(TransportError::zmq("setsockopt RCVHWM"))?;
        sock.set_linger(ms(opts.linger))
            .map_err(TransportError::zmq("setsockopt LINGER"))?;
        sock.set_backlog(opts.backlog)
            .map_err(TransportError::zmq("setsockopt BACKLOG"))?;
        if opts.ipv6 {
            sock.set_ipv6(true)
                .map_err(TransportError::zmq("setsockopt IPV6"))?;
        }
        if let Some(hb) = &opts.heartbeat {
            hb.apply(&sock)?;
        }
        opts.keepalive.apply(&sock)?;
        if let Some(batch) = &opts.io_batch {
            batch.apply(&mut sock)?;
        }
        let monitor = attach_monitor(
            &ctx,
            &sock,
            "pubmon",
            &[
                zmq::SocketEvent::ACCEPTED,
                zmq::SocketEvent::ACCEPT_FAILED,
                zmq::SocketEvent::DISCONNECTED,
            ],
        )?;
        sock.bind(endpoint).map_err(|e| TransportError::Bind {
            endpoint: endpoint.to_owned(),
            source: crate::ZmqError(e),
        })?;
        let bound = last_endpoint(&sock)?;

        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let peers = Arc::new(AtomicUsize::new(0));
        let thread_peers = Arc::clone(&peers);
        let refused = RefusedConnections::default();
        let thread_refused = refused.clone();
        let bell = Arc::new(Doorbell::new()?);
        let worker = Worker::spawn("zmq-pub", bell, move |bell| {
            run(
                ctx,
                sock,
                monitor,
                &bell,
                cmd_rx,
                (&thread_peers, &thread_refused),
            );
        })?;
        tracing::debug!(endpoint = %bound, "PUB bound");
        Ok(Self {
            inner: Arc::new(Inner {
                commands: cmd_tx,
                peers,
                refused,
                endpoint: bound,
                worker,
            }),
        })
    }

    /// Publish one message: normally one frame; `[topic, payload]` with Salt's
    /// `zmq_filtering` (subscribers prefix-match the first frame). Empty `frames` is ignored.
    pub fn publish(&self, frames: Vec<Vec<u8>>) -> Result<(), TransportError> {
        if frames.is_empty() {
            return Ok(());
        }
        self.inner
            .commands
            .send(frames)
            .map_err(|_| TransportError::Closed)?;
        self.inner.worker.bell().ring();
        Ok(())
    }

    /// TCP peers currently connected (accepted minus disconnected, from the socket
    /// monitor); for `max_minions` checks and metrics. Eventually consistent.
    pub fn connected_peers(&self) -> usize {
        self.inner.peers.load(Ordering::Acquire)
    }

    /// Connections refused since the bind ([`RefusedConnections`]).
    pub fn refused_connections(&self) -> RefusedConnections {
        self.inner.refused.clone()
    }

    /// The bound endpoint with the real port.
    pub fn endpoint(&self) -> &str {
        &self.inner.endpoint
    }

    /// Stop the socket thread (for every clone) and wait for it, lingering up to
    /// `PublisherOptions::linger` for queued messages.
    pub fn close(&self) {
        self.inner.worker.stop();
    }
}

fn run(
    ctx: zmq::Context,
    sock: zmq::Socket,
    monitor: zmq::Socket,
    bell: &Doorbell,
    mut commands: mpsc::UnboundedReceiver<Vec<Vec<u8>>>,
    (peers, refused): (&AtomicUsize, &RefusedConnections),
) {
    while !bell.stopping() {
        let mut items = [
            monitor.as_poll_item(zmq::POLLIN),
            zmq::PollItem::from_fd(bell.fd(), zmq::POLLIN),
        ];
        if let Err(e) = zmq::poll(&mut items, -1)
            && e != zmq::Error::EINTR
        {
            tracing::error!(error = %e, "PUB poll failed; stopping");
            break;
        }
        if items[1].is_readable() {
            bell.clear();
        }
        while let Ok(frames) = commands.try_recv() {
            if let Err(e) = sock.send_multipart(frames, zmq::DONTWAIT) {
                tracing::debug!(error = %e, "publish not sent");
            }
        }
        if items[0].is_readable() {
            drain_monitor(&monitor, |ev| {
                if ev.is(zmq::SocketEvent::ACCEPTED) {
                    peers.fetch_add(1, Ordering::AcqRel);
                } else if ev.is(zmq::SocketEvent::ACCEPT_FAILED) {
                    refused.add();
                } else if ev.is(zmq::SocketEvent::DISCONNECTED) {
                    // saturating: never underflow on an unmatched event
                    let _ = peers.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                        Some(n.saturating_sub(1))
                    });
                }
            });
        }
    }
    drop(monitor);
    drop(sock);
    drop(ctx);
}
