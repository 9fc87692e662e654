//! The request client: a connected REQ socket (minion → master `ret_port`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use crate::endpoint::wants_ipv6;
use crate::options::{max_msg_size, ms};
use crate::worker::{Doorbell, Worker, attach_monitor, drain_monitor, poll_ms};
use crate::{ReqOptions, TransportError};

type Reply = Result<Vec<u8>, TransportError>;

struct Job {
    body: Vec<u8>,
    deadline: Instant,
    /// The deadline was already extended once because this thread ran late.
    extended: bool,
    reply: oneshot::Sender<Reply>,
}

/// A REQ socket on its own thread, connected in the background (libzmq reconnects).
///
/// Requests are serialized, one in flight per client as with REQ; concurrent callers
/// queue in FIFO order. When a request times out, fails, or its caller gives up (the future
/// is dropped), the REQ socket is closed and a fresh one connected, as Salt does, so the
/// next request starts clean. The handle is cheap to clone (clones share the socket); the
/// thread stops when the last clone is dropped or on [`close`](Self::close).
#[derive(Clone, Debug)]
pub struct ReqClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    jobs: mpsc::UnboundedSender<Job>,
    endpoint: String,
    worker: Worker,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("len", &self.body.len())
            .finish()
    }
}

impl ReqClient {
    /// Create the socket and start connecting to `endpoint` (`tcp://host:port`, optionally
    /// `tcp://src:sport;host:port`; see [`tcp_endpoint_from`](crate::tcp_endpoint_from)).
    /// Fails only for a malformed endpoint or when libzmq cannot create sockets; an
    /// unreachable peer shows up as request timeouts.
    pub fn connect(endpoint: &str, opts: ReqOptions) -> Result<Self, TransportError> {
        let ctx = zmq::Context::new();
        let sock = new_socket(&ctx, endpoint, &opts)?;
        let (job_tx, job_rx) = mpsc::unbounded_channel();
        let bell = Arc::new(Doorbell::new()?);
        let ep = endpoint.to_owned();
        let worker = Worker::spawn("zmq-req", bell, move |bell| {
            Runner {
                ctx,
                sock: Some(sock),
                endpoint: ep,
                opts,
            }
            .run(&bell, job_rx);
        })?;
        Ok(Self {
            inner: Arc::new(Inner {
                jobs: job_tx,
                endpoint: endpoint.to_owned(),
                worker,
            }),
        })
    }

    /// Send `body` as one frame and wait for the one-frame reply, at most `timeout` from
    /// now (time spent queued behind this client's earlier requests counts).
    ///
    /// Errors: [`Timeout`](TransportError::Timeout) (socket replaced), [`Closed`](TransportError::Closed),
    /// [`MalformedReply`](TransportError::MalformedReply), [`Zmq`](TransportError::Zmq).
    pub async fn request(
        &self,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Vec<u8>, TransportError> {
        let (tx, rx) = oneshot::channel();
        let job = Job {
            body,
            deadline: Instant::now() + timeout,
            extended: false,
            reply: tx,
        };
        self.inner
            .jobs
            .send(job)
            .map_err(|_| TransportError::Closed)?;
        let bell = self.inner.worker.bell();
        bell.ring();
        // If this future is dropped mid-request, wake the thread so it notices the closed
        // reply channel and resets the socket instead of waiting for the deadline.
        let _guard = RingOnDrop(bell);
        rx.await.unwrap_or(Err(TransportError::Closed))
    }

    /// The endpoint this client connects to.
    pub fn endpoint(&self) -> &str {
        &self.inner.endpoint
    }

    /// Stop the socket thread (for every clone) and wait for it. Queued requests fail with
    /// [`Closed`](TransportError::Closed).
    pub fn close(&self) {
        self.inner.worker.stop();
    }
}

/// One request to `endpoint` on a fresh client (e.g. Salt's failback `ping_master`), which
/// is torn down afterwards off the async runtime.
pub async fn request_once(
    endpoint: &str,
    opts: ReqOptions,
    body: Vec<u8>,
    timeout: Duration,
) -> Result<Vec<u8>, TransportError> {
    let client = ReqClient::connect(endpoint, opts)?;
    let result = client.request(body, timeout).await;
    // Joining the thread blocks briefly (LINGER 0): keep it off the async workers.
    drop(tokio::task::spawn_blocking(move || drop(client)));
    result
}

struct RingOnDrop<'a>(&'a Doorbell);

