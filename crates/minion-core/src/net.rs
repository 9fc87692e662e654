//! The thin adapter between the driver and salt-transport.
//!
//! The driver needs three things from the network: a one-off request on a fresh REQ socket
//! (sign-in, alive check, failback ping: Salt uses a fresh channel for each), a long-lived
//! REQ client per master connection for returns and events (libzmq reconnects it; a timed
//! out request resets the socket), and a SUB socket whose messages and monitor events
//! arrive on a channel.

use std::time::Duration;

use salt_transport::{
    Heartbeat, Keepalive, ReqClient, ReqOptions, SubClient, SubEvent, TransportError,
};
use tokio::sync::mpsc;

/// A network failure (the message is for logs).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// No reply within the timeout.
    #[error("request timed out")]
    Timeout,
    /// The master's port refused the connection, or the connection dropped before the reply
    /// (the master is gone).
    #[error("connection refused or dropped")]
    Unreachable,
    /// Socket error.
    #[error("transport error: {0}")]
    Transport(String),
}

impl From<TransportError> for NetError {
    fn from(e: TransportError) -> Self {
        match e {
            TransportError::Timeout => Self::Timeout,
            TransportError::Unreachable => Self::Unreachable,
            other => Self::Transport(other.to_string()),
        }
    }
}

/// `tcp://host:port`, bracketing IPv6 literals.
pub fn tcp_uri(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("tcp://[{host}]:{port}")
    } else {
        format!("tcp://{host}:{port}")
    }
}

/// The REQ identity prefix of minion `id`, Salt 3007's `salt-req/minion/<id>`; the transport
/// appends `/<pid>/<slot>`, unique per socket, so no two sockets share an identity.
fn identity(id: &str) -> Vec<u8> {
    format!("salt-req/minion/{id}").into_bytes()
}

/// One request on a fresh REQ socket to `uri` (sign-in, alive check, failback ping), waiting
/// at most `timeout` for the reply. With `fail_fast`, a refused or dropped connection fails
/// at once ([`NetError::Unreachable`]); without it, the request waits for the master to come
/// up within `timeout` (libzmq reconnects and delivers it).
pub async fn request_once(
    id: &str,
    uri: &str,
    body: Vec<u8>,
    timeout: Duration,
    fail_fast: bool,
    keepalive: Keepalive,
) -> Result<Vec<u8>, NetError> {
    let opts = ReqOptions {
        identity: Some(identity(id)),
        fail_fast,
        keepalive,
        ..ReqOptions::default()
    };
    Ok(salt_transport::request_once(uri, opts, body, timeout).await?)
}

/// A long-lived request client (returns, events, pillar) to one master.
pub fn req_client(id: &str, uri: &str, keepalive: Keepalive) -> Result<ReqClient, NetError> {
    let opts = ReqOptions {
        identity: Some(identity(id)),
        keepalive,
        ..ReqOptions::default()
    };
    Ok(ReqClient::connect(uri, opts)?)
}

/// One request on a long-lived client.
pub async fn request(
    client: &ReqClient,
    body: Vec<u8>,
    timeout: Duration,
) -> Result<Vec<u8>, NetError> {
    Ok(client.request(body, timeout).await?)
}

/// Events from a subscription.
#[derive(Debug)]
pub enum SubNote {
    /// A publish (its frames).
    Message(Vec<Vec<u8>>),
    /// Connected (or reconnected) to the publisher.
    Connected,
    /// Disconnected (closed, network error or heartbeat timeout).
    Disconnected,
}

/// Options of the SUB socket.
#[derive(Debug, Clone)]
pub struct SubOptions {
    /// `tcp://host:port` of the publisher.
    pub uri: String,
    /// Topics (`[b""]` = everything).
    pub topics: Vec<Vec<u8>>,
    /// ZMTP heartbeat interval and timeout (`None`: Salt's 10 s / 30 s).
    pub heartbeat: Option<(Duration, Duration)>,
    /// Identity (Salt sets the minion id).
    pub identity: Vec<u8>,
    /// Salt's `tcp_keepalive*` options.
    pub keepalive: Keepalive,
}

/// Connect a SUB socket and forward its events to `tx` until `tx` closes or the task is
/// aborted (which closes the socket). `tag` comes back with each event so stale ones can be
/// told apart.
pub fn spawn_sub<T: Copy + Send + 'static>(
    opts: SubOptions,
    tag: T,
    tx: mpsc::Sender<(T, SubNote)>,
) -> Result<tokio::task::JoinHandle<()>, NetError> {
    let topts = salt_transport::SubOptions {
        topics: opts.topics,
        heartbeat: Some(
            opts.heartbeat
                .map_or(Heartbeat::SALT_DEFAULT, |(i, t)| Heartbeat::new(i, t)),
        ),
        identity: Some(opts.identity),
        queue_capacity: 64,
        keepalive: opts.keepalive,
        ..salt_transport::SubOptions::default()
    };
    let (client, mut rx) = SubClient::connect(&opts.uri, topts)?;
    Ok(tokio::spawn(async move {
        let _client = client;
        while let Some(ev) = rx.recv().await {
            let note = match ev {
                SubEvent::Message(frames) => SubNote::Message(frames),
                SubEvent::Connected => SubNote::Connected,
                SubEvent::Disconnected => SubNote::Disconnected,
            };
            if tx.send((tag, note)).await.is_err() {
                break;
            }
        }
    }))
}
