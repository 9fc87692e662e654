//! A minimal HTTP/1.1 responder for Prometheus scrapes: `GET /metrics` answers what
//! `render` returns (OpenMetrics text), anything else 404; one request per connection, the
//! request head bounded in size (2 KiB) and time (5 s). Bind it to localhost unless the
//! operator says otherwise (`metrics_host`).

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// Bind `metrics_port` on `metrics_host` and serve scrapes there on a task (`None` without
/// a port, or, logged, when the port cannot be bound: metrics are optional, the minion runs
/// on). Call it inside the tokio runtime.
pub fn spawn(
    host: std::net::IpAddr,
    port: Option<u16>,
    render: impl Fn() -> String + Send + Sync + 'static,
) -> Option<tokio::task::JoinHandle<()>> {
    match bind(host, port) {
        Ok(l) => spawn_bound(l?, render),
        Err(e) => {
            tracing::error!("cannot serve {e}");
            None
        }
    }
}

/// Bind the opt-in endpoint (`metrics_port` on `metrics_host`; no port or port 0: none)
/// before the runtime starts, so a port that cannot be bound stops the daemon that wants it
/// (the master). The error names the address.
pub fn bind(
    host: std::net::IpAddr,
    port: Option<u16>,
) -> Result<Option<std::net::TcpListener>, String> {
    let Some(addr) = port
        .filter(|p| *p != 0)
        .map(|p| std::net::SocketAddr::new(host, p))
    else {
        return Ok(None);
    };
    let bound = std::net::TcpListener::bind(addr).and_then(|l| l.set_nonblocking(true).map(|()| l));
    bound
        .map(Some)
        .map_err(|e| format!("metrics endpoint {addr}: {e}"))
}

/// Serve scrapes on a listener from [`bind`] on a task (inside the tokio runtime).
pub fn spawn_bound(
    listener: std::net::TcpListener,
    render: impl Fn() -> String + Send + Sync + 'static,
) -> Option<tokio::task::JoinHandle<()>> {
    let addr = listener.local_addr().ok()?;
    match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => {
            tracing::info!("Serving Prometheus metrics on http://{addr}/metrics");
            Some(tokio::spawn(serve(l, render)))
        }
        Err(e) => {
            tracing::error!("cannot serve metrics on {addr}: {e}");
            None
        }
    }
}

/// Serve scrapes on `listener` until the task is dropped.
pub async fn serve(
    listener: tokio::net::TcpListener,
    render: impl Fn() -> String + Send + Sync + 'static,
) {
    let render = Arc::new(render);
    loop {
        let Ok((mut conn, _)) = listener.accept().await else {
            continue;
        };
        let render = render.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 2048];
            let mut n = 0;
            let head = tokio::time::timeout(Duration::from_secs(5), async {
                while n < buf.len() {
                    match conn.read(&mut buf[n..]).await {
                        Ok(0) | Err(_) => break,
                        Ok(k) => {
                            n += k;
                            if buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                                break;
                            }
                        }
                    }
                }
            })
            .await;
            if head.is_err() {
                return;
            }
            let line = String::from_utf8_lossy(&buf[..n]);
            let path = line.split_whitespace().nth(1).unwrap_or("");
            let get = line.starts_with("GET ");
            let (status, ctype, body) =
                if get && (path == "/metrics" || path.starts_with("/metrics?")) {
                    (
                        "200 OK",
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        render(),
                    )
                } else {
                    ("404 Not Found", "text/plain", "not found\n".to_owned())
                };
            let resp = format!(
                "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(resp.as_bytes()).await;
            let _ = conn.shutdown().await;
        });
    }
}
