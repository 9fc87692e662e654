//! The request server: a bound ROUTER socket (Salt's `ret_port`, 4506).

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::options::{max_msg_size, ms};
use crate::worker::{Doorbell, RefusedConnections, Worker, attach_monitor, drain_monitor, poll_ms};
use crate::{ServerOptions, TransportError};

/// The ZeroMQ routing id of a connected peer, as the ROUTER socket reported it.
///
/// Opaque; only good for [`RouterServer::reply`]. With `ROUTER_HANDOVER` a reconnecting peer
/// with the same (explicit) identity takes over the id.
#[derive(Clone, Eq, Hash, PartialEq)]
pub struct PeerId(Vec<u8>);

impl PeerId {
    /// The raw routing-id bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    #[cfg(test)]
    pub(crate) fn from_bytes(b: &[u8]) -> Self {
        Self(b.to_vec())
    }
}

impl fmt::Debug for PeerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PeerId(")?;
        for b in &self.0 {
            write!(f, "{b:02x}")?;
        }
        f.write_str(")")
    }
}

/// One request received on the ROUTER: the body frame of `[id][empty][body]`.
#[derive(Debug)]
pub struct Request {
    /// Who sent it; pass to [`RouterServer::reply`].
    pub peer: PeerId,
    /// The single body frame (Salt: msgpack of the request envelope).
    pub body: Vec<u8>,
    /// When the socket thread read it (to measure queueing and processing time).
    pub received_at: Instant,
}

/// A bound ROUTER socket on its own thread.
///
/// Requests arrive on the channel returned by [`bind`](Self::bind); replies go through
/// [`reply`](Self::reply) or a [`Replier`] (cheap to clone, callable from any task or
/// thread). `RouterServer` is the owner: dropping it (or [`close`](Self::close)) stops the
/// thread. Repliers do not keep the socket alive, so a task that holds a replier while
/// reading the request channel cannot keep a dropped server running.
///
/// Framing: REQ peers send `[id][empty][body]` and get `[id][empty][reply]`. A DEALER that
/// sends the delimiter works the same way. Anything else (no delimiter, several body
/// frames) is dropped with a debug log, as Salt's REP workers would drop it.
#[derive(Debug)]
pub struct RouterServer {
    replier: Replier,
    endpoint: String,
    refused: RefusedConnections,
    worker: Worker,
}

/// Sends replies through a [`RouterServer`]; clone freely, use from any thread.
/// Fails with [`Closed`](TransportError::Closed) once the server is gone.
#[derive(Clone, Debug)]
pub struct Replier {
    commands: mpsc::UnboundedSender<(PeerId, Vec<u8>)>,
    bell: Arc<Doorbell>,
}

impl Replier {
    /// Queue `body` as the reply to `peer`. Never blocks. If the peer has gone, libzmq
    /// drops the reply silently (Salt's behaviour).
    pub fn reply(&self, peer: PeerId, body: Vec<u8>) -> Result<(), TransportError> {
        self.commands
            .send((peer, body))
            .map_err(|_| TransportError::Closed)?;
        self.bell.ring();
        Ok(())
    }
}

impl RouterServer {
    /// Bind a ROUTER on `endpoint` (e.g. `tcp://0.0.0.0:4506`, or `tcp://127.0.0.1:*` for
    /// any free port; [`endpoint`](Self::endpoint) tells the real one).
    ///
    /// Options as Salt: `LINGER`, `ROUTER_HANDOVER=1`, `BACKLOG`, heartbeats, plus HWM and
    /// `MAXMSGSIZE`. Returns once the socket is bound, or the bind error.
    pub fn bind(
        endpoint: &str,
        opts: ServerOptions,
    ) -> Result<(Self, mpsc::Receiver<Request>), TransportError> {
        let (req_tx, req_rx) = mpsc::channel(opts.queue_capacity.max(1));
        Ok((Self::bind_to(endpoint, &opts, req_tx)?, req_rx))
    }

    /// [`bind`](Self::bind) handing requests to any [`Intake`] (the tokio channel, or the
    /// worker pool's queue).
    pub(crate) fn bind_to<I: Intake>(
        endpoint: &str,
        opts: &ServerOptions,
        intake: I,
    ) -> Result<Self, TransportError> {
        let ctx = zmq::Context::new();
        let mut sock = ctx
            .socket(zmq::ROUTER)
            .map_err(TransportError::zmq("socket ROUTER"))?;
        configure(&sock, opts)?;
        if let Some(batch) = &opts.io_batch {
            batch.apply(&mut sock)?;
        }
        let monitor = attach_monitor(&ctx, &sock, "routermon", &[zmq::SocketEvent::ACCEPT_FAILED])?;
        sock.bind(endpoint).map_err(|e| TransportError::Bind {
            endpoint: endpoint.to_owned(),
            source: crate::ZmqError(e),
        })?;
        let bound = last_endpoint(&sock)?;
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let bell = Arc::new(Doorbell::new()?);
        let replier = Replier {
            commands: cmd_tx,
            bell: Arc::clone(&bell),
        };
        let refused = RefusedConnections::default();
        let thread_refused = refused.clone();
        let worker = Worker::spawn("zmq-router", bell, move |bell| {
            run(ctx, (sock, monitor), &bell, cmd_rx, intake, &thread_refused);
        })?;
        tracing::debug!(endpoint = %bound, "ROUTER bound");
        Ok(Self {
            replier,
            endpoint: bound,
            refused,
            worker,
        })
    }