impl Drop for RingOnDrop<'_> {
    fn drop(&mut self) {
        self.0.ring();
    }
}

/// Waking this long after a deadline means the thread was not running meanwhile.
const LATE_SLACK: Duration = Duration::from_millis(250);
/// The most a late deadline is extended (once).
const MAX_LATE_GRACE: Duration = Duration::from_secs(1);

/// Process-wide slot counter for REQ identities: every socket gets a slot never used before.
static NEXT_SLOT: AtomicU64 = AtomicU64::new(0);

/// The identity of a new REQ socket: `<prefix>/<pid>/<slot>` (see [`ReqOptions::identity`]).
pub(crate) fn unique_identity(prefix: &[u8]) -> Vec<u8> {
    let slot = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
    let mut id = prefix.to_vec();
    id.extend_from_slice(format!("/{}/{slot}", std::process::id()).as_bytes());
    // libzmq takes 1 to 255 bytes and reserves a leading zero byte for its own ids.
    id.truncate(255);
    if id.first() == Some(&0) {
        id[0] = b'_';
    }
    id
}

/// A REQ socket and, with `fail_fast`, the monitor that reports failed connects.
struct Sock {
    req: zmq::Socket,
    monitor: Option<zmq::Socket>,
}

fn new_socket(
    ctx: &zmq::Context,
    endpoint: &str,
    opts: &ReqOptions,
) -> Result<Sock, TransportError> {
    let sock = ctx
        .socket(zmq::REQ)
        .map_err(TransportError::zmq("socket REQ"))?;
    let identity = opts.identity.as_deref().map(unique_identity);
    let common = Connecting {
        linger: opts.linger,
        reconnect_ivl: opts.reconnect_ivl,
        reconnect_ivl_max: opts.reconnect_ivl_max,
        max_msg_size: opts.max_msg_size,
        identity: identity.as_deref(),
        heartbeat: opts.heartbeat.as_ref(),
        keepalive: opts.keepalive,
    };
    common.apply(&sock, endpoint)?;
    // CONNECT_RETRIED: a connect attempt failed (refused, unreachable) or an established
    // connection dropped and libzmq scheduled a reconnect.
    let monitor = if opts.fail_fast {
        Some(attach_monitor(
            ctx,
            &sock,
            "reqmon",
            &[zmq::SocketEvent::CONNECT_RETRIED],
        )?)
    } else {
        None
    };
    connect(&sock, endpoint)?;
    Ok(Sock { req: sock, monitor })
}

/// The options a connecting socket (REQ, SUB) shares.
pub(crate) struct Connecting<'a> {
    pub linger: Duration,
    pub reconnect_ivl: Duration,
    pub reconnect_ivl_max: Duration,
    pub max_msg_size: Option<u64>,
    pub identity: Option<&'a [u8]>,
    pub heartbeat: Option<&'a crate::Heartbeat>,
    pub keepalive: crate::Keepalive,
}

