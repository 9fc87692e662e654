//! The master event bus on Salt's own endpoints, for Python tools beside the master
//! (`salt.utils.event.get_master_event`, Python `salt-run state.event`, `salt-key`, engines):
//!
//! * `sock_dir/master_event_pull.ipc` (mode 0600): events fired into it
//!   (`fire_event`, `salt-key -a` firing `salt/key`, `event.send` from runners) go onto
//!   [`crate::events::bus::EventBus`], in either of Salt's framings ([`salt_proto::ipc`]);
//! * `sock_dir/master_event_pub.ipc` (mode 0660 as 3007/3008's `ipc_publish_server`; 3006
//!   framing: 0600, 0660 with `publisher_acl`): every event on our bus, in the framing of
//!   `event_bus_framing`;
//! * with `ipc_mode: tcp`, loopback `tcp_master_pub_port` / `tcp_master_pull_port` instead.
//!
//! The bus never waits for a reader: each event is framed once and offered to every reader's
//! bounded queue ([`READER_QUEUE`] frames); a full queue loses the event, with a log line.
//! The bus is subscribed to only while a reader is connected, so events cost nothing when
//! nobody reads them.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use salt_config::{EventBusFraming, IpcMode, MasterConfig};
use salt_proto::ipc::{FrameReader, PubFraming, frame, pack_event, unpack_event};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{Notify, Semaphore, broadcast, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::events::bus::Event;
use crate::shared::Shared;

/// Frames queued per pub reader before events are dropped for it.
pub const READER_QUEUE: usize = 4096;
/// Connections per endpoint at once; more are closed at accept, with a log line.
pub const MAX_CONNECTIONS: usize = 1024;
/// Salt's socket names in `sock_dir`.
pub const PUB_SOCKET: &str = "master_event_pub.ipc";
/// See [`PUB_SOCKET`].
pub const PULL_SOCKET: &str = "master_event_pull.ipc";

trait Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Stream for T {}

enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener),
}

impl Listener {
    async fn accept(&self) -> std::io::Result<Box<dyn Stream>> {
        Ok(match self {
            Listener::Unix(l) => Box::new(l.accept().await?.0),
            Listener::Tcp(l) => Box::new(l.accept().await?.0),
        })
    }
}

/// The running endpoints.
pub struct EventIpc {
    /// Where the endpoints listen (paths or `host:port`), for the log.
    pub endpoints: [String; 2],
    files: Vec<PathBuf>,
    tasks: Vec<JoinHandle<()>>,
}

impl EventIpc {
    /// Wait for the accept loops (after `stop` fired) and remove the socket files.
    pub async fn close(self) {
        for t in self.tasks {
            let _ = t.await;
        }
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
    }
}

async fn bind_unix(path: &PathBuf, mode: u32) -> std::io::Result<Listener> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let l = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    Ok(Listener::Unix(l))
}

