//! The return sink: request workers push decoded `_return`s; a `job-returns` thread takes
//! them in batches and hands each batch to the waiting `salt` commands (one lock, one
//! wake-up per command and batch), then passes it to a `job-cache` thread that writes it to
//! the job cache grouped by job ([`JobStore::save_returns`]).
//!
//! Delivery never waits for the disk: as in Salt, where the master fires a return's event
//! before its job-cache write (`salt.utils.job.store_job`), a `salt` command prints a return
//! (and may exit) before it is written. The readers of returns in this master's job
//! cache (the `jobs.*` runners but `jobs.list_jobs`, which reads only the job loads, written
//! at publish) call [`ReturnSink::flush`] first, so they see every return delivered before
//! they were called.
//!
//! The worker that decoded a return replies to the minion as soon as the return is queued,
//! so a fan-out's returns are acknowledged at the rate the workers decrypt them, not at the
//! rate the disk takes them. Returns queued and not yet written are bounded ([`CAPACITY`]):
//! beyond that the workers wait, so the disk still bounds a sustained rate.
//!
//! The `job-cache` thread also writes the job loads of publishes that do not wait for their
//! files (the reactor's `local.` reactions, [`ReturnSink::push_load`]): at once, never
//! deferred, and taken under the same lock as the returns written with them, so a job's
//! load is written before any of its returns (a return comes after its job's publish, which
//! comes after its load was queued).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rmpv::Value;

use super::store::JobStore;
use super::waiters::Waiters;

/// Returns queued or being written before a pushing worker waits for the writer: room for
/// the write-behind of five 10,000-minion fan-outs in a row, each return kept as its msgpack
/// bytes ([`Unwritten`], ~0.25 KiB with its ids: ~16 MiB when full, estimated). Salt's own
/// local job cache does not flush its writes either; a master that crashes loses at most
/// what is queued here.
pub(super) const CAPACITY: usize = 65_536;

/// The writer waits while returns keep arriving (one came less than this ago)...
const QUIET: Duration = Duration::from_millis(20);

/// ...unless this many wait to be written, a reader asks ([`ReturnSink::flush`]) or the master
/// stops. Returns that have waited [`MAX_DEFER`] are written during a burst too, but one
/// [`CHUNK`] per [`PACE`] (a steady trickle is written within `MAX_DEFER`), so back-to-back
/// fan-outs are not slowed by the previous one's writes, whatever its size (before, once
/// the oldest return had waited 2 s the writer stopped pausing at all).
const HIGH_WATER: u64 = (CAPACITY as u64) * 3 / 4;
const MAX_DEFER: Duration = Duration::from_secs(2);
const PACE: Duration = Duration::from_millis(100);

/// Returns written between two looks at the queue (so a new burst pauses the writing): 64
/// returns are ~12 ms of file creation here, the most a fan-out that starts while a chunk
/// is written waits for it (512 made the next `salt` wait up to ~90 ms).
const CHUNK: usize = 64;

/// A job load to store (Salt's `save_load`, and `save_minions` when the minions are known).
pub(super) struct Load {
    pub(super) jid: String,
    pub(super) load: Value,
    pub(super) minions: Option<Vec<String>>,
}

/// One return: (jid, minion id, load, store it in the job cache).
struct Item {
    jid: String,
    id: String,
    load: Value,
    store: bool,
}

/// A delivered return waiting for the job cache: its load as msgpack, one allocation instead
/// of a tree of `Value`s (a swarm `test.ping` return's tree: 14 allocations, ~1 KiB, 640 B
/// of them map entries of 40-byte `Value`s; its msgpack: 100 B). A 10,000-minion fan-out's
/// write-behind held them all (docs/decisions.md).
struct Unwritten {
    jid: String,
    id: String,
    load: Vec<u8>,
}

