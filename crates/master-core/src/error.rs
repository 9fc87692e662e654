//! Why the master could not start (or stopped).

use crate::keys::master::KeyError;

/// Why the master could not start (or stopped).
#[derive(Debug, thiserror::Error)]
pub enum MasterError {
    /// Master keys.
    #[error("master keys: {0}")]
    Keys(#[from] KeyError),
    /// The pki directory.
    #[error("key store: {0}")]
    KeyStore(#[from] salt_keystore::KeyStoreError),
    /// RSA/AES setup.
    #[error("crypto: {0}")]
    Pki(#[from] salt_pki::Error),
    /// Binding a ZeroMQ socket.
    #[error("transport: {0}")]
    Transport(#[from] salt_transport::TransportError),
    /// `external_auth`, `publisher_acl` and the other eauth options (every problem named).
    #[error("external auth options: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Eauth(Vec<salt_eauth::ConfigError>),
    /// Directories and the local socket.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Cause.
        source: std::io::Error,
    },
}

pub(crate) fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> MasterError {
    let what = what.into();
    move |source| MasterError::Io { what, source }
}

pub(crate) fn mkdir(path: &std::path::Path, mode: u32) -> Result<(), MasterError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path).map_err(io_err(format!("create {}", path.display())))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(io_err(format!("chmod {}", path.display())))
}
