//! Real Salt, from a venv.
//!
//! Where the venvs are is `salt_testkit`'s rule (`SALT_VENVS`, `SALT_VENV`, then
//! `<workspace>/.venv/salt-<version>`); [`salt_venv`] and [`venv_for`] wrap its answer in a
//! [`SaltVenv`]. Pass the result to [`crate::require`]: a missing venv fails the test under
//! `CI=true` and is a recorded skip elsewhere.

use std::path::PathBuf;

use salt_testkit::Missing;

/// A Salt installation: `bin/salt-master`, `bin/salt-minion`, `bin/salt-key`, `bin/salt`.
#[derive(Debug, Clone)]
pub struct SaltVenv {
    /// The venv directory.
    pub dir: PathBuf,
}

impl SaltVenv {
    /// A venv at `dir`, if it has `bin/salt-minion`.
    pub fn at(dir: impl Into<PathBuf>) -> Option<Self> {
        let dir = dir.into();
        dir.join("bin/salt-minion")
            .is_file()
            .then_some(Self { dir })
    }
    /// `bin/<name>`.
    pub fn bin(&self, name: &str) -> PathBuf {
        self.dir.join("bin").join(name)
    }
    /// `bin/salt-master`.
    pub fn master(&self) -> PathBuf {
        self.bin("salt-master")
    }
    /// `bin/salt-minion`.
    pub fn minion(&self) -> PathBuf {
        self.bin("salt-minion")
    }
    /// `bin/salt-key`.
    pub fn key(&self) -> PathBuf {
        self.bin("salt-key")
    }
    /// `bin/salt`.
    pub fn salt(&self) -> PathBuf {
        self.bin("salt")
    }
}

/// A Salt venv of any release (`SALT_VENV` first; see `salt_testkit::any_salt_venv`).
pub fn salt_venv() -> Result<SaltVenv, Missing> {
    salt_testkit::any_salt_venv().map(|dir| SaltVenv { dir })
}

/// The venv of Salt `version`.
pub fn venv_for(version: &str) -> Result<SaltVenv, Missing> {
    salt_testkit::salt_venv(version).map(|dir| SaltVenv { dir })
}

/// Every Salt venv found, with its release, one per release.
pub fn versions() -> Vec<(String, SaltVenv)> {
    salt_testkit::salt_venvs()
        .into_iter()
        .map(|(v, dir)| (v, SaltVenv { dir }))
        .collect()
}