#[derive(Default)]
struct Queue {
    /// Pushed, not yet delivered.
    incoming: Vec<Item>,
    /// Job loads to write, before any return taken with them.
    loads: Vec<Load>,
    /// Job loads pushed, and written (or failed), since the start.
    loads_pushed: u64,
    loads_done: u64,
    /// Delivered, to be written (taken from the front, one chunk at a time).
    to_write: VecDeque<Unwritten>,
    /// Returns pushed since the start.
    pushed: u64,
    /// Returns delivered and written (or not to be written) since the start.
    done: u64,
    closed: bool,
    /// The delivering thread has delivered its last batch (after `closed`).
    delivered_all: bool,
    /// When the last return was pushed.
    last_push: Option<Instant>,
    /// Since when `to_write` has not been empty.
    unwritten_since: Option<Instant>,
    /// When the writer last finished a chunk.
    last_write: Option<Instant>,
    /// Callers of [`ReturnSink::flush`] waiting now.
    flushing: usize,
    /// Write at once, never defer: other masters read the store (a group's database), and
    /// a master that dies must not take acknowledged returns with it.
    eager: bool,
}

impl Queue {
    /// Whether the writer should wait for the returns to pause, and how long at most.
    fn defer(&self, now: Instant) -> Option<Duration> {
        if self.eager || self.closed || self.flushing > 0 || self.pushed - self.done >= HIGH_WATER {
            return None;
        }
        let since = now.saturating_duration_since(self.last_push?);
        if since >= QUIET {
            return None; // the returns paused
        }
        let pause = QUIET - since;
        let overdue = self
            .unwritten_since
            .is_some_and(|t| now.saturating_duration_since(t) >= MAX_DEFER);
        if !overdue {
            return Some(pause);
        }
        // Overdue during a burst: one chunk per PACE.
        let next = self.last_write.map_or(now, |t| t + PACE);
        (next > now).then(|| pause.min(next - now))
    }
}

#[derive(Default)]
struct State {
    q: Mutex<Queue>,
    /// The delivering thread waits here for returns.
    more: Condvar,
    /// The writing thread waits here for delivered returns.
    written: Condvar,
    /// Pushers wait here for room, flushers for `done`.
    progress: Condvar,
    /// A sink thread has ended (closed, or a panic): pushes are handled by the caller.
    stopped: AtomicBool,
}

impl State {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.q.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait (at most 100 ms, so the caller can re-check `stopped`) for writer progress.
    fn wait_progress<'a>(&self, q: MutexGuard<'a, Queue>) -> MutexGuard<'a, Queue> {
        self.progress
            .wait_timeout(q, Duration::from_millis(100))
            .unwrap_or_else(|e| e.into_inner())
            .0
    }

    fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }
}

/// Marks the sink stopped when a sink thread ends, however it ends.
struct StopGuard(Arc<State>);

impl Drop for StopGuard {
    fn drop(&mut self) {
        self.0.stopped.store(true, Ordering::Release);
        {
            // Under the lock: a waiter checks `stopped` with it held, then sleeps.
            let mut q = self.0.lock();
            q.delivered_all = true;
        }
        self.0.written.notify_all();
        self.0.progress.notify_all();
    }
}

/// The queue and its two threads.
pub(super) struct ReturnSink {
    state: Arc<State>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for ReturnSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReturnSink").finish_non_exhaustive()
    }
}

