//! Waiting for async work from synchronous code — a template's `salt[...]` during a state
//! run, a pillar or file fetched for one — without ever blocking a runtime from inside it.
//!
//! Every path that renders templates runs on a blocking thread ([`crate::modules::call`]
//! runs `Blocking` handlers and the execution-module provider with `spawn_blocking`), where a
//! runtime handle may block. On a multi-thread runtime (`salt-call`) [`wait`] also works from
//! a worker thread (`block_in_place`); outside any runtime it starts a small one.

use std::future::Future;

use tokio::runtime::{Handle, RuntimeFlavor};

/// Run `fut` to completion from synchronous code.
pub fn wait<F: Future>(fut: F) -> Result<F::Output, String> {
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
            Ok(tokio::task::block_in_place(|| h.block_on(fut)))
        }
        // The minion daemon's current-thread runtime: callers are on its blocking threads
        // (see the module docs), which may block on it while its own thread drives it.
        Ok(h) => Ok(h.block_on(fut)),
        Err(_) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map(|rt| rt.block_on(fut))
            .map_err(|e| format!("cannot start a runtime: {e}")),
    }
}
