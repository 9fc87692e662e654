//! The daemons' pid file, which is also their single-instance lock.
//!
//! Salt refuses to start a second daemon on the same pid file ("An instance is already
//! running. Exiting", exit code 1) by checking whether the pid in the file is alive. We hold
//! an exclusive `flock(2)` on the pid file for the whole life of the daemon instead: the
//! kernel drops it when the process dies, so a stale file left by a crash (or a recycled pid)
//! never blocks a start, and two starts racing each other cannot both win. The lock is taken
//! before `-d` forks, so a refused second start says so on the terminal; the forked child
//! inherits the lock and writes its own pid ([`PidFile::write_pid`]) once it handles SIGTERM.
//!
//! A start that fails never removes a pid file it does not hold.

use std::fs::File;
use std::io::{Read as _, Seek as _, Write as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use crate::process::ProcessError;

/// A locked pid file holding this process's id, removed when dropped (a clean exit).
#[derive(Debug)]
pub struct PidFile {
    path: PathBuf,
    file: Flock<File>,
}

impl PidFile {
    /// [`PidFile::lock`] then [`PidFile::write_pid`].
    pub fn create(path: &Path) -> Result<Self, ProcessError> {
        let mut pf = Self::lock(path)?;
        pf.write_pid()?;
        Ok(pf)
    }

    /// Open (or create, mode 0644, with its parent directory) `path`, take the exclusive
    /// lock and empty it. Fails with [`ProcessError::AlreadyRunning`] when another process
    /// holds the lock. Write the pid with [`PidFile::write_pid`] once the daemon handles
    /// SIGTERM (after `-d` forked and the signal handlers are in place): whoever reads a pid
    /// there may signal it at once.
    pub fn lock(path: &Path) -> Result<Self, ProcessError> {
        let err = |source| ProcessError::PidFile {
            path: path.to_path_buf(),
            source,
        };
        let dir = path.parent().unwrap_or_else(|| Path::new("."));
        std::fs::create_dir_all(dir).map_err(err)?;
        // The file may be unlinked between our open and our lock by the instance that held
        // it (its clean exit): then the lock is on a file nobody sees; open it again.
        for _ in 0..8 {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o644)
                .open(path)
                .map_err(err)?;
            let file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(f) => f,
                Err((mut f, nix::errno::Errno::EWOULDBLOCK)) => {
                    let mut text = String::new();
                    let _ = f.read_to_string(&mut text);
                    return Err(ProcessError::AlreadyRunning {
                        path: path.to_path_buf(),
                        pid: text.trim().parse().ok(),
                    });
                }
                Err((_, e)) => return Err(err(std::io::Error::from(e))),
            };
            if !same_file(&file, path) {
                continue;
            }
            file.set_len(0).map_err(err)?;
            return Ok(PidFile {
                path: path.to_path_buf(),
                file,
            });
        }
        Err(err(std::io::Error::other(
            "the pid file keeps being replaced by another process",
        )))
    }

    /// Write this process's id (the `-d` child holds the lock the parent took).
    pub fn write_pid(&mut self) -> Result<(), ProcessError> {
        write_pid(&mut self.file).map_err(|source| ProcessError::PidFile {
            path: self.path.clone(),
            source,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn write_pid(file: &mut File) -> std::io::Result<()> {
    file.set_len(0)?;
    file.rewind()?;
    writeln!(file, "{}", std::process::id())?;
    file.sync_data()
}

/// Whether `path` still names the file we hold open.
fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        // We hold the lock, so the file at `path` is ours unless someone replaced it
        // (by hand): remove only our own, then let the lock go with the descriptor.
        if same_file(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn pid_file_holds_our_pid_and_goes_away_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run/salt-minion.pid");
        let pf = PidFile::create(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(pf.path()).unwrap(),
            format!("{}\n", std::process::id())
        );
        drop(pf);
        assert!(!path.exists());
    }

    #[test]
    fn a_second_lock_is_refused_and_leaves_the_first_file_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("salt-master.pid");
        let first = PidFile::create(&path).unwrap();
        match PidFile::lock(&path) {
            Err(ProcessError::AlreadyRunning { pid, .. }) => {
                assert_eq!(pid, Some(std::process::id()));
            }
            other => panic!("expected AlreadyRunning, got {other:?}"),
        }
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{}\n", std::process::id())
        );
        drop(first);
        // A stale file (no lock held: its process died) is taken over.
        std::fs::write(&path, "999999\n").unwrap();
        let again = PidFile::create(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(again.path()).unwrap(),
            format!("{}\n", std::process::id())
        );
    }

    #[test]
    fn a_replaced_file_is_not_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.pid");
        let pf = PidFile::create(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "1\n").unwrap();
        drop(pf);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "1\n");
    }
}
