//! A temporary root directory per test, with short paths.
//!
//! Salt's IPC sockets live under `sock_dir` and Unix socket paths are limited to ~104 bytes, so
//! roots are created directly in `/tmp` with a short prefix (`/tmp/sltXXXXXX`), never under the
//! long cargo target dir. `SALT_TEST_KEEP=1` keeps the directory (and prints where) for a
//! post-mortem.

use std::path::{Path, PathBuf};

use crate::error::HarnessError;

/// A temporary root, removed on drop unless `SALT_TEST_KEEP=1`.
#[derive(Debug)]
pub struct TempRoot {
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
}

impl TempRoot {
    /// Creates `/tmp/slt<random>`.
    pub fn new() -> Result<Self, HarnessError> {
        let dir = tempfile::Builder::new()
            .prefix("slt")
            .tempdir_in("/tmp")
            .map_err(|e| HarnessError::io("creating a temp root in /tmp", e))?;
        let path = dir.path().to_path_buf();
        Ok(Self {
            dir: Some(dir),
            path,
        })
    }

    /// The root directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `root/<rel>`, created as a directory.
    pub fn dir(&self, rel: &str) -> Result<PathBuf, HarnessError> {
        let p = self.path.join(rel);
        std::fs::create_dir_all(&p).map_err(|e| HarnessError::io(p.display().to_string(), e))?;
        Ok(p)
    }

    /// Keeps the directory after the test (prints where it is).
    pub fn keep(&mut self) -> PathBuf {
        if let Some(d) = self.dir.take() {
            let p = d.keep();
            eprintln!("kept test root {}", p.display());
        }
        self.path.clone()
    }
}

impl Drop for TempRoot {
    fn drop(&mut self) {
        let keep = std::env::var("SALT_TEST_KEEP").is_ok_and(|v| v == "1");
        if keep || std::thread::panicking() && std::env::var_os("SALT_TEST_KEEP_ON_FAIL").is_some()
        {
            self.keep();
        }
    }
}