    /// A clonable reply handle that does not keep the server alive.
    pub fn replier(&self) -> Replier {
        self.replier.clone()
    }

    /// Queue `body` as the reply to `peer` (see [`Replier::reply`]).
    pub fn reply(&self, peer: PeerId, body: Vec<u8>) -> Result<(), TransportError> {
        self.replier.reply(peer, body)
    }

    /// The bound endpoint with the real port (`ZMQ_LAST_ENDPOINT`).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Connections refused since the bind ([`RefusedConnections`]).
    pub fn refused_connections(&self) -> RefusedConnections {
        self.refused.clone()
    }

    /// Stop the socket thread and wait for it, lingering up to `ServerOptions::linger` for
    /// unsent replies (as dropping does). Blocks: call it from a blocking context when the
    /// linger is long. The request channel then ends and repliers return `Closed`.
    pub fn close(&self) {
        self.worker.stop();
    }
}

fn configure(sock: &zmq::Socket, opts: &ServerOptions) -> Result<(), TransportError> {
    sock.set_linger(ms(opts.linger))
        .map_err(TransportError::zmq("setsockopt LINGER"))?;
    sock.set_router_handover(true)
        .map_err(TransportError::zmq("setsockopt ROUTER_HANDOVER"))?;
    sock.set_backlog(opts.backlog)
        .map_err(TransportError::zmq("setsockopt BACKLOG"))?;
    sock.set_sndhwm(opts.hwm)
        .map_err(TransportError::zmq("setsockopt SNDHWM"))?;
    sock.set_rcvhwm(opts.hwm)
        .map_err(TransportError::zmq("setsockopt RCVHWM"))?;
    sock.set_maxmsgsize(max_msg_size(opts.max_msg_size))
        .map_err(TransportError::zmq("setsockopt MAXMSGSIZE"))?;
    if opts.ipv6 {
        sock.set_ipv6(true)
            .map_err(TransportError::zmq("setsockopt IPV6"))?;
    }
    if let Some(hb) = &opts.heartbeat {
        hb.apply(sock)?;
    }
    opts.keepalive.apply(sock)
}

pub(crate) fn last_endpoint(sock: &zmq::Socket) -> Result<String, TransportError> {
    match sock
        .get_last_endpoint()
        .map_err(TransportError::zmq("getsockopt LAST_ENDPOINT"))?
    {
        Ok(s) => Ok(s),
        Err(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
    }
}

/// How long to wait before retrying a full application channel.
const BACKPRESSURE_RETRY: Duration = Duration::from_millis(2);

/// At most this many messages are read per wake-up, so replies interleave with reads.
const READ_BATCH: usize = 256;

/// What became of a request offered to an [`Intake`].
pub(crate) enum Offered {
    /// Queued (or dropped with a log line): nothing more to do here.
    Taken,
    /// No room: the socket thread keeps it and stops reading until there is.
    Full(Request),
    /// Answered at once on the socket thread: send this reply now.
    Answered(PeerId, Vec<u8>),
}

/// Where the socket thread hands requests: [`offer`](Intake::offer) gives a request back
/// when there is no room, and the thread then stops reading until there is.
pub(crate) trait Intake: Send + 'static {
    fn offer(&self, req: Request) -> Offered;
}

impl Intake for mpsc::Sender<Request> {
    /// Hand `req` to the application; give it back if the channel is full.
    fn offer(&self, req: Request) -> Offered {
        match self.try_send(req) {
            Ok(()) => Offered::Taken,
            Err(mpsc::error::TrySendError::Full(req)) => Offered::Full(req),
            Err(mpsc::error::TrySendError::Closed(req)) => {
                tracing::debug!(peer = ?req.peer, "request dropped: receiver gone");
                Offered::Taken
            }
        }
    }
}

