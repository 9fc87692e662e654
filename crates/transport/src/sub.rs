//! The subscriber: a connected SUB socket (minion → master `publish_port`).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::req::{Connecting, connect};
use crate::worker::{Doorbell, MonitorEvent, Worker, attach_monitor, drain_monitor, poll_ms};
use crate::{SubOptions, TransportError};

/// What a [`SubClient`] reports, in order.
#[derive(Clone, Debug, Eq, PartialEq)]
pub enum SubEvent {
    /// The ZMTP handshake with the publisher succeeded (not just TCP connect: a frozen
    /// publisher whose kernel still accepts connections does not count).
    Connected,
    /// The connection was lost: closed by the peer, a network error, or no traffic within
    /// the heartbeat timeout. libzmq keeps reconnecting in the background; Salt 3007
    /// treats this as "master disconnected".
    Disconnected,
    /// A published message, all of its frames (one frame normally; `[topic, payload]` with
    /// `zmq_filtering`).
    Message(Vec<Vec<u8>>),
}

/// A SUB socket on its own thread, connected in the background with automatic reconnects.
///
/// Events arrive on the channel returned by [`connect`](Self::connect). `Connected` and
/// `Disconnected` alternate, starting with `Connected`. The thread stops when the handle is
/// dropped or on [`close`](Self::close); the channel then ends.
#[derive(Debug)]
pub struct SubClient {
    commands: mpsc::UnboundedSender<Command>,
    endpoint: String,
    worker: Worker,
}

#[derive(Debug)]
enum Command {
    Subscribe(Vec<u8>),
    Unsubscribe(Vec<u8>),
}

impl SubClient {
    /// Create the SUB, subscribe to `opts.topics`, attach a monitor and start connecting to
    /// `endpoint`. Fails only for a malformed endpoint or socket-creation errors.
    pub fn connect(
        endpoint: &str,
        opts: SubOptions,
    ) -> Result<(Self, mpsc::Receiver<SubEvent>), TransportError> {
        let ctx = zmq::Context::new();
        let sock = ctx
            .socket(zmq::SUB)
            .map_err(TransportError::zmq("socket SUB"))?;
        sock.set_rcvhwm(opts.rcvhwm)
            .map_err(TransportError::zmq("setsockopt RCVHWM"))?;
        let common = Connecting {
            linger: opts.linger,
            reconnect_ivl: opts.reconnect_ivl,
            reconnect_ivl_max: opts.reconnect_ivl_max,
            max_msg_size: opts.max_msg_size,
            identity: opts.identity.as_deref(),
            heartbeat: opts.heartbeat.as_ref(),
            keepalive: opts.keepalive,
        };
        common.apply(&sock, endpoint)?;
        for topic in &opts.topics {
            sock.set_subscribe(topic)
                .map_err(TransportError::zmq("setsockopt SUBSCRIBE"))?;
        }
        let monitor = attach_monitor(
            &ctx,
            &sock,
            "submon",
            // The handshake failures and retries are only logged (debug): they say why a
            // connection never came up or went down (issue #15).
            &[
                zmq::SocketEvent::HANDSHAKE_SUCCEEDED,
                zmq::SocketEvent::DISCONNECTED,
                zmq::SocketEvent::HANDSHAKE_FAILED_NO_DETAIL,
                zmq::SocketEvent::HANDSHAKE_FAILED_PROTOCOL,
                zmq::SocketEvent::HANDSHAKE_FAILED_AUTH,
                zmq::SocketEvent::CONNECT_RETRIED,
            ],
        )?;
        connect(&sock, endpoint)?;

        let (ev_tx, ev_rx) = mpsc::channel(opts.queue_capacity.max(1));
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let bell = Arc::new(Doorbell::new()?);
        let worker = Worker::spawn("zmq-sub", bell, move |bell| {
            run(ctx, sock, monitor, &bell, cmd_rx, ev_tx);
        })?;
        Ok((
            Self {
                commands: cmd_tx,
                endpoint: endpoint.to_owned(),
                worker,
            },
            ev_rx,
        ))
    }

    /// Add a subscription (prefix match on the first frame).
    pub fn subscribe(&self, topic: Vec<u8>) -> Result<(), TransportError> {
        self.command(Command::Subscribe(topic))
    }

    /// Remove a subscription added earlier.
    pub fn unsubscribe(&self, topic: Vec<u8>) -> Result<(), TransportError> {
        self.command(Command::Unsubscribe(topic))
    }

    /// The endpoint this client connects to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Stop the socket thread and wait for it.
    pub fn close(&self) {
        self.worker.stop();
    }

