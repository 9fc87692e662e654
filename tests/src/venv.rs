//! Real Salt, from a venv.
//!
//! `SALT_VENV` names the venv; without it `/work/main/.venv/salt-3007.17` is used if present,
//! else `<repo>/.venv/salt-3007.17` (what `.ci/run` creates). When none is there, [`salt_venv`]
//! prints `SKIPPED: no Salt venv ...` and returns `None`: the caller returns early.

use std::path::{Path, PathBuf};

use crate::bins::workspace_root;

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

/// The default venv location (see the module docs), whether or not it exists.
pub fn default_venv_dir() -> PathBuf {
    if let Some(v) = std::env::var_os("SALT_VENV") {
        return PathBuf::from(v);
    }
    let shared = Path::new("/work/main/.venv/salt-3007.17");
    if shared.is_dir() {
        return shared.to_path_buf();
    }
    workspace_root().join(".venv/salt-3007.17")
}

/// The Salt venv, or `None` after printing `SKIPPED: no Salt venv at <dir>`.
pub fn salt_venv() -> Option<SaltVenv> {
    let dir = default_venv_dir();
    let v = SaltVenv::at(&dir);
    if v.is_none() {
        crate::skip(&format!(
            "no Salt venv at {} (set SALT_VENV or run scripts/salt-venv.sh 3007.17)",
            dir.display()
        ));
    }
    v
}