impl Connecting<'_> {
    /// Sets `LINGER`, `RECONNECT_IVL`, `RECONNECT_IVL_MAX`, `MAXMSGSIZE`, `IDENTITY` (when
    /// given), `IPV6` (for an IPv6 `endpoint`), the heartbeats and TCP keepalive on `sock`.
    pub(crate) fn apply(&self, sock: &zmq::Socket, endpoint: &str) -> Result<(), TransportError> {
        sock.set_linger(ms(self.linger))
            .map_err(TransportError::zmq("setsockopt LINGER"))?;
        sock.set_reconnect_ivl(ms(self.reconnect_ivl))
            .map_err(TransportError::zmq("setsockopt RECONNECT_IVL"))?;
        sock.set_reconnect_ivl_max(ms(self.reconnect_ivl_max))
            .map_err(TransportError::zmq("setsockopt RECONNECT_IVL_MAX"))?;
        sock.set_maxmsgsize(max_msg_size(self.max_msg_size))
            .map_err(TransportError::zmq("setsockopt MAXMSGSIZE"))?;
        if let Some(id) = self.identity {
            sock.set_identity(id)
                .map_err(TransportError::zmq("setsockopt IDENTITY"))?;
        }
        if wants_ipv6(endpoint) {
            sock.set_ipv6(true)
                .map_err(TransportError::zmq("setsockopt IPV6"))?;
        }
        if let Some(hb) = self.heartbeat {
            hb.apply(sock)?;
        }
        self.keepalive.apply(sock)
    }
}

/// `zmq_connect`, its error naming `endpoint`.
pub(crate) fn connect(sock: &zmq::Socket, endpoint: &str) -> Result<(), TransportError> {
    sock.connect(endpoint).map_err(|e| TransportError::Connect {
        endpoint: endpoint.to_owned(),
        source: crate::ZmqError(e),
    })
}

struct Runner {
    ctx: zmq::Context,
    /// `None` after a failed re-creation; retried on the next request.
    sock: Option<Sock>,
    endpoint: String,
    opts: ReqOptions,
}

/// Where the current request is.
enum Phase {
    /// Waiting for the socket to accept the send.
    Sending,
    /// Sent; waiting for the reply.
    Waiting,
}

impl Runner {
    fn run(mut self, bell: &Doorbell, mut jobs: mpsc::UnboundedReceiver<Job>) {
        let mut current: Option<(Job, Phase)> = None;
        while !bell.stopping() {
            if current.is_none() {
                current = self.start_next(&mut jobs);
            }
            let (events, timeout) = match &current {
                None => (zmq::PollEvents::empty(), None),
                Some((job, phase)) => (
                    match phase {
                        Phase::Sending => zmq::POLLOUT,
                        Phase::Waiting => zmq::POLLIN,
                    },
                    Some(job.deadline.saturating_duration_since(Instant::now())),
                ),
            };
            let (ready, woke, refused) = {
                let mut items = Vec::with_capacity(3);
                items.push(zmq::PollItem::from_fd(bell.fd(), zmq::POLLIN));
                if let (Some(sock), true) = (&self.sock, !events.is_empty()) {
                    items.push(sock.req.as_poll_item(events));
                    if let Some(mon) = &sock.monitor {
                        items.push(mon.as_poll_item(zmq::POLLIN));
                    }
                }
                if let Err(e) = zmq::poll(&mut items, poll_ms(timeout))
                    && e != zmq::Error::EINTR
                {
                    tracing::error!(error = %e, "REQ poll failed; stopping");
                    break;
                }
                let ready = items.get(1).is_some_and(|i| !i.get_revents().is_empty());
                let mon_ready = items.get(2).is_some_and(zmq::PollItem::is_readable);
                (
                    ready,
                    items[0].is_readable(),
                    mon_ready && self.connect_failed(),
                )
            };
            if woke {
                bell.clear();
            }
            let Some((job, phase)) = current.take() else {
                continue;
            };
            current = if refused && !ready {
                self.fail(job, TransportError::Unreachable)
            } else {
                self.advance(job, phase, ready)
            };
        }
        // Fail whatever is still queued, then close (LINGER 0) and terminate the context.
        if let Some((job, _)) = current {
            let _ = job.reply.send(Err(TransportError::Closed));
        }
        jobs.close();
        while let Ok(job) = jobs.try_recv() {
            let _ = job.reply.send(Err(TransportError::Closed));
        }
        drop(self.sock.take());
    }

    /// Whether the monitor reported a failed connect since the last look (drains it).
    fn connect_failed(&self) -> bool {
        let mut failed = false;
        if let Some(mon) = self.sock.as_ref().and_then(|s| s.monitor.as_ref()) {
            drain_monitor(mon, |ev| {
                failed |= ev.is(zmq::SocketEvent::CONNECT_RETRIED);
            });
        }
        failed
    }