    fn command(&self, cmd: Command) -> Result<(), TransportError> {
        self.commands
            .send(cmd)
            .map_err(|_| TransportError::Closed)?;
        self.worker.bell().ring();
        Ok(())
    }
}

/// How long to wait before retrying a full application channel.
const BACKPRESSURE_RETRY: Duration = Duration::from_millis(2);

/// At most this many messages are read per wake-up.
const READ_BATCH: usize = 256;

/// The socket thread's state: events not yet accepted by the channel, and whether the
/// application was last told `Connected`.
struct State {
    events: mpsc::Sender<SubEvent>,
    /// Events waiting for room in the channel, oldest first. While it is non-empty no
    /// socket is read, so it holds at most one message plus a few monitor events, and
    /// libzmq's `RCVHWM` bounds the rest.
    backlog: VecDeque<SubEvent>,
    up: bool,
    /// When the current connection's handshake succeeded (for the debug log).
    up_since: Option<std::time::Instant>,
    receiver_gone: bool,
}

impl State {
    /// Queue `ev` and deliver as much of the backlog as the channel takes.
    fn push(&mut self, ev: SubEvent) {
        self.backlog.push_back(ev);
        self.flush();
    }

    /// Deliver the backlog in order until the channel is full. Returns true when empty.
    fn flush(&mut self) -> bool {
        while let Some(ev) = self.backlog.pop_front() {
            match self.events.try_send(ev) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(ev)) => {
                    self.backlog.push_front(ev);
                    return false;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    self.receiver_gone = true;
                    self.backlog.clear();
                }
            }
        }
        true
    }

    /// Map a monitor event; `Connected`/`Disconnected` strictly alternate.
    fn on_monitor(&mut self, ev: &MonitorEvent) {
        tracing::debug!(
            event = ev.event,
            value = ev.value,
            address = %String::from_utf8_lossy(&ev.address),
            "SUB monitor event"
        );
        if ev.is(zmq::SocketEvent::HANDSHAKE_SUCCEEDED) && !self.up {
            self.up = true;
            self.up_since = Some(std::time::Instant::now());
            self.push(SubEvent::Connected);
        } else if ev.is(zmq::SocketEvent::DISCONNECTED) && self.up {
            self.up = false;
            if let Some(t) = self.up_since.take() {
                tracing::debug!(
                    fd = ev.value,
                    "SUB connection lost {} ms after its handshake",
                    t.elapsed().as_millis()
                );
            }
            self.push(SubEvent::Disconnected);
        }
    }
}

fn run(
    ctx: zmq::Context,
    sock: zmq::Socket,
    monitor: zmq::Socket,
    bell: &Doorbell,
    mut commands: mpsc::UnboundedReceiver<Command>,
    events: mpsc::Sender<SubEvent>,
) {
    let mut st = State {
        events,
        backlog: VecDeque::new(),
        up: false,
        up_since: None,
        receiver_gone: false,
    };
    while !bell.stopping() && !st.receiver_gone {
        let read = if st.backlog.is_empty() {
            zmq::POLLIN
        } else {
            zmq::PollEvents::empty()
        };
        let mut items = [
            monitor.as_poll_item(read),
            sock.as_poll_item(read),
            zmq::PollItem::from_fd(bell.fd(), zmq::POLLIN),
        ];
        let timeout = (!st.backlog.is_empty()).then_some(BACKPRESSURE_RETRY);
        if let Err(e) = zmq::poll(&mut items, poll_ms(timeout))
            && e != zmq::Error::EINTR
        {
            tracing::error!(error = %e, "SUB poll failed; stopping");
            break;
        }
        if items[2].is_readable() {
            bell.clear();
        }
        while let Ok(cmd) = commands.try_recv() {
            let res = match &cmd {
                Command::Subscribe(t) => sock.set_subscribe(t),
                Command::Unsubscribe(t) => sock.set_unsubscribe(t),
            };
            if let Err(e) = res {
                tracing::warn!(?cmd, error = %e, "subscription change failed");
            }
        }
        if !st.flush() {
            continue;
        }
        // Monitor first, so a Connected precedes the messages of its connection.
        if items[0].is_readable() {
            drain_monitor(&monitor, |ev| st.on_monitor(&ev));
        }
        if items[1].is_readable() {
            for _ in 0..READ_BATCH {
                if !st.backlog.is_empty() {
                    break;
                }
                match sock.recv_multipart(zmq::DONTWAIT) {
                    Ok(frames) => st.push(SubEvent::Message(frames)),
                    Err(zmq::Error::EAGAIN) => break,
                    Err(e) => {
                        tracing::debug!(error = %e, "SUB recv failed");
                        break;
                    }
                }
            }
        }
    }
    drop(monitor);
    drop(sock);
    drop(ctx);
}
