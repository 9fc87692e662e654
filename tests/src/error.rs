//! The harness's one error type.

use std::path::PathBuf;
use std::time::Duration;

/// Why a harness step failed. Tests usually `expect` these: the message says what to look at.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A file or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done (path or command).
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `cargo build` of our binaries failed, or a binary is missing after it.
    #[error("building our binaries failed: {0}")]
    Build(String),
    /// A helper command ran but did not succeed.
    #[error("command `{cmd}` failed ({status}): {stderr}")]
    Command {
        /// The command line.
        cmd: String,
        /// Exit status or "timed out".
        status: String,
        /// The end of its stderr.
        stderr: String,
    },
    /// A wait ran out of time.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long we waited.
        after: Duration,
    },
    /// A network namespace could not be created or configured.
    #[error("network namespace: {0}")]
    Netns(String),
    /// A daemon exited when it should be running.
    #[error("{name} exited early ({status}); logs in {log:?}; last lines:\n{tail}")]
    Exited {
        /// The daemon's name.
        name: String,
        /// Its exit status.
        status: String,
        /// Where its output went.
        log: PathBuf,
        /// The last lines of that output (the temp dir is gone when CI shows the failure).
        tail: String,
    },
}

impl HarnessError {
    /// Wraps an I/O error with what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            what: what.into(),
            source,
        }
    }
}

/// The harness's result type.
pub type Result<T, E = HarnessError> = std::result::Result<T, E>;