/// Bind both endpoints and serve them until `stop` fires.
///
/// # Errors
/// Binding a socket (or setting its mode) failed.
pub async fn start(shared: Arc<Shared>, stop: CancellationToken) -> std::io::Result<EventIpc> {
    let cfg: &MasterConfig = &shared.cfg;
    let framing = match cfg.event_bus_framing {
        EventBusFraming::Tcp => PubFraming::Tcp,
        EventBusFraming::Ipc => PubFraming::Ipc,
    };
    let (publ, pull, endpoints, files) = match cfg.ipc_mode {
        IpcMode::Ipc => {
            let pub_path = cfg.sock_dir.join(PUB_SOCKET);
            let pull_path = cfg.sock_dir.join(PULL_SOCKET);
            let pub_mode = match framing {
                PubFraming::Tcp => 0o660,
                PubFraming::Ipc if !cfg.publisher_acl.is_empty() => 0o660,
                PubFraming::Ipc => 0o600,
            };
            (
                bind_unix(&pub_path, pub_mode).await?,
                bind_unix(&pull_path, 0o600).await?,
                [
                    pub_path.display().to_string(),
                    pull_path.display().to_string(),
                ],
                vec![pub_path, pull_path],
            )
        }
        IpcMode::Tcp => {
            // 3007's `_ipc_loopback`: `::1` with `ipv6: True`.
            let host: std::net::IpAddr = if cfg.ipv6 == Some(true) {
                std::net::Ipv6Addr::LOCALHOST.into()
            } else {
                std::net::Ipv4Addr::LOCALHOST.into()
            };
            let p = TcpListener::bind((host, cfg.tcp_master_pub_port)).await?;
            let q = TcpListener::bind((host, cfg.tcp_master_pull_port)).await?;
            let endpoints = [p.local_addr()?.to_string(), q.local_addr()?.to_string()];
            (Listener::Tcp(p), Listener::Tcp(q), endpoints, Vec::new())
        }
    };
    tracing::info!(
        "Master event bus for Salt's tools: pub {} ({} framing), pull {}",
        endpoints[0],
        match framing {
            PubFraming::Tcp => "3007/3008 tcp",
            PubFraming::Ipc => "3006 ipc",
        },
        endpoints[1]
    );
    let hub = Arc::new(Hub::default());
    let tasks = vec![
        tokio::spawn(fan_out(shared.clone(), hub.clone(), framing, stop.clone())),
        tokio::spawn(accept_readers(publ, hub, shared.clone(), stop.clone())),
        tokio::spawn(accept_writers(pull, shared, stop)),
    ];
    Ok(EventIpc {
        endpoints,
        files,
        tasks,
    })
}

/// The pub side's readers: a bounded queue each.
#[derive(Default)]
struct Hub {
    readers: Mutex<Vec<mpsc::Sender<Arc<[u8]>>>>,
    joined: Notify,
}

impl Hub {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<mpsc::Sender<Arc<[u8]>>>> {
        self.readers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One event as Salt's readers read it.
fn encode(ev: &Event, framing: PubFraming) -> Arc<[u8]> {
    let data = salt_compat::json::json_to_msgpack(&ev.data);
    frame(framing, &pack_event(&ev.tag, &data)).into()
}

/// Subscribe to the bus while readers are connected; frame each event once, offer it to each.
async fn fan_out(shared: Arc<Shared>, hub: Arc<Hub>, framing: PubFraming, stop: CancellationToken) {
    loop {
        loop {
            let joined = hub.joined.notified();
            if !hub.lock().is_empty() {
                break;
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = joined => {}
            }
        }
        let mut rx = shared.events.subscribe();
        loop {
            let ev = tokio::select! {
                _ = stop.cancelled() => return,
                ev = rx.recv() => ev,
            };
            let ev = match ev {
                Ok(ev) => ev,
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(
                        "Event bus: Salt's event readers fell behind; {n} events dropped"
                    );
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            };
            let bytes = encode(&ev, framing);
            let mut readers = hub.lock();
            readers.retain(|tx| match tx.try_send(bytes.clone()) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    if shared.log_limit.allow("event-ipc-slow-reader") {
                        tracing::warn!(
                            "Event bus: a reader of {PUB_SOCKET} is too slow ({READER_QUEUE} events queued); dropping event {} for it",
                            ev.tag
                        );
                    }
                    true
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            });
            if readers.is_empty() {
                break; // unsubscribe until the next reader
            }
        }
    }
}

async fn accept_readers(
    listener: Listener,
    hub: Arc<Hub>,
    shared: Arc<Shared>,
    stop: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let conn = tokio::select! {
            _ = stop.cancelled() => return,
            c = listener.accept() => c,
        };
        let Some((conn, slot)) = admit(conn, &slots, &shared, PUB_SOCKET, "readers") else {
            continue;
        };
        let (tx, rx) = mpsc::channel(READER_QUEUE);
        hub.lock().push(tx);
        hub.joined.notify_one();
        let stop = stop.clone();
        tokio::spawn(async move {
            serve_reader(conn, rx, stop).await;
            drop(slot);
        });
    }
}

