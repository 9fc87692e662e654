//! The master's event bus, read as Salt's `get_master_event(listen=True)` reads it:
//! `sock_dir/master_event_pub.ipc` (or loopback `tcp_master_pub_port` with `ipc_mode: tcp`),
//! one reader for the whole API, fanned out to every waiter through a bounded broadcast
//! channel. A reader too slow for the channel loses events (`Lagged`): an SSE client is then
//! disconnected and reconnects (`retry: 400`), and the master's bus never waits for it.
//! Events are fired into `master_event_pull.ipc` as Salt 3006-3008 writers do.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use salt_config::{IpcMode, MasterConfig};
use salt_proto::ipc::{FrameReader, PubFraming, frame, pack_event, unpack_event};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Events kept for slow readers before they lag.
const CAPACITY: usize = 4096;

/// One event: its tag and data.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The tag.
    pub tag: String,
    /// The data (JSON).
    pub data: Value,
}

/// Where the bus is.
#[derive(Debug, Clone)]
enum Addr {
    Unix(PathBuf),
    Tcp(u16),
}

/// The bus: a reader task and its broadcast.
#[derive(Debug, Clone)]
pub struct EventBus {
    tx: broadcast::Sender<Arc<Event>>,
    pull: Addr,
}

impl EventBus {
    /// Starts reading the master's bus (reconnecting while `stop` is not cancelled).
    pub fn start(cfg: &MasterConfig, stop: CancellationToken) -> Self {
        let (tx, _) = broadcast::channel(CAPACITY);
        let (pub_addr, pull) = match cfg.ipc_mode {
            IpcMode::Tcp => (
                Addr::Tcp(cfg.tcp_master_pub_port),
                Addr::Tcp(cfg.tcp_master_pull_port),
            ),
            IpcMode::Ipc => (
                Addr::Unix(cfg.sock_dir.join("master_event_pub.ipc")),
                Addr::Unix(cfg.sock_dir.join("master_event_pull.ipc")),
            ),
        };
        let bus = Self { tx, pull };
        let tx = bus.tx.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    r = read_bus(&pub_addr, &tx) => {
                        if let Err(e) = r {
                            tracing::debug!("master event bus: {e}; reconnecting");
                        }
                    }
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_millis(250)) => {}
                }
            }
        });
        bus
    }

    /// A new listener: every event from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }

    /// `SaltEvent.fire_event(data, tag)`: into the master's pull socket (with `_stamp`).
    ///
    /// # Errors
    /// The socket cannot be reached or written.
    pub async fn fire(&self, tag: &str, mut data: Value) -> std::io::Result<()> {
        if let Some(m) = data.as_object_mut() {
            m.entry("_stamp")
                .or_insert_with(|| Value::from(salt_compat::time::event_stamp_now()));
        }
        let body = pack_event(tag, &salt_compat::json::json_to_msgpack(&data));
        let bytes = frame(PubFraming::Ipc, &body);
        match &self.pull {
            Addr::Unix(p) => {
                let mut s = tokio::net::UnixStream::connect(p).await?;
                s.write_all(&bytes).await?;
                s.shutdown().await
            }
            Addr::Tcp(port) => {
                let mut s = tokio::net::TcpStream::connect(("127.0.0.1", *port)).await?;
                s.write_all(&bytes).await?;
                s.shutdown().await
            }
        }
    }
}

async fn read_bus(addr: &Addr, tx: &broadcast::Sender<Arc<Event>>) -> std::io::Result<()> {
    match addr {
        Addr::Unix(p) => pump(tokio::net::UnixStream::connect(p).await?, tx).await,
        Addr::Tcp(port) => {
            pump(
                tokio::net::TcpStream::connect(("127.0.0.1", *port)).await?,
                tx,
            )
            .await
        }
    }
}

async fn pump(
    mut stream: impl AsyncRead + Unpin,
    tx: &broadcast::Sender<Arc<Event>>,
) -> std::io::Result<()> {
    let mut reader = FrameReader::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::Error::other("the master closed its event bus"));
        }
        reader.feed(&buf[..n]).map_err(std::io::Error::other)?;
        while let Some(body) = reader.next_body().map_err(std::io::Error::other)? {
            match unpack_event(&body) {
                Ok((tag, data)) => {
                    let data = salt_compat::json::msgpack_to_json(&data);
                    // No listener is not an error.
                    let _ = tx.send(Arc::new(Event { tag, data }));
                }
                Err(e) => tracing::debug!("master event bus: undecodable event: {e}"),
            }
        }
    }
}
