//! A minimal HTTP/1.1 responder for Prometheus scrapes: `GET /metrics` answers what
//! `render` returns (OpenMetrics text), anything else 404; one request per connection, the
//! request head bounded in size (2 KiB) and time (5 s). Bind it to localhost unless the
//! operator says otherwise (`metrics_host`).

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// Bind `addr` and serve scrapes there on a task (`None`, logged, when the port cannot be
/// bound: metrics are optional, the daemon runs on). Call it inside the tokio runtime.
pub async fn spawn(
    addr: std::net::SocketAddr,
    render: impl Fn() -> String + Send + Sync + 'static,
) -> Option<tokio::task::JoinHandle<()>> {
    match tokio::net::TcpListener::bind(addr).await {
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
