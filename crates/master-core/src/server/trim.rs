//! Give the heap's free memory back once the master is idle (issue 39 item 4): a burst of
//! work (a highstate storm's returns, a fan-out to thousands of minions, a sign-in storm)
//! leaves glibc's arenas holding pages the allocator has freed but not returned, which
//! RSS then counts as the master's per-minion cost for as long as it runs. After
//! [`IDLE`] without a request, and only when requests came since the last trim,
//! `malloc_trim(0)` releases them (every arena, free pages inside the heaps included).
//! The next burst takes them back with minor faults.
#![allow(unsafe_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Requests seen so far; bumped by the request handlers.
#[derive(Debug, Default, Clone)]
pub(crate) struct Activity(Arc<AtomicU64>);

impl Activity {
    pub(crate) fn bump(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// How long without a request before the heap is trimmed.
const IDLE: Duration = Duration::from_secs(5);

/// Trim the heap after each busy period, once idle for [`IDLE`]. Ends with `stop`.
pub(crate) async fn trim_when_idle(activity: Activity, stop: tokio_util::sync::CancellationToken) {
    let mut tick = tokio::time::interval(IDLE);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut last_seen, mut trimmed_at) = (activity.get(), activity.get());
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let now = activity.get();
        let idle = now == last_seen;
        last_seen = now;
        if !idle || now == trimmed_at {
            continue;
        }
        trimmed_at = now;
        let _ = tokio::task::spawn_blocking(|| {
            let before = rss_kib();
            let released = trim();
            tracing::debug!(
                "Idle: heap trimmed (released: {released}), RSS {} -> {} KiB",
                before.unwrap_or(0),
                rss_kib().unwrap_or(0)
            );
        })
        .await;
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() -> bool {
    // SAFETY: `malloc_trim` takes a size and touches only glibc's own allocator state,
    // under the allocator's locks; it is safe to call from any thread at any time.
    unsafe { libc::malloc_trim(0) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() -> bool {
    false
}

/// This process's resident set (`/proc/self/statm`, pages), in KiB.
fn rss_kib() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4)
}

#[cfg(test)]
mod tests {
    #[test]
    fn trim_runs_and_rss_is_read() {
        let v: Vec<Vec<u8>> = (0..1000).map(|_| vec![1u8; 4096]).collect();
        drop(v);
        let _ = super::trim();
        assert!(super::rss_kib().is_some_and(|k| k > 0));
    }
}
