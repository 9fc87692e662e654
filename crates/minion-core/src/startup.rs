//! Start-up steps, logged at debug, with a watchdog that makes a stalled step visible.
//!
//! Every step of `salt-minion`'s start (configuration, logging, grains, directories, pid file,
//! privileges, signals, the minion key, the first sign-in) calls [`step`]; the step's name
//! and the time the previous one took go to the debug log. A watchdog thread (not the
//! runtime's: a step may block it) logs a WARNING, at the default log level, when one step
//! has taken longer than [`STALL_WARN_AFTER`], and again each time that doubles, naming the
//! step and what the thread running it is doing according to the kernel (its state and wait
//! channel from `/proc`: `D jbd2_log_wait_commit` is a disk flush, `S do_select` a wait on
//! the network...); [`finish`] ends the watch once the minion loop runs.

use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// A step running longer than this is reported as a possible stall.
pub const STALL_WARN_AFTER: Duration = Duration::from_secs(5);

struct Watch {
    started: Option<Instant>,
    current: Option<(&'static str, Instant)>,
    /// The kernel thread id running the current step (Linux), for the stall report.
    tid: Option<u32>,
    finished: bool,
}

static WATCH: Mutex<Watch> = Mutex::new(Watch {
    started: None,
    current: None,
    tid: None,
    finished: false,
});

fn lock() -> std::sync::MutexGuard<'static, Watch> {
    WATCH.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts start-up step `name` (ending the previous one), run by the calling thread. The
/// first call starts the watchdog.
pub fn step(name: &'static str) {
    static WATCHDOG: OnceLock<()> = OnceLock::new();
    WATCHDOG.get_or_init(|| {
        if let Err(e) = std::thread::Builder::new()
            .name("startup-watch".into())
            .spawn(watchdog)
        {
            tracing::debug!("start-up watchdog not started: {e}");
        }
    });
    let mut w = lock();
    if w.finished {
        return;
    }
    let now = Instant::now();
    w.started.get_or_insert(now);
    if let Some((prev, since)) = w.current {
        tracing::debug!(
            "Start-up step done: {prev} ({:.3} s)",
            now.duration_since(since).as_secs_f64()
        );
    }
    tracing::debug!("Start-up step: {name}");
    w.current = Some((name, now));
    w.tid = current_tid();
}

/// This thread's kernel id (`/proc/thread-self` is `<pid>/task/<tid>`); `None` off Linux.
fn current_tid() -> Option<u32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// What thread `tid` of this process is doing, from `/proc`: `state S, waiting in do_select`.
fn thread_report(tid: u32) -> Option<String> {
    let dir = format!("/proc/self/task/{tid}");
    let stat = std::fs::read_to_string(format!("{dir}/stat")).ok()?;
    // `pid (comm) state ...`: comm may hold spaces and parentheses; the state follows the
    // last ')'.
    let state = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .next()?
        .to_owned();
    let wchan = std::fs::read_to_string(format!("{dir}/wchan")).unwrap_or_default();
    let wchan = wchan.trim();
    Some(if wchan.is_empty() || wchan == "0" {
        format!("thread state {state}")
    } else {
        format!("thread state {state}, waiting in {wchan}")
    })
}

/// Start-up is over (the minion loop runs): logs the total and stops the watchdog.
pub fn finish() {
    let mut w = lock();
    if w.finished {
        return;
    }
    if let Some((prev, since)) = w.current.take() {
        tracing::debug!(
            "Start-up step done: {prev} ({:.3} s)",
            since.elapsed().as_secs_f64()
        );
    }
    if let Some(t0) = w.started {
        tracing::debug!("Start-up finished in {:.3} s", t0.elapsed().as_secs_f64());
    }
    w.finished = true;
}

/// Whether `step` has run for `threshold` or more: the warning to log, if any. `thread` is
/// what the kernel says the step's thread is doing.
fn stall_warning(
    name: &str,
    took: Duration,
    threshold: Duration,
    thread: Option<&str>,
) -> Option<String> {
    (took >= threshold).then(|| {
        let mut msg = format!(
            "Start-up step '{name}' has taken {:.1} s so far; the minion is not running yet",
            took.as_secs_f64()
        );
        if let Some(t) = thread {
            msg.push_str(&format!(" ({t})"));
        }
        msg
    })
}

fn watchdog() {
    // (step, its start, the next threshold to warn at)
    let mut next: Option<(&'static str, Instant, Duration)> = None;
    loop {
        std::thread::sleep(Duration::from_millis(250));
        let w = lock();
        if w.finished {
            return;
        }
        let Some((name, since)) = w.current else {
            continue;
        };
        let tid = w.tid;
        drop(w);
        let threshold = match next {
            Some((n, s, t)) if n == name && s == since => t,
            _ => STALL_WARN_AFTER,
        };
        let took = since.elapsed();
        if took < threshold {
            continue;
        }
        let thread = tid.and_then(thread_report);
        if let Some(msg) = stall_warning(name, took, threshold, thread.as_deref()) {
            tracing::warn!("{msg}");
            next = Some((name, since, threshold * 2));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_long_step_is_named_in_the_warning() {
        assert_eq!(
            stall_warning("x", Duration::from_secs(1), STALL_WARN_AFTER, None),
            None
        );
        let msg = stall_warning(
            "load or generate the minion key",
            Duration::from_secs(6),
            STALL_WARN_AFTER,
            Some("thread state D, waiting in jbd2_log_wait_commit"),
        )
        .expect("warned");
        assert!(
            msg.contains("'load or generate the minion key' has taken 6.0 s"),
            "{msg}"
        );
        assert!(
            msg.ends_with("(thread state D, waiting in jbd2_log_wait_commit)"),
            "{msg}"
        );
    }

    #[test]
    fn a_sleeping_thread_is_reported_by_the_kernel() {
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            tx.send(current_tid()).unwrap();
            std::thread::sleep(Duration::from_millis(500));
        });
        let tid = rx.recv().unwrap().expect("Linux: /proc/thread-self");
        std::thread::sleep(Duration::from_millis(100));
        let report = thread_report(tid).expect("a report");
        assert!(report.starts_with("thread state S"), "{report}");
        t.join().unwrap();
    }
}