    /// Take the next live job, answering expired or abandoned ones without sending.
    fn start_next(&mut self, jobs: &mut mpsc::UnboundedReceiver<Job>) -> Option<(Job, Phase)> {
        while let Ok(job) = jobs.try_recv() {
            if job.reply.is_closed() {
                continue;
            }
            if Instant::now() >= job.deadline {
                let _ = job.reply.send(Err(TransportError::Timeout));
                continue;
            }
            if self.sock.is_none() {
                match new_socket(&self.ctx, &self.endpoint, &self.opts) {
                    Ok(sock) => self.sock = Some(sock),
                    Err(e) => {
                        let _ = job.reply.send(Err(e));
                        continue;
                    }
                }
            }
            // Forget failed connects from before this request (fail_fast is per request).
            let _ = self.connect_failed();
            return Some((job, Phase::Sending));
        }
        None
    }

    /// Move the current request forward after a poll; `None` when it is finished.
    fn advance(&mut self, job: Job, phase: Phase, ready: bool) -> Option<(Job, Phase)> {
        if job.reply.is_closed() {
            tracing::debug!("request abandoned by caller; resetting REQ socket");
            self.reset();
            return None;
        }
        let Some(sock) = self.sock.as_ref().map(|s| &s.req) else {
            let _ = job.reply.send(Err(TransportError::Closed));
            return None;
        };
        if ready {
            match phase {
                Phase::Sending => match sock.send(job.body.as_slice(), zmq::DONTWAIT) {
                    Ok(()) => return Some((job, Phase::Waiting)),
                    Err(zmq::Error::EAGAIN) => {}
                    Err(e) => return self.fail(job, TransportError::zmq("send")(e)),
                },
                Phase::Waiting => match sock.recv_multipart(zmq::DONTWAIT) {
                    Ok(mut frames) => {
                        let result = if frames.len() == 1 {
                            Ok(frames.pop().unwrap_or_default())
                        } else {
                            Err(TransportError::MalformedReply {
                                frames: frames.len(),
                            })
                        };
                        let _ = job.reply.send(result);
                        return None;
                    }
                    Err(zmq::Error::EAGAIN) => {}
                    Err(e) => return self.fail(job, TransportError::zmq("recv")(e)),
                },
            }
        }
        let now = Instant::now();
        if now >= job.deadline {
            // Woken long after the deadline: this process was not running (descheduled,
            // stopped), and a reply that arrived meanwhile may still be in libzmq's I/O
            // thread. Give it as long as we were late (once, at most MAX_LATE_GRACE) instead
            // of calling a request that was answered in time a timeout.
            let late = now.saturating_duration_since(job.deadline);
            if !job.extended && late > LATE_SLACK {
                let mut job = job;
                job.extended = true;
                job.deadline = now + late.min(MAX_LATE_GRACE);
                tracing::debug!(
                    endpoint = %self.endpoint,
                    late_ms = late.as_millis() as u64,
                    "REQ thread ran late; extending the deadline once"
                );
                return Some((job, phase));
            }
            return self.fail(job, TransportError::Timeout);
        }
        Some((job, phase))
    }

    fn fail(&mut self, job: Job, err: TransportError) -> Option<(Job, Phase)> {
        tracing::debug!(endpoint = %self.endpoint, error = %err, "request failed; resetting REQ socket");
        self.reset();
        let _ = job.reply.send(Err(err));
        None
    }

    /// Close the REQ socket (stuck in its send/recv state machine) and connect a new one.
    fn reset(&mut self) {
        drop(self.sock.take());
        match new_socket(&self.ctx, &self.endpoint, &self.opts) {
            Ok(sock) => self.sock = Some(sock),
            Err(e) => {
                tracing::warn!(endpoint = %self.endpoint, error = %e, "cannot recreate REQ socket")
            }
        }
    }
}
