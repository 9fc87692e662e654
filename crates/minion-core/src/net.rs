//! The thin adapter between the driver and salt-transport.
//!
//! Everything the driver needs from the network is two things: one request/reply
//! exchange on a fresh REQ socket (Salt closes and re-creates its REQ socket after any
//! timeout, and a fresh socket per exchange lets jobs return concurrently), and a SUB
//! socket whose messages and monitor events arrive on a channel.

use std::time::Duration;

use salt_transport::{ReqClient, SubClient, SubEvent};
use tokio::sync::mpsc;

/// A network failure (the message is for logs).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NetError {
    /// No reply within the timeout.
    #[error("request timed out")]
    Timeout,
    /// Socket error.
    #[error("transport error: {0}")]
    Transport(String),
}

/// `tcp://host:port`, bracketing IPv6 literals.
pub fn tcp_uri(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("tcp://[{host}]:{port}")
    } else {
        format!("tcp://{host}:{port}")
    }
}

/// One request on a fresh REQ socket to `uri`, waiting at most `timeout` for the reply.
pub async fn request(uri: &str, body: Vec<u8>, timeout: Duration) -> Result<Vec<u8>, NetError> {
    let client = ReqClient::connect(uri).map_err(|e| NetError::Transport(e.to_string()))?;
    match tokio::time::timeout(timeout, client.request(body, timeout)).await {
        Ok(Ok(reply)) => Ok(reply),
        Ok(Err(e)) => Err(NetError::Transport(e.to_string())),
        Err(_) => Err(NetError::Timeout),
    }
}

/// Events from a subscription, tagged by the driver.
#[derive(Debug)]
pub enum SubNote {
    /// A publish (its frames).
    Message(Vec<Vec<u8>>),
    /// Connected (or reconnected) to the publisher.
    Connected,
    /// Disconnected or heartbeat timeout.
    Disconnected,
}

/// Options of the SUB socket.
#[derive(Debug, Clone)]
pub struct SubOptions {
    /// `tcp://host:port` of the publisher.
    pub uri: String,
    /// Topics (empty = everything).
    pub topics: Vec<Vec<u8>>,
    /// ZMTP heartbeat interval and timeout.
    pub heartbeat: Option<(Duration, Duration)>,
}

/// Connect a SUB socket and forward its events to `tx` until `tx` closes or the task is
/// aborted. `tag` is passed back with each event so stale ones can be told apart.
pub fn spawn_sub<T: Copy + Send + 'static>(
    opts: SubOptions,
    tag: T,
    tx: mpsc::Sender<(T, SubNote)>,
) -> Result<tokio::task::JoinHandle<()>, NetError> {
    let mut sub = SubClient::connect(&opts.uri, &opts.topics, opts.heartbeat)
        .map_err(|e| NetError::Transport(e.to_string()))?;
    Ok(tokio::spawn(async move {
        while let Some(ev) = sub.recv().await {
            let note = match ev {
                SubEvent::Message(frames) => SubNote::Message(frames),
                SubEvent::Connected => SubNote::Connected,
                SubEvent::Disconnected | SubEvent::HeartbeatTimeout => SubNote::Disconnected,
                #[allow(unreachable_patterns)]
                _ => continue,
            };
            if tx.send((tag, note)).await.is_err() {
                break;
            }
        }
    }))
}
