//! Errors of `salt-key`: every one names the file or input concerned.

use std::io;
use std::path::{Path, PathBuf};

/// Everything `salt-key` can fail with after parsing its options.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The master configuration could not be loaded (printed as a usage error, exit 64).
    #[error("{0}")]
    Config(String),
    /// A Salt-style invocation error (`SaltInvocationError`).
    #[error("{0}")]
    Usage(String),
    /// The key store refused or failed (bad pki_dir, bad id, I/O), naming the path.
    #[error("{0}")]
    Store(#[from] salt_keystore::KeyStoreError),
    /// A key file could not be parsed, generated or written.
    #[error("{path}: {source}", path = .path.display())]
    Pki {
        /// The file concerned.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: salt_pki::Error,
    },
    /// A file-system call failed.
    #[error("{op} {path}: {source}", path = .path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// Keys selected for acceptance are not RSA public keys (each was reported).
    #[error("{0} invalid key file(s); nothing was accepted")]
    InvalidKeys(usize),
    /// A glob that cannot match a key file name.
    #[error("invalid key glob {0:?}: key names cannot contain '/' or NUL")]
    BadGlob(String),
    /// Salt's message when the key directory is not writable.
    #[error("Write access denied to \"{dir}\" for user \"{user}\".", dir = .dir.display())]
    WriteDenied {
        /// The directory.
        dir: PathBuf,
        /// The user running salt-key.
        user: String,
    },
}

impl Error {
    pub(crate) fn io(op: &'static str, path: &Path, source: io::Error) -> Self {
        Self::Io {
            op,
            path: path.to_owned(),
            source,
        }
    }

    pub(crate) fn pki(path: &Path, source: salt_pki::Error) -> Self {
        Self::Pki {
            path: path.to_owned(),
            source,
        }
    }
}

/// Result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;