impl ReturnSink {
    /// Start the threads over `store`, delivering to `waiters`.
    pub(super) fn start(store: Arc<dyn JobStore>, waiters: Arc<Waiters>) -> Self {
        let state = Arc::new(State::default());
        state.lock().eager = store.read_by_other_masters();
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(f)
                .map_err(|e| tracing::error!("cannot start the {name} thread: {e}"))
                .ok()
        };
        let st = state.clone();
        let deliver = spawn(
            "job-returns",
            Box::new(move || {
                let _guard = StopGuard(st.clone());
                deliverer(&st, &waiters);
            }),
        );
        let st = state.clone();
        let write = spawn(
            "job-cache",
            Box::new(move || {
                let _guard = StopGuard(st.clone());
                writer(&st, store.as_ref());
            }),
        );
        let threads: Vec<JoinHandle<()>> = deliver.into_iter().chain(write).collect();
        if threads.len() < 2 {
            state.stopped.store(true, Ordering::Release);
        }
        Self {
            state,
            threads: Mutex::new(threads),
        }
    }

    /// Queue a return (waits while [`CAPACITY`] returns are queued or being written).
    /// `Err(load)`: the sink is not running (closed, or a thread could not start or ended);
    /// the caller handles the return itself.
    pub(super) fn push(&self, jid: &str, id: &str, load: Value, store: bool) -> Result<(), Value> {
        let st = &self.state;
        let Some(mut q) = self.room(|q| q.pushed - q.done) else {
            return Err(load);
        };
        q.incoming.push(Item {
            jid: jid.to_owned(),
            id: id.to_owned(),
            load,
            store,
        });
        q.pushed += 1;
        q.last_push = Some(Instant::now());
        if q.incoming.len() == 1 {
            st.more.notify_one();
        }
        Ok(())
    }

    /// Queue a job load for the `job-cache` thread (waits while [`CAPACITY`] loads are
    /// queued). `Err(load)`: the sink is not running; the caller stores it.
    pub(super) fn push_load(&self, load: Load) -> Result<(), Load> {
        let st = &self.state;
        let Some(mut q) = self.room(|q| q.loads_pushed - q.loads_done) else {
            return Err(load);
        };
        q.loads.push(load);
        q.loads_pushed += 1;
        drop(q);
        st.written.notify_one();
        Ok(())
    }

    /// The queue, locked, once fewer than [`CAPACITY`] of what `queued` counts wait; `None`
    /// when the sink is not running (closed, or a thread could not start or ended).
    fn room(&self, queued: impl Fn(&Queue) -> u64) -> Option<MutexGuard<'_, Queue>> {
        let st = &self.state;
        if st.stopped() {
            return None;
        }
        let mut q = st.lock();
        while queued(&q) >= CAPACITY as u64 && !q.closed && !st.stopped() {
            q = st.wait_progress(q);
        }
        (!q.closed && !st.stopped()).then_some(q)
    }

    /// Wait until every return and job load queued before this call is written (returns:
    /// delivered and written).
    pub(super) fn flush(&self) {
        self.wait_for(true);
    }

    /// Wait until every job load queued before this call is written.
    pub(super) fn flush_loads(&self) {
        self.wait_for(false);
    }

    fn wait_for(&self, returns: bool) {
        let st = &self.state;
        let mut q = st.lock();
        let (target, loads) = (q.pushed, q.loads_pushed);
        let pending = |q: &Queue| (returns && q.done < target) || q.loads_done < loads;
        if !pending(&q) {
            return;
        }
        q.flushing += 1;
        st.written.notify_all(); // no waiting for a pause
        while pending(&q) && !st.stopped() {
            q = st.wait_progress(q);
        }
        q.flushing -= 1;
    }

    /// Deliver and write what is queued, and stop the threads.
    pub(super) fn close(&self) {
        self.state.lock().closed = true;
        self.state.more.notify_all();
        self.state.written.notify_all();
        self.state.progress.notify_all();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Drop for ReturnSink {
    fn drop(&mut self) {
        self.close();
    }
}

/// Take what was pushed, hand it to the waiting commands, pass it on to the writer.
fn deliverer(state: &State, waiters: &Waiters) {
    loop {
        let batch = {
            let mut q = state.lock();
            while q.incoming.is_empty() && !q.closed {
                q = state.more.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            if q.incoming.is_empty() {
                q.delivered_all = true;
                drop(q);
                state.written.notify_all();
                return;
            }
            std::mem::take(&mut q.incoming)
        };
        waiters.deliver_many(
            batch
                .iter()
                .map(|i| (i.jid.as_str(), i.id.as_str(), &i.load)),
        );
        let n = batch.len();
        // Encoded here, outside the lock (the writer needs the bytes anyway).
        let unwritten: Vec<Unwritten> = batch
            .into_iter()
            .filter(|i| i.store)
            .map(|i| Unwritten {
                load: salt_proto::encode(&i.load),
                jid: i.jid,
                id: i.id,
            })
            .collect();
        let mut q = state.lock();
        let before = q.to_write.len();
        let unstored = n - unwritten.len();
        q.to_write.extend(unwritten);
        if unstored > 0 {
            q.done += unstored as u64;
            state.progress.notify_all();
        }
        if q.to_write.len() > before {
            if before == 0 {
                q.unwritten_since = Some(Instant::now());
            }
            state.written.notify_one();
        }
    }
}

/// Write what was delivered, one group per job, in chunks, while the returns pause: the
/// disk work (two new inodes per return in Salt's layout, 100-200 µs of kernel time each
/// here) then runs after a fan-out's burst instead of competing with it for the CPU.
fn writer(state: &State, store: &dyn JobStore) {
    loop {
        let (loads, batch) = {
            let mut q = state.lock();
            loop {
                if !q.loads.is_empty() {
                    break;
                }
                if q.to_write.is_empty() {
                    if q.delivered_all {
                        return;
                    }
                    q = state.written.wait(q).unwrap_or_else(|e| e.into_inner());
                    continue;
                }
                match q.defer(Instant::now()) {
                    Some(d) => {
                        q = state
                            .written
                            .wait_timeout(q, d)
                            .unwrap_or_else(|e| e.into_inner())
                            .0;
                    }
                    None => break,
                }
            }
            // Taken together: a return taken here had its job's load pushed before it, so
            // that load is in `loads` or written already.
            let loads = std::mem::take(&mut q.loads);
            let n = if q.to_write.is_empty() || q.defer(Instant::now()).is_some() {
                0
            } else {
                q.to_write.len().min(CHUNK)
            };
            let batch: Vec<Unwritten> = q.to_write.drain(..n).collect();
            if q.to_write.is_empty() {
                q.unwritten_since = None;
            }
            (loads, batch)
        };
        let (nl, n) = (loads.len() as u64, batch.len() as u64);
        for l in loads {
            if let Err(e) = super::store_load(store, &l.jid, &l.load, l.minions.as_deref()) {
                tracing::error!(
                    "Could not store job cache info. Job details for this run may be \
                     unavailable. ({}: {e})",
                    l.jid
                );
            }
        }
        if n > 0 {
            write_batch(store, batch);
        }
        {
            let mut q = state.lock();
            q.loads_done += nl;
            q.done += n;
            if n > 0 {
                q.last_write = Some(Instant::now());
            }
        }
        state.progress.notify_all();
    }
}

fn write_batch(store: &dyn JobStore, batch: Vec<Unwritten>) {
    let mut by_job: HashMap<String, Vec<(String, Vec<u8>)>> = HashMap::new();
    for item in batch {
        by_job
            .entry(item.jid)
            .or_default()
            .push((item.id, item.load));
    }
    for (jid, returns) in by_job {
        match store.save_encoded_returns(&jid, &returns) {
            Ok(()) => tracing::debug!("Stored {} return(s) for job {jid}", returns.len()),
            Err(e) => tracing::warn!("{} return(s) for job {jid} not stored: {e}", returns.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// During a burst the writer waits for a pause; returns overdue (waited `MAX_DEFER`) get
    /// one chunk per `PACE`, not a writer that stops pausing.
    #[test]
    fn overdue_returns_are_written_at_a_pace_during_a_burst() {
        let now = Instant::now();
        let mut q = Queue {
            pushed: 100,
            last_push: Some(now),
            unwritten_since: Some(now),
            ..Queue::default()
        };
        assert_eq!(q.defer(now), Some(QUIET), "a burst: wait for the pause");
        assert_eq!(q.defer(now + QUIET), None, "paused: write");
        let later = now + MAX_DEFER;
        q.last_push = Some(later);
        assert_eq!(
            q.defer(later),
            None,
            "overdue, nothing written yet: write a chunk"
        );
        q.last_write = Some(later);
        let wait = q.defer(later).expect("just wrote a chunk: wait");
        assert!(wait <= QUIET && !wait.is_zero());
        q.last_push = Some(later + PACE);
        assert_eq!(q.defer(later + PACE), None, "next chunk after PACE");
        q.flushing = 1;
        q.last_write = Some(later + PACE);
        assert_eq!(q.defer(later + PACE), None, "a reader flushes: no waiting");
    }
}
