//! A progress line on stderr for slow work (key generation, bulk operations), shown only
//! when stderr is a terminal; silent otherwise, so pipes and logs stay clean.

use std::io::{IsTerminal as _, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

const FRAMES: [char; 4] = ['|', '/', '-', '\\'];

/// A running progress display; [`finish`](Self::finish) (or drop) clears the line.
pub struct Progress {
    inner: Option<(Arc<Shared>, JoinHandle<()>)>,
}

struct Shared {
    done: AtomicUsize,
    stop: AtomicBool,
}

impl Progress {
    /// A counter "`label` done/total" when `wanted` and stderr is a terminal.
    pub fn start(label: &str, total: usize, wanted: bool) -> Self {
        Self::spawn(label, Some(total), wanted)
    }

    /// A spinner with `label` (no count) when stderr is a terminal.
    pub fn spinner(label: &str) -> Self {
        Self::spawn(label, None, true)
    }

    fn spawn(label: &str, total: Option<usize>, wanted: bool) -> Self {
        if !wanted || !std::io::stderr().is_terminal() {
            return Self { inner: None };
        }
        let shared = Arc::new(Shared {
            done: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        });
        let s = Arc::clone(&shared);
        let label = label.to_owned();
        let handle = std::thread::spawn(move || {
            let mut i = 0usize;
            while !s.stop.load(Ordering::Acquire) {
                let frame = FRAMES[i % FRAMES.len()];
                let line = match total {
                    Some(t) => format!("\r{frame} {label} {}/{t}", s.done.load(Ordering::Relaxed)),
                    None => format!("\r{frame} {label}..."),
                };
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(line.as_bytes());
                let _ = err.flush();
                drop(err);
                i += 1;
                std::thread::park_timeout(Duration::from_millis(100));
            }
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(b"\r\x1b[K");
            let _ = err.flush();
        });
        Self {
            inner: Some((shared, handle)),
        }
    }

    /// Count `n` more items done.
    pub fn inc(&self, n: usize) {
        if let Some((s, _)) = &self.inner {
            s.done.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Stop and clear the line.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some((s, h)) = self.inner.take() {
            s.stop.store(true, Ordering::Release);
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop();
    }
}
