//! The API's listening socket: plain HTTP (`disable_ssl`), or HTTPS through rustls with
//! `ssl_crt` and `ssl_key` as Salt's `rest_cherrypy.start` reads them (PEM files; the key
//! PKCS#1, PKCS#8 or SEC1). TLS handshakes run in their own tasks, so a client that stalls in
//! its handshake delays no other connection.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::server::TlsStream;
use tokio_util::either::Either;
use tokio_util::sync::CancellationToken;

/// How long a client may take to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Finished handshakes waiting for the server to take them.
const READY_QUEUE: usize = 64;

/// `verify_certs`' message for a missing file.
fn missing(path: &Path) -> String {
    format!(
        "Could not find a certificate: {}\nIf you want to quickly generate a self-signed \
         certificate, use the tls.create_self_signed_cert function in Salt",
        path.display()
    )
}

/// The TLS acceptor for `ssl_crt` (the certificate, then any chain certificates in the same
/// file) and `ssl_key`.
///
/// # Errors
/// A file is missing or holds no usable PEM certificate or key.
pub fn tls_acceptor(crt: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    for p in [crt, key] {
        if !p.exists() {
            return Err(missing(p));
        }
    }
    let certs = CertificateDer::pem_file_iter(crt)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("ssl_crt {}: {e}", crt.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "ssl_crt {}: no PEM certificate in the file",
            crt.display()
        ));
    }
    let key =
        PrivateKeyDer::from_pem_file(key).map_err(|e| format!("ssl_key {}: {e}", key.display()))?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
        .map_err(|e| format!("ssl_crt {} / ssl_key: {e}", crt.display()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The client's address, for `salt_ip_verify` (`authorized_ips`).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// A connection: plain TCP or TLS over TCP.
pub type Conn = Either<TcpStream, TlsStream<TcpStream>>;

/// The API's listener.
#[derive(Debug)]
pub struct ApiListener {
    local: SocketAddr,
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Plain(TcpListener),
    Tls(mpsc::Receiver<(Conn, SocketAddr)>),
}

impl ApiListener {
    /// Serves `tcp`, through `tls` when given; handshakes stop with `stop`.
    ///
    /// # Errors
    /// The socket's address cannot be read.
    pub fn new(
        tcp: TcpListener,
        tls: Option<TlsAcceptor>,
        stop: CancellationToken,
    ) -> std::io::Result<Self> {
        let local = tcp.local_addr()?;
        let inner = match tls {
            None => Inner::Plain(tcp),
            Some(acceptor) => {
                let (tx, rx) = mpsc::channel(READY_QUEUE);
                tokio::spawn(handshakes(tcp, acceptor, tx, stop));
                Inner::Tls(rx)
            }
        };
        Ok(Self { local, inner })
    }
}

/// Accepts TCP connections and runs each one's handshake in its own task.
async fn handshakes(
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    tx: mpsc::Sender<(Conn, SocketAddr)>,
    stop: CancellationToken,
) {
    loop {
        let (stream, peer) = tokio::select! {
            () = stop.cancelled() => return,
            r = tcp.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!("salt-api: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            },
        };
        let (acceptor, tx) = (acceptor.clone(), tx.clone());
        tokio::spawn(async move {
            if !starts_tls(&stream).await {
                return;
            }
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => {
                    let _ = tx.send((Either::Right(tls), peer)).await;
                }
                Ok(Err(e)) => tracing::debug!("TLS handshake with {peer} failed: {e}"),
                Err(_) => tracing::debug!("TLS handshake with {peer} timed out"),
            }
        });
    }
}

/// Whether the client opens with a TLS record (a handshake, `0x16`). A client speaking
/// plain HTTP is disconnected without an answer, as Salt's salt-api (CherryPy's builtin ssl
/// adapter) resets it.
async fn starts_tls(stream: &TcpStream) -> bool {
    let mut first = [0u8; 1];
    matches!(
        tokio::time::timeout(HANDSHAKE_TIMEOUT, stream.peek(&mut first)).await,
        Ok(Ok(1)) if first[0] == 0x16
    )
}

impl Listener for ApiListener {
    type Io = Conn;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Conn, SocketAddr) {
        match &mut self.inner {
            Inner::Plain(l) => {
                // axum's accept on a TcpListener logs and retries errors.
                let (s, peer) = Listener::accept(l).await;
                (Either::Left(s), peer)
            }
            Inner::Tls(rx) => match rx.recv().await {
                Some(c) => c,
                // The handshake task stopped: the server is stopping too.
                None => std::future::pending().await,
            },
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}

impl Connected<IncomingStream<'_, ApiListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, ApiListener>) -> Self {
        Self(*stream.remote_addr())
    }
}
