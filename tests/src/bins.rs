//! Finding our daemons' binaries.
//!
//! Cargo's `CARGO_BIN_EXE_<name>` only exists for binaries of the package under test, and ours
//! live in other packages (`salt-master`, `salt-cli`, `salt-minion`, `salt-key`). So the first
//! call to [`bins`] in a test process runs `cargo build --profile test -p salt-master -p salt-cli
//! -p salt-minion -p salt-key` and then uses `<target>/debug/<name>`. The `test` profile is the one `cargo test`
//! builds with, so under `cargo test --workspace` (which has built these binaries already) the
//! inner build is a no-op rather than a second build with the `dev` profile. A
//! `OnceLock` makes that happen once per process however many tests ask in parallel; cargo
//! itself makes it a no-op when nothing changed.
//!
//! `SALT_RS_BIN_DIR=<dir>` skips the build and takes the binaries from `<dir>` (for example a
//! release build: `SALT_RS_BIN_DIR=target/release`).
//! `scripts/run-tests.py` (CI) builds them once with the workspace's feature resolution
//! (`cargo build --profile test --workspace --bins`) and sets it to `target/debug`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::error::HarnessError;

/// Paths of our four binaries.
#[derive(Debug, Clone)]
pub struct Bins {
    /// `salt-master`.
    pub master: PathBuf,
    /// `salt` (the publish CLI, package salt-cli).
    pub salt: PathBuf,
    /// `salt-minion`.
    pub minion: PathBuf,
    /// `salt-key`.
    pub key: PathBuf,
}

impl Bins {
    /// The four binaries in `dir` (their existence is checked by [`Bins::check`], so a run
    /// that replaces some of them, e.g. by real Salt's, does not need them all).
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            master: dir.join("salt-master"),
            salt: dir.join("salt"),
            minion: dir.join("salt-minion"),
            key: dir.join("salt-key"),
        }
    }

    /// Fails with the first of `paths` that is not a file.
    pub fn require(paths: &[&Path]) -> Result<(), HarnessError> {
        match paths.iter().find(|p| !p.is_file()) {
            Some(p) => Err(HarnessError::Build(format!("{} is missing", p.display()))),
            None => Ok(()),
        }
    }

    /// Fails unless all four exist.
    pub fn check(&self) -> Result<&Self, HarnessError> {
        Self::require(&[&self.master, &self.salt, &self.minion, &self.key])?;
        Ok(self)
    }
}

impl Bins {
    /// Real Salt's binaries from a venv in the same roles (for runs that use none of ours).
    pub fn from_venv(v: &crate::venv::SaltVenv) -> Self {
        Self {
            master: v.master(),
            salt: v.salt(),
            minion: v.minion(),
            key: v.key(),
        }
    }
}

/// The workspace root (`salt_testkit::workspace_root`).
pub fn workspace_root() -> PathBuf {
    salt_testkit::workspace_root()
}

/// The cargo target directory (`CARGO_TARGET_DIR` or `<workspace>/target`).
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => {
            let d = PathBuf::from(d);
            if d.is_absolute() {
                d
            } else {
                workspace_root().join(d)
            }
        }
        None => workspace_root().join("target"),
    }
}

/// Our binaries, built on first use (see the module docs). A failed build is kept and returned
/// to every caller, so each test fails with the same message instead of rebuilding. Whether
/// each binary exists is checked where it is used ([`Bins::check`], [`Bins::require`]).
pub fn bins() -> Result<Bins, HarnessError> {
    static BINS: OnceLock<Result<Bins, String>> = OnceLock::new();
    BINS.get_or_init(|| build().map_err(|e| e.to_string()))
        .clone()
        .map_err(HarnessError::Build)
}

fn build() -> Result<Bins, HarnessError> {
    if let Some(dir) = std::env::var_os("SALT_RS_BIN_DIR") {
        return Ok(Bins::in_dir(Path::new(&dir)));
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(&cargo)
        .current_dir(workspace_root())
        .args([
            "build",
            "--quiet",
            "--profile",
            "test",
            "-p",
            "salt-master",
            "-p",
            "salt-cli",
            "-p",
            "salt-minion",
            "-p",
            "salt-key",
            "-p",
            "salt-api",
        ])
        .output()
        .map_err(|e| HarnessError::io("running cargo build", e))?;
    if !out.status.success() {
        return Err(HarnessError::Build(format!(
            "cargo build -p salt-master -p salt-cli -p salt-minion -p salt-key: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(Bins::in_dir(&target_dir().join("debug")))
}
