//! `sock_dir/workers.ipc`, where Salt's request server hands requests to its workers, and
//! which Python `salt-api` looks for to decide that the master runs
//! (`NetapiClient._is_master_running`). Ours is a real listener, not a placeholder file: the
//! request server itself, a ZeroMQ ROUTER on `ipc://<sock_dir>/workers.ipc` (mode 0600, as
//! Salt's) with one worker thread, answering the same requests as `ret_port`. With
//! `ipc_mode: tcp` Salt has no file there (its workers meet on `tcp_master_workers`); neither
//! do we.

use std::path::PathBuf;

use salt_config::{IpcMode, MasterConfig};
use salt_transport::{Handler, PoolServer, ServerOptions};

use crate::error::MasterError;

/// The socket's name in `sock_dir`.
pub(crate) const WORKERS_SOCKET: &str = "workers.ipc";

/// Bind the request server on `sock_dir/workers.ipc` (`None` with `ipc_mode: tcp`).
///
/// # Errors
/// Binding the socket or setting its mode failed.
pub(crate) fn bind(
    cfg: &MasterConfig,
    opts: &ServerOptions,
    handler: Handler,
) -> Result<Option<(PoolServer, PathBuf)>, MasterError> {
    if cfg.ipc_mode == IpcMode::Tcp {
        return Ok(None);
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(&cfg.sock_dir).map_err(|source| MasterError::Io {
        what: format!("create {}", cfg.sock_dir.display()),
        source,
    })?;
    let path = cfg.sock_dir.join(WORKERS_SOCKET);
    let _ = std::fs::remove_file(&path);
    let server = PoolServer::bind(&format!("ipc://{}", path.display()), opts, 1, handler)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(|source| {
        MasterError::Io {
            what: format!("chmod {}", path.display()),
            source,
        }
    })?;
    Ok(Some((server, path)))
}
