//! Waiting for conditions instead of sleeping (`assert_eventually` style).
//!
//! Every timeout given to these helpers is multiplied by [`patience`] (env
//! `SALT_TEST_PATIENCE`, default 1), as linkerd's `assert_eventually!` does, so a slow CI machine
//! can stretch all waits at once without editing tests. Conditions are polled every 20 ms.

use std::time::{Duration, Instant};

use crate::error::HarnessError;
use crate::process::Proc;

/// How often conditions are re-checked.
pub const POLL: Duration = Duration::from_millis(20);

/// The timeout multiplier from `SALT_TEST_PATIENCE` (a positive number; default 1).
pub fn patience() -> f64 {
    std::env::var("SALT_TEST_PATIENCE")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|f| f.is_finite() && *f > 0.0)
        .unwrap_or(1.0)
}

/// `timeout` times [`patience`].
pub fn scaled(timeout: Duration) -> Duration {
    timeout.mul_f64(patience())
}

/// Polls `cond` until it is true; errors with `what` after `timeout` (scaled).
pub fn wait_until(
    what: &str,
    timeout: Duration,
    mut cond: impl FnMut() -> bool,
) -> Result<Duration, HarnessError> {
    let t0 = Instant::now();
    let limit = scaled(timeout);
    loop {
        if cond() {
            return Ok(t0.elapsed());
        }
        if t0.elapsed() >= limit {
            return Err(HarnessError::Timeout {
                what: what.into(),
                after: limit,
            });
        }
        std::thread::sleep(POLL);
    }
}

/// Polls `f` until it returns `Some`; `None` after `timeout` (scaled).
pub fn wait_until_some<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let t0 = Instant::now();
    let limit = scaled(timeout);
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if t0.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// Waits until `pattern` (a plain substring) appears in what `proc` wrote since it was started
/// (stdout, stderr and attached log files). On timeout the error carries the tail of its
/// output.
pub fn wait_for_log(proc: &Proc, pattern: &str, timeout: Duration) -> Result<(), HarnessError> {
    wait_for_log_match(proc, timeout, pattern, |text| text.contains(pattern))
}

/// Like [`wait_for_log`] with a regular expression.
pub fn wait_for_log_re(
    proc: &Proc,
    re: &regex::Regex,
    timeout: Duration,
) -> Result<(), HarnessError> {
    wait_for_log_match(proc, timeout, re.as_str(), |text| re.is_match(text))
}

fn wait_for_log_match(
    proc: &Proc,
    timeout: Duration,
    what: &str,
    found: impl Fn(&str) -> bool,
) -> Result<(), HarnessError> {
    let t0 = Instant::now();
    let limit = scaled(timeout);
    loop {
        if found(&proc.output()) {
            return Ok(());
        }
        if t0.elapsed() >= limit {
            return Err(HarnessError::Timeout {
                what: format!(
                    "{:?} in the output of {}; last lines:\n{}",
                    what,
                    proc.name(),
                    proc.tail(30)
                ),
                after: limit,
            });
        }
        std::thread::sleep(POLL);
    }
}
