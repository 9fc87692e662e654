//! salt-testkit: how a test finds what it needs, and what happens when something is missing.
//!
//! A test states each prerequisite as a `Result<T, Missing>` ([`salt_venv`], [`root`],
//! [`command`], or its own [`Missing::new`]) and hands it to [`require`]:
//!
//! ```no_run
//! let Some(venv) = salt_testkit::require(salt_testkit::salt_venv("3007.17")) else {
//!     return;
//! };
//! ```
//!
//! * Under `CI=true` a missing prerequisite **fails** the test, naming what is missing: CI
//!   runs after `.ci/run` installed everything, so a green CI run means every test ran.
//! * Elsewhere the test is skipped, visibly: `SKIPPED: <reason>` on stdout and stderr, and one
//!   line `SKIPPED <test> : <reason>` appended to the file named by `SALT_RS_SKIP_LOG`
//!   (`scripts/test.sh` sets it and ends with the count of skipped tests by reason).
//!
//! Salt's venvs are found relative to the workspace, never at a machine's path:
//! `SALT_VENVS` (a `:`-separated list), then `SALT_VENV`, then `<workspace>/.venv/salt-<ver>`
//! (what `.ci/run` and `scripts/salt-venv.sh <ver>` create).
//!
//! What it does not do: start anything. Daemons, PostgreSQL and network namespaces are the
//! integration harness's (`tests/src`); it only turns their "cannot" into a [`Missing`].
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod git;
mod rerun;
mod skip;
mod venv;

use std::path::{Path, PathBuf};

pub use git::{bare, commit, git, write_file};
pub use rerun::rerun_as_nobody;
pub use skip::{SKIP_LOG_ENV, current_test, in_ci, require};
pub use venv::{DEFAULT_SALT_VERSION, SALT_VERSIONS, any_salt_venv, salt_venv, salt_venvs};

/// A prerequisite that is not there: what is missing and, where it helps, how to get it.
///
/// The reason is what the skip summary counts by, so it names the prerequisite, not the
/// test (`no Salt 3008.5 venv (...)`, `not running as root`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    reason: String,
}

impl Missing {
    /// A missing prerequisite described by `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }

    /// What is missing.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

/// The workspace's root directory (this crate is `<workspace>/crates/testkit`).
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors().nth(2).unwrap_or(here).to_path_buf()
}

/// The effective user is root.
pub fn root() -> Result<(), Missing> {
    if nix::unistd::geteuid().is_root() {
        Ok(())
    } else {
        Err(Missing::new("not running as root"))
    }
}

/// `name` on `PATH` (or in `/usr/sbin`, `/sbin`, which a non-root `PATH` often lacks).
pub fn command(name: &str) -> Result<PathBuf, Missing> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| Missing::new(format!("the `{name}` command is not installed")))
}

/// Both prerequisites, or the first one missing.
pub fn both<A, B>(a: Result<A, Missing>, b: Result<B, Missing>) -> Result<(A, B), Missing> {
    Ok((a?, b?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_root_holds_the_workspace_manifest() {
        let text = std::fs::read_to_string(workspace_root().join("Cargo.toml"));
        assert!(text.is_ok_and(|t| t.contains("[workspace]")));
    }

    #[test]
    fn commands_are_found_on_path_and_missing_ones_named() {
        assert!(command("sh").is_ok());
        let err = command("no-such-command-here").unwrap_err();
        assert_eq!(
            err.reason(),
            "the `no-such-command-here` command is not installed"
        );
    }
}
