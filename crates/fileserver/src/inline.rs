//! Answering on a socket thread: a request handled while [`Guard`] is held must stay cheap,
//! so the work that can take long (building an environment's index, hashing or reading more
//! than [`SMALL`] bytes, gzip of a big chunk, any command not in [`QUICK`]) is *declined*
//! instead: the call returns early, [`Guard::declined`] turns true, and the caller discards
//! its reply and hands the request to a worker thread, which does it without the guard.
//!
//! Nothing a declined call did is visible to the peer: file-server commands only read.

use std::cell::Cell;

/// Biggest file hashed or chunk read under the guard (one small `pread` and one memcpy).
pub const SMALL: u64 = 64 * 1024;

/// The commands that may be answered under the guard (they only look a file up, hash a
/// small one or serve a small chunk).
pub const QUICK: &[&str] = &[
    "_file_find",
    "_file_hash",
    "_file_hash_and_stat",
    "_serve_file",
    "_file_envs",
];

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static DECLINED: Cell<bool> = const { Cell::new(false) };
}

/// Held while a request is handled on a socket thread (see the module doc).
#[derive(Debug)]
pub struct Guard(());

impl Guard {
    /// Start handling one request under the guard.
    pub fn enter() -> Self {
        ACTIVE.with(|a| a.set(true));
        DECLINED.with(|d| d.set(false));
        Self(())
    }

    /// Whether some step declined: the reply must be discarded and the request handed on.
    pub fn declined(&self) -> bool {
        DECLINED.with(Cell::get)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        ACTIVE.with(|a| a.set(false));
    }
}

/// Whether a request is being handled under the guard (on a socket thread) now.
pub fn active() -> bool {
    ACTIVE.with(Cell::get)
}

/// Declines (returns true and marks the request) when under the guard; false otherwise.
/// For work that must not run on a socket thread.
pub fn decline() -> bool {
    let active = ACTIVE.with(Cell::get);
    if active {
        DECLINED.with(|d| d.set(true));
    }
    active
}

/// Declines a command that is not [`QUICK`] (or a request without one) under the guard.
pub fn declines_cmd(cmd: Option<&str>) -> bool {
    ACTIVE.with(Cell::get) && !cmd.is_some_and(|c| QUICK.contains(&c)) && decline()
}

/// Declines `bytes` of work over [`SMALL`] under the guard.
pub(crate) fn declines_size(bytes: u64) -> bool {
    bytes > SMALL && decline()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declines_only_under_the_guard() {
        assert!(!decline());
        assert!(!declines_cmd(Some("_return")));
        let g = Guard::enter();
        assert!(!declines_cmd(Some("_file_hash")));
        assert!(!declines_size(SMALL));
        assert!(!g.declined());
        assert!(declines_size(SMALL + 1));
        assert!(g.declined());
        drop(g);
        let g = Guard::enter();
        assert!(!g.declined(), "a new request starts clean");
        assert!(declines_cmd(Some("_return")));
        assert!(declines_cmd(None));
        assert!(g.declined());
        drop(g);
        assert!(!decline());
    }
}
