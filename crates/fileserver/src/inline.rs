//! Answering on a socket thread: a request handled with a [`Budget::quick`] must stay
//! cheap, so the work that can take long (building an environment's index, hashing or
//! reading more than [`SMALL`] bytes, gzip of a big chunk, any command not in [`QUICK`]) is
//! *declined* instead: the call returns early, [`Budget::declined`] turns true, and the
//! caller discards its reply and hands the request to a worker thread, which does it with
//! [`Budget::unlimited`].
//!
//! Nothing a declined call did is visible to the peer: file-server commands only read.

use std::cell::Cell;

/// Biggest file hashed or chunk read on a quick budget (one small `pread` and one memcpy).
pub const SMALL: u64 = 64 * 1024;

/// The commands that may be answered on a quick budget (they only look a file up, hash a
/// small one or serve a small chunk).
pub const QUICK: &[&str] = &[
    "_file_find",
    "_file_hash",
    "_file_hash_and_stat",
    "_serve_file",
    "_file_envs",
];

/// How much work one request may do where it is handled (see the module doc), passed down
/// with every call that may decline; one per request.
#[derive(Debug, Default)]
pub struct Budget {
    quick: bool,
    declined: Cell<bool>,
}

impl Budget {
    /// No limit: a worker thread.
    pub const fn unlimited() -> Self {
        Self {
            quick: false,
            declined: Cell::new(false),
        }
    }

    /// Only quick work: a socket thread.
    pub const fn quick() -> Self {
        Self {
            quick: true,
            declined: Cell::new(false),
        }
    }

    /// Whether this is a quick budget.
    pub fn is_quick(&self) -> bool {
        self.quick
    }

    /// Whether some step declined: the reply must be discarded and the request handed on.
    pub fn declined(&self) -> bool {
        self.declined.get()
    }

    /// Declines (returns true and marks the request) on a quick budget; false otherwise.
    /// For work that must not run on a socket thread.
    pub fn decline(&self) -> bool {
        if self.quick {
            self.declined.set(true);
        }
        self.quick
    }

    /// Declines a command that is not [`QUICK`] (or a request without one) on a quick
    /// budget.
    pub fn declines_cmd(&self, cmd: Option<&str>) -> bool {
        self.quick && !cmd.is_some_and(|c| QUICK.contains(&c)) && self.decline()
    }

    /// Declines `bytes` of work over [`SMALL`] on a quick budget.
    pub(crate) fn declines_size(&self, bytes: u64) -> bool {
        bytes > SMALL && self.decline()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declines_only_on_a_quick_budget() {
        let any = Budget::unlimited();
        assert!(!any.decline());
        assert!(!any.declines_cmd(Some("_return")));
        assert!(!any.declines_size(SMALL + 1));
        assert!(!any.declined());
        let b = Budget::quick();
        assert!(!b.declines_cmd(Some("_file_hash")));
        assert!(!b.declines_size(SMALL));
        assert!(!b.declined());
        assert!(b.declines_size(SMALL + 1));
        assert!(b.declined());
        let b = Budget::quick();
        assert!(!b.declined(), "a new request starts clean");
        assert!(b.declines_cmd(Some("_return")));
        assert!(b.declines_cmd(None));
        assert!(b.declined());
    }
}