/// Write queued frames to one reader (several per write when they pile up); what the reader
/// sends is read and ignored (Salt's publisher reads only presence messages there).
async fn serve_reader(
    conn: Box<dyn Stream>,
    mut rx: mpsc::Receiver<Arc<[u8]>>,
    stop: CancellationToken,
) {
    let (mut rd, mut wr) = tokio::io::split(conn);
    let mut scratch = [0u8; 4096];
    let mut batch = Vec::new();
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            f = rx.recv() => {
                let Some(f) = f else { return };
                batch.clear();
                batch.extend_from_slice(&f);
                while batch.len() < 256 * 1024 {
                    match rx.try_recv() {
                        Ok(f) => batch.extend_from_slice(&f),
                        Err(_) => break,
                    }
                }
                if wr.write_all(&batch).await.is_err() {
                    return;
                }
            }
            n = rd.read(&mut scratch) => match n {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
        }
    }
}

/// An accepted connection within [`MAX_CONNECTIONS`] with its slot, or `None` (an accept
/// error or a full endpoint, each logged at a limited rate) — one rule for both endpoints.
fn admit(
    conn: std::io::Result<Box<dyn Stream>>,
    slots: &Arc<Semaphore>,
    shared: &Shared,
    socket: &str,
    role: &str,
) -> Option<(Box<dyn Stream>, tokio::sync::OwnedSemaphorePermit)> {
    let conn = match conn {
        Ok(c) => c,
        Err(e) => {
            if shared.log_limit.allow("event-ipc-accept") {
                tracing::warn!("Event bus: accept on {socket}: {e}");
            }
            return None;
        }
    };
    let Ok(slot) = slots.clone().try_acquire_owned() else {
        if shared.log_limit.allow("event-ipc-full") {
            tracing::warn!("Event bus: {MAX_CONNECTIONS} {role} connected; refusing another");
        }
        return None;
    };
    Some((conn, slot))
}

async fn accept_writers(listener: Listener, shared: Arc<Shared>, stop: CancellationToken) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let conn = tokio::select! {
            _ = stop.cancelled() => return,
            c = listener.accept() => c,
        };
        let Some((conn, slot)) = admit(conn, &slots, &shared, PULL_SOCKET, "writers") else {
            continue;
        };
        let shared = shared.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            serve_writer(conn, &shared, stop).await;
            drop(slot);
        });
    }
}

/// Read events from one writer onto the bus. Bytes that are not an event end the connection
/// (a stream cannot be resynchronised), with a log line.
async fn serve_writer(mut conn: Box<dyn Stream>, shared: &Arc<Shared>, stop: CancellationToken) {
    let mut reader = FrameReader::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = tokio::select! {
            _ = stop.cancelled() => return,
            n = conn.read(&mut buf) => n,
        };
        let n = match n {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if let Err(e) = reader.feed(&buf[..n]) {
            refuse(shared, &e);
            return;
        }
        loop {
            match reader.next_body() {
                Ok(Some(body)) => match unpack_event(&body) {
                    Ok((tag, data)) => {
                        let data = salt_compat::json::msgpack_to_json(&data);
                        // Salt 3008's batches (`salt -b` from Salt's own `salt`).
                        let batch = tag
                            .starts_with("salt/batch/")
                            .then(|| (shared.clone(), tag.clone(), data.clone()));
                        shared.events.forward(tag, data);
                        if let Some((s, t, d)) = batch {
                            tokio::task::spawn_blocking(move || crate::batch::on_event(&s, &t, &d));
                        }
                    }
                    Err(e) => refuse(shared, &e),
                },
                Ok(None) => break,
                Err(e) => {
                    refuse(shared, &e);
                    return;
                }
            }
        }
    }
}

fn refuse(shared: &Shared, e: &salt_proto::ipc::IpcError) {
    if shared.log_limit.allow("event-ipc-bad") {
        tracing::warn!("Event bus: bad event on {PULL_SOCKET} dropped: {e}");
    }
}