fn run<I: Intake>(
    ctx: zmq::Context,
    (sock, monitor): (zmq::Socket, zmq::Socket),
    bell: &Doorbell,
    mut commands: mpsc::UnboundedReceiver<(PeerId, Vec<u8>)>,
    requests: I,
    refused: &RefusedConnections,
) {
    // A request the application channel had no room for; while it is held, the ROUTER is
    // not read, so backpressure reaches libzmq's queues and then the peers.
    let mut pending: Option<Request> = None;
    while !bell.stopping() {
        let mut items = [
            sock.as_poll_item(if pending.is_none() {
                zmq::POLLIN
            } else {
                zmq::PollEvents::empty()
            }),
            zmq::PollItem::from_fd(bell.fd(), zmq::POLLIN),
            monitor.as_poll_item(zmq::POLLIN),
        ];
        let timeout = pending.as_ref().map(|_| BACKPRESSURE_RETRY);
        if let Err(e) = zmq::poll(&mut items, poll_ms(timeout))
            && e != zmq::Error::EINTR
        {
            tracing::error!(error = %e, "ROUTER poll failed; stopping");
            break;
        }
        if items[1].is_readable() {
            bell.clear();
        }
        if items[2].is_readable() {
            drain_monitor(&monitor, |ev| {
                if ev.is(zmq::SocketEvent::ACCEPT_FAILED) {
                    refused.add();
                }
            });
        }
        while let Ok((peer, body)) = commands.try_recv() {
            send_reply(&sock, peer, body);
        }
        if let Some(req) = pending.take() {
            pending = offer(&sock, &requests, req);
        }
        if pending.is_none() {
            pending = read_requests(&sock, &requests);
        }
    }
    // Replies queued before the stop (a handler that finished just now) still go out.
    while let Ok((peer, body)) = commands.try_recv() {
        send_reply(&sock, peer, body);
    }
    drop(monitor);
    drop(sock);
    drop(ctx); // zmq_ctx_term: waits for linger, releases the port
}

/// Replies at least this big are handed to libzmq without a copy (it frees them once
/// sent); smaller ones are copied, which is cheaper than the hand-over for a few bytes.
const ZERO_COPY_MIN: usize = 16 * 1024;

fn send_reply(sock: &zmq::Socket, peer: PeerId, body: Vec<u8>) {
    let sent = if body.len() >= ZERO_COPY_MIN {
        sock.send(&peer.0[..], zmq::SNDMORE | zmq::DONTWAIT)
            .and_then(|()| sock.send(&b""[..], zmq::SNDMORE | zmq::DONTWAIT))
            .and_then(|()| sock.send(body, zmq::DONTWAIT))
    } else {
        let frames: [&[u8]; 3] = [&peer.0, b"", &body];
        sock.send_multipart(frames, zmq::DONTWAIT)
    };
    if let Err(e) = sent {
        tracing::debug!(?peer, error = %e, "reply not sent");
    }
}

/// Read up to [`READ_BATCH`] messages; returns a request the channel could not take.
fn read_requests<I: Intake>(sock: &zmq::Socket, requests: &I) -> Option<Request> {
    for _ in 0..READ_BATCH {
        let frames = match sock.recv_multipart(zmq::DONTWAIT) {
            Ok(frames) => frames,
            Err(zmq::Error::EAGAIN) => return None,
            Err(e) => {
                tracing::debug!(error = %e, "ROUTER recv failed");
                return None;
            }
        };
        if let Some(req) = parse_request(frames)
            && let Some(req) = offer(sock, requests, req)
        {
            return Some(req);
        }
    }
    None
}

/// Offer one request; a reply made on the spot goes out at once. Returns it when full.
fn offer<I: Intake>(sock: &zmq::Socket, requests: &I, req: Request) -> Option<Request> {
    match requests.offer(req) {
        Offered::Taken => None,
        Offered::Full(req) => Some(req),
        Offered::Answered(peer, body) => {
            send_reply(sock, peer, body);
            None
        }
    }
}

/// `[id][empty][body]` → a [`Request`]; any other shape is logged and dropped.
fn parse_request(frames: Vec<Vec<u8>>) -> Option<Request> {
    let n = frames.len();
    let mut it = frames.into_iter();
    match (it.next(), it.next(), it.next(), it.next()) {
        (Some(id), Some(delim), Some(body), None) if delim.is_empty() => Some(Request {
            peer: PeerId(id),
            body,
            received_at: Instant::now(),
        }),
        (id, ..) => {
            tracing::debug!(
                peer = ?id.map(PeerId),
                frames = n,
                "malformed request dropped (want [id][empty][body])"
            );
            None
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_delimited_single_body_requests_are_accepted() {
        let ok = parse_request(vec![b"id".to_vec(), vec![], b"body".to_vec()]).unwrap();
        assert_eq!(ok.peer.as_bytes(), b"id");
        assert_eq!(ok.body, b"body");
        assert!(parse_request(vec![b"id".to_vec(), b"body".to_vec()]).is_none());
        assert!(parse_request(vec![b"id".to_vec()]).is_none());
        assert!(parse_request(vec![]).is_none());
        assert!(parse_request(vec![b"id".to_vec(), b"x".to_vec(), b"y".to_vec()]).is_none());
        assert!(
            parse_request(vec![b"id".to_vec(), vec![], b"a".to_vec(), b"b".to_vec()]).is_none()
        );
    }

    #[test]
    fn peer_id_debug_is_hex() {
        assert_eq!(format!("{:?}", PeerId(vec![0, 0xab])), "PeerId(00ab)");
    }
}
