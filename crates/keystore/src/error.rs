//! The one error type of the key store.

use std::io;
use std::path::PathBuf;

use crate::KeyState;

/// Everything that can go wrong in the key store.
///
/// Every variant that concerns a file names it, so an operator reading the message knows
/// what to fix. When an operation fails with one of these errors, it has changed nothing
/// for the key concerned (bulk operations report per-key errors and go on with the rest,
/// as `salt-key` does).
#[derive(Debug, thiserror::Error)]
pub enum KeyStoreError {
    /// The minion id is not one Salt would accept (`salt.utils.verify.valid_id`), or it
    /// could not be a file name. Nothing was read or written.
    #[error("invalid minion id {id:?}: {reason}")]
    InvalidId {
        /// The id as given.
        id: String,
        /// Why it was refused.
        reason: &'static str,
    },

    /// A key file, or key text handed to a `put_*` call, is not a PEM public key.
    #[error("{path}: not a PEM public key: {reason}", path = .path.display())]
    InvalidKey {
        /// The file read, or the file that would have been written.
        path: PathBuf,
        /// What the validator objected to.
        reason: String,
    },

    /// `pki_dir` is accessible by other users and its mode was not (or could not be) set
    /// to 0700.
    #[error(
        "{path}: pki_dir has mode {mode:04o}; it must be 0700 (0750 tolerated): {}",
        if *.tried {
            "Unable to securely set the permissions (chmod 0700 failed; fix the owner or mode)"
        } else {
            "left as is (chmod 0700 it)"
        },
        path = .path.display()
    )]
    InsecurePkiDir {
        /// The pki_dir.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
        /// Whether setting 0700 was tried (and failed).
        tried: bool,
    },

    /// The group's key store (a database) refused or could not take the change; nothing
    /// changed.
    #[error("{driver} key store: {message}")]
    Backend {
        /// The driver (`postgres`).
        driver: &'static str,
        /// What went wrong, for the operator.
        message: String,
    },

    /// A path that must be a directory (pki_dir or one of its key dirs) is something else.
    #[error("{path}: exists but is not a directory", path = .path.display())]
    NotADirectory {
        /// The offending path.
        path: PathBuf,
    },

    /// `put_pending` for an id that is already accepted or rejected: the master must decide
    /// (compare keys, deny), not silently demote the key.
    #[error("minion {id:?} is already {state}; refusing to write a pending key")]
    Conflict {
        /// The minion id.
        id: String,
        /// The state it is in.
        state: KeyState,
    },

    /// A glob list could not be compiled (Python's `fnmatch` would raise too).
    #[error("invalid glob {pattern:?}: {reason}")]
    InvalidGlob {
        /// The glob item.
        pattern: String,
        /// Why.
        reason: String,
    },

    /// A file-system call failed (permissions, I/O error, ...).
    #[error("{op} {path}: {source}", path = .path.display())]
    Io {
        /// What was being done ("read", "rename", "create directory", ...).
        op: &'static str,
        /// The path concerned (for renames: the source).
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },

    /// Test-only: a crash simulated between two steps of an operation.
    #[cfg(test)]
    #[error("simulated crash at {0}")]
    SimulatedCrash(&'static str),
}

impl KeyStoreError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// True when the error is an I/O "not found": the file vanished (for example another
    /// process accepted or deleted the key meanwhile).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

/// Result alias of the crate.
pub type Result<T, E = KeyStoreError> = std::result::Result<T, E>;
