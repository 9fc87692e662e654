//! Start-up steps, logged at debug, with a watchdog that makes a stalled step visible.
//!
//! Every step of `salt-minion`'s start (configuration, logging, grains, directories, pid file,
//! privileges, signals, the minion key, the first sign-in) calls [`step`]; the step's name
//! and the time the previous one took go to the debug log. A watchdog thread (not the
//! runtime's: a step may block it) logs a WARNING, at the default log level, when one step
//! has taken longer than [`STALL_WARN_AFTER`], and again each time that doubles, naming the
//! step; [`finish`] ends the watch once the minion loop runs.

use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// A step running longer than this is reported as a possible stall.
pub const STALL_WARN_AFTER: Duration = Duration::from_secs(5);

struct Watch {
    started: Option<Instant>,
    current: Option<(&'static str, Instant)>,
    finished: bool,
}

static WATCH: Mutex<Watch> = Mutex::new(Watch {
    started: None,
    current: None,
    finished: false,
});

fn lock() -> std::sync::MutexGuard<'static, Watch> {
    WATCH.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts start-up step `name` (ending the previous one). The first call starts the watchdog.
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

/// Whether `step` has run for `threshold` or more: the warning to log, if any.
fn stall_warning(name: &str, took: Duration, threshold: Duration) -> Option<String> {
    (took >= threshold).then(|| {
        format!(
            "Start-up step '{name}' has taken {:.1} s so far; the minion is not running yet",
            took.as_secs_f64()
        )
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
        drop(w);
        let threshold = match next {
            Some((n, s, t)) if n == name && s == since => t,
            _ => STALL_WARN_AFTER,
        };
        if let Some(msg) = stall_warning(name, since.elapsed(), threshold) {
            tracing::warn!("{msg}");
            next = Some((name, since, threshold * 2));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_step_is_named_in_the_warning() {
        assert_eq!(
            stall_warning("x", Duration::from_secs(1), STALL_WARN_AFTER),
            None
        );
        let msg = stall_warning(
            "load or generate the minion key",
            Duration::from_secs(6),
            STALL_WARN_AFTER,
        )
        .expect("warned");
        assert!(
            msg.contains("'load or generate the minion key' has taken 6.0 s"),
            "{msg}"
        );
    }
}
