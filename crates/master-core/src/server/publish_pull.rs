//! `sock_dir/publish_pull.ipc`: in Salt's master the publisher's PULL side, where the
//! master's own request workers (`ClearFuncs._send_pub`) hand it each job to publish. Salt's
//! Python `LocalClient` does not write there: it only checks that the file exists
//! (`LocalClient.pub`, "Unable to connect to the salt master publisher") before sending its
//! clear `publish` on `ret_port`, which our request server answers (`requests/clear.rs`) and
//! publishes through the same path as our `salt`. Our workers publish in-process, so nothing
//! of ours needs this socket; what listens there is a real Unix listener (mode 0600, as the
//! master user's) that takes a connection and closes it with one rate-limited log line
//! naming what it does not do, rather than a placeholder file or a socket nobody accepts
//! on. With `ipc_mode: tcp` Salt's clients skip the check; no file is made.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use salt_config::IpcMode;
use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;

use crate::shared::Shared;

/// The socket's name in `sock_dir`.
pub(crate) const PUBLISH_PULL: &str = "publish_pull.ipc";

/// Bind `sock_dir/publish_pull.ipc` and serve it until `stop`; the path to remove at the end
/// (`None` with `ipc_mode: tcp`).
pub(crate) fn start(
    shared: &Arc<Shared>,
    stop: CancellationToken,
) -> std::io::Result<Option<PathBuf>> {
    use std::os::unix::fs::PermissionsExt;
    if shared.cfg.ipc_mode == IpcMode::Tcp {
        return Ok(None);
    }
    let path = shared.cfg.sock_dir.join(PUBLISH_PULL);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let listener = UnixListener::bind(&path)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    let shared = shared.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                conn = listener.accept() => {
                    if let Ok((conn, _)) = conn {
                        drop(conn);
                        if shared.log_limit.allow("publish-pull") {
                            tracing::warn!(
                                "{PUBLISH_PULL}: publishing through this socket is not \
                                 implemented by salt-rs; connection closed (clients publish \
                                 with the clear `publish` command on ret_port)"
                            );
                        }
                    }
                }
            }
        }
    });
    Ok(Some(path))
}

/// Remove the socket file at shutdown.
pub(crate) fn remove(path: Option<&Path>) {
    if let Some(p) = path {
        let _ = std::fs::remove_file(p);
    }
}
