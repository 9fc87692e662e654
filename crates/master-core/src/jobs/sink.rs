//! The return sink: request workers push decoded `_return`s; one thread takes them in
//! batches, hands each batch to the waiting `salt` commands (one lock, one wake-up per
//! command and batch) and then writes it to the job cache grouped by job
//! ([`JobStore::save_returns`]: the files driver opens each job directory once per batch).
//!
//! The worker that decoded a return replies to the minion as soon as the return is queued,
//! so a fan-out's returns are acknowledged at the rate the workers decrypt them, not at the
//! rate the disk takes them. A full queue ([`CAPACITY`]) makes the workers wait: the disk
//! still bounds a sustained rate. [`ReturnSink::flush`] waits until everything queued so
//! far is written; a `salt` command's wait ends with one (`Gather`), so when `salt` exits
//! every return it printed is in the job cache, as before the sink.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use rmpv::Value;

use super::{JobStore, Waiters};

/// Returns queued before a pushing worker waits for the writer.
pub const CAPACITY: usize = 16_384;

/// One return: (jid, minion id, load, store it in the job cache).
struct Item {
    jid: String,
    id: String,
    load: Value,
    store: bool,
}

#[derive(Default)]
struct Queue {
    items: Vec<Item>,
    /// Returns pushed since the start.
    pushed: u64,
    /// Returns delivered and written since the start.
    done: u64,
    closed: bool,
}

#[derive(Default)]
struct State {
    q: Mutex<Queue>,
    /// The writer waits here for returns.
    more: Condvar,
    /// Pushers wait here for room, flushers for `done`.
    progress: Condvar,
}

impl State {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.q.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait (at most 100 ms, so the caller can re-check the writer) for writer progress.
    fn wait_progress<'a>(&self, q: MutexGuard<'a, Queue>) -> MutexGuard<'a, Queue> {
        self.progress
            .wait_timeout(q, Duration::from_millis(100))
            .unwrap_or_else(|e| e.into_inner())
            .0
    }
}

/// The queue and its writer thread.
pub(super) struct ReturnSink {
    state: Arc<State>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for ReturnSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReturnSink").finish_non_exhaustive()
    }
}

impl ReturnSink {
    /// Start the writer over `store`, delivering to `waiters`.
    pub(super) fn start(store: Arc<dyn JobStore>, waiters: Arc<Waiters>) -> Self {
        let state = Arc::new(State::default());
        let st = state.clone();
        let thread = std::thread::Builder::new()
            .name("job-returns".into())
            .spawn(move || writer(&st, store.as_ref(), &waiters))
            .map_err(|e| tracing::error!("cannot start the job-cache writer thread: {e}"))
            .ok();
        Self {
            state,
            thread: Mutex::new(thread),
        }
    }

    fn running(&self) -> bool {
        self.thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|t| !t.is_finished())
    }

    /// Queue a return (waits while the queue is full). `Err(load)`: the writer is not running
    /// (closed, or could not start); the caller handles the return itself.
    pub(super) fn push(&self, jid: &str, id: &str, load: Value, store: bool) -> Result<(), Value> {
        if !self.running() {
            return Err(load);
        }
        let mut q = self.state.lock();
        while q.items.len() >= CAPACITY && !q.closed {
            q = self.state.wait_progress(q);
            if q.items.len() >= CAPACITY && !self.running() {
                return Err(load); // the writer is gone: never wait for it
            }
        }
        if q.closed {
            return Err(load);
        }
        q.items.push(Item {
            jid: jid.to_owned(),
            id: id.to_owned(),
            load,
            store,
        });
        q.pushed += 1;
        if q.items.len() == 1 {
            self.state.more.notify_one();
        }
        Ok(())
    }

    /// Wait until every return queued before this call is delivered and written.
    pub(super) fn flush(&self) {
        let mut q = self.state.lock();
        let target = q.pushed;
        while q.done < target {
            if !self.running() {
                return;
            }
            q = self.state.wait_progress(q);
        }
    }

    /// Write what is queued and stop the writer.
    pub(super) fn close(&self) {
        self.state.lock().closed = true;
        self.state.more.notify_all();
        self.state.progress.notify_all();
        let t = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = t {
            let _ = t.join();
        }
    }
}

impl Drop for ReturnSink {
    fn drop(&mut self) {
        self.close();
    }
}

fn writer(state: &State, store: &dyn JobStore, waiters: &Waiters) {
    loop {
        let batch = {
            let mut q = state.lock();
            while q.items.is_empty() && !q.closed {
                q = state.more.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            if q.items.is_empty() {
                return;
            }
            std::mem::take(&mut q.items)
        };
        // Room again for the workers while this batch is handled.
        state.progress.notify_all();
        let n = batch.len() as u64;
        handle_batch(store, waiters, batch);
        state.lock().done += n;
        state.progress.notify_all();
    }
}

/// Deliver `batch` to the waiting commands, then store it, one group per job.
fn handle_batch(store: &dyn JobStore, waiters: &Waiters, batch: Vec<Item>) {
    waiters.deliver_many(
        batch
            .iter()
            .map(|i| (i.jid.as_str(), i.id.as_str(), &i.load)),
    );
    let mut by_job: HashMap<String, Vec<(String, Value)>> = HashMap::new();
    for item in batch.into_iter().filter(|i| i.store) {
        by_job
            .entry(item.jid)
            .or_default()
            .push((item.id, item.load));
    }
    for (jid, returns) in by_job {
        match store.save_returns(&jid, &returns) {
            Ok(()) => tracing::debug!("Stored {} return(s) for job {jid}", returns.len()),
            Err(e) => tracing::warn!("{} return(s) for job {jid} not stored: {e}", returns.len()),
        }
    }
}
