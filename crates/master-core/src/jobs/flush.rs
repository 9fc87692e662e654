//! Deferred durability of the job loads: the files and directories a publish wrote are
//! flushed to disk by one background thread, in batches, at most [`TICK`] after they were
//! written, instead of by the publish itself (docs/decisions.md, "Job loads flushed per
//! tick").
//!
//! What it keeps: a job's files are complete and named before its publish answers (they are
//! still written never half-done, `files.rs`; the reactor's `local.` reactions are the
//! exception, their loads written behind the publish, `jobs::run::JobFiles`), so a crashed
//! or killed master (SIGKILL, OOM, panic) loses nothing: the page cache outlives the
//! process. What a power cut or a kernel crash may lose is the job loads of the last tick
//! (and, as before, the newest returns); Salt's `local_cache` never flushes at all. A master
//! that stops normally flushes what is pending ([`flush_now`]).
//!
//! Why: a synchronous flush of the load, its `jid` file and their directories cost ~27 ms per
//! publish (four `fsync`s) and capped clear `publish` at ~290 round trips/s on a loaded
//! disk. A tick's batch is one `syncfs` of the job cache's file system ([`sync_all`]), not
//! an `fsync` per file.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

/// The longest a written job load waits for its flush.
pub(crate) const TICK: Duration = Duration::from_secs(1);

/// What is waiting for a flush: files (flushed first) and directories (then their entries).
#[derive(Default)]
struct Pending {
    files: BTreeSet<PathBuf>,
    dirs: BTreeSet<PathBuf>,
}

struct Flusher {
    pending: Mutex<Pending>,
    wake: Condvar,
    /// The background thread runs (else [`later`] flushes at once, as before).
    running: AtomicBool,
}

static FLUSHER: OnceLock<Flusher> = OnceLock::new();

fn flusher() -> &'static Flusher {
    let f = FLUSHER.get_or_init(|| Flusher {
        pending: Mutex::new(Pending::default()),
        wake: Condvar::new(),
        running: AtomicBool::new(false),
    });
    if !f.running.swap(true, Ordering::AcqRel) {
        let spawned = std::thread::Builder::new()
            .name("job-flush".into())
            .spawn(run);
        if let Err(e) = spawned {
            tracing::warn!("Job cache: no flush thread ({e}); job loads are flushed at once");
            f.running.store(false, Ordering::Release);
        }
    }
    f
}

/// Flush `files`, then `dirs`, within [`TICK`].
pub(crate) fn later(files: &[PathBuf], dirs: &[PathBuf]) {
    let f = flusher();
    if !f.running.load(Ordering::Acquire) {
        fsync_each(files.iter().chain(dirs));
        return;
    }
    let mut p = f.pending.lock().unwrap_or_else(|e| e.into_inner());
    let was_empty = p.files.is_empty() && p.dirs.is_empty();
    p.files.extend(files.iter().cloned());
    p.dirs.extend(dirs.iter().cloned());
    drop(p);
    if was_empty {
        f.wake.notify_one();
    }
}

/// Flush everything pending now (a master stopping; tests).
pub(crate) fn flush_now() {
    let Some(f) = FLUSHER.get() else {
        return;
    };
    let batch = std::mem::take(&mut *f.pending.lock().unwrap_or_else(|e| e.into_inner()));
    sync_all(batch.files, batch.dirs);
}

/// The thread: wait for something pending, let a tick's worth gather, flush it as one batch.
fn run() {
    let f = flusher();
    loop {
        {
            let mut p = f.pending.lock().unwrap_or_else(|e| e.into_inner());
            while p.files.is_empty() && p.dirs.is_empty() {
                p = f.wake.wait(p).unwrap_or_else(|e| e.into_inner());
            }
        }
        std::thread::sleep(TICK);
        flush_now();
    }
}

/// One `syncfs` per file system holding a pending path, instead of an `fsync` per path: a
/// tick's publishes made hundreds of `fsync`s, each a journal commit (or, on ext4 without a
/// journal, a flush of the disk's cache), and every file created meanwhile waited for them
/// (docs/benchmarks.md, "Reactor on a journaled disk"). `syncfs` writes back everything dirty
/// on that file system, the job cache's unflushed returns too. Per-path `fsync` where it
/// fails.
fn sync_all(files: BTreeSet<PathBuf>, dirs: BTreeSet<PathBuf>) {
    use std::os::fd::AsRawFd as _;
    use std::os::unix::fs::MetadataExt as _;
    // Device -> synced. Every pending path was written before this tick took it, so one
    // `syncfs` of its file system covers it.
    let mut synced = std::collections::HashMap::new();
    let mut rest = Vec::new();
    for path in files.iter().chain(dirs.iter()) {
        let dev = match std::fs::metadata(path) {
            Ok(m) => m.dev(),
            // Cleaned (`keep_jobs_seconds`) or never made: nothing to keep.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => {
                rest.push(path);
                continue;
            }
        };
        let ok = *synced.entry(dev).or_insert_with(|| {
            std::fs::File::open(path).is_ok_and(|f| nix::unistd::syncfs(f.as_raw_fd()).is_ok())
        });
        if !ok {
            rest.push(path);
        }
    }
    fsync_each(rest);
}

fn fsync_each<'a>(paths: impl IntoIterator<Item = &'a PathBuf>) {
    for path in paths {
        match std::fs::File::open(path).and_then(|f| f.sync_all()) {
            Ok(()) => {}
            // Cleaned (`keep_jobs_seconds`) or never made: nothing to keep.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("Job cache: cannot flush {}: {e}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `later` takes is flushed by the thread without anyone asking; a path that is
    /// gone by then is skipped.
    #[test]
    fn the_thread_flushes_what_is_pending() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        later(
            &[file.clone(), dir.path().join("gone")],
            &[dir.path().to_path_buf()],
        );
        let waiting = || {
            let p = flusher().pending.lock().unwrap();
            p.files.contains(&file) || p.dirs.contains(dir.path())
        };
        let t0 = std::time::Instant::now();
        while waiting() && t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!waiting(), "still pending after 60 s");
    }
}
