//! What every runner is handed: the master's state, the publisher, the stop signal, and its
//! bound arguments.

use std::sync::Arc;

use salt_transport::Publisher;
use tokio_util::sync::CancellationToken;

use crate::shared::Shared;

/// What a runner may use.
#[derive(Clone)]
pub(crate) struct Ctx {
    /// The master's state.
    pub shared: Arc<Shared>,
    /// To publish jobs (`manage.*`, `jobs.active`).
    pub publisher: Publisher,
    /// The master is stopping.
    pub stop: CancellationToken,
    /// The caller's console (`salt-run`'s stdout), when there is one.
    pub console: Option<tokio::sync::mpsc::UnboundedSender<String>>,
}

impl Ctx {
    /// Print `line` on the caller's console (nowhere without one).
    pub(crate) fn print(&self, line: &str) {
        if let Some(c) = &self.console {
            let _ = c.send(line.to_owned());
        }
    }
}

/// A runner's arguments, bound to its Salt signature.
pub(crate) type Args = salt_client::args::Bound;
