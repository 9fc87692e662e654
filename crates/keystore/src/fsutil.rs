//! Small file-system helpers: atomic writes, directory fsync, temp-file hygiene, and the
//! `*at` calls of bulk operations (each key reached by its name from an open directory).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _};
use std::os::fd::{AsRawFd as _, RawFd};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::error::{KeyStoreError, Result};

/// Prefix of our temporary files. They start with `.` so that Salt (and we) ignore them
/// when listing a key directory: a crash can never make a half-written file look like a key.
pub(crate) const TMP_PREFIX: &str = ".keystore-tmp.";

/// Largest key file we read; public keys are well under 4 KiB.
pub(crate) const MAX_KEY_FILE: u64 = 64 * 1024;

/// A fresh temp name in `dir`: unique per process (pid) and per call (counter).
pub(crate) fn tmp_path(dir: &Path) -> PathBuf {
    salt_pki::files::temp_path(dir, TMP_PREFIX)
}

/// Write `data` to `path` atomically with permission bits `mode`: temp file in the same
/// directory ([`write_tmp`]), rename over `path`, and with `sync` fsync the file and the
/// directory. Readers see either the old file (or none) or the complete new one; a killed
/// process never leaves a partial key. `sync` adds durability across power loss.
pub(crate) fn atomic_write(path: &Path, data: &[u8], mode: u32, sync: bool) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = write_tmp(dir, data, mode, sync)?;
    rename_tmp(&tmp, path)?;
    crash_point("atomic_write:after_rename")?;
    if sync { sync_dir(dir) } else { Ok(()) }
}

/// Rename a temp file from [`write_tmp`] to its final name (removing it on failure).
pub(crate) fn rename_tmp(tmp: &Path, path: &Path) -> Result<()> {
    crash_point("atomic_write:before_rename")?;
    fs::rename(tmp, path).map_err(|e| {
        let _ = fs::remove_file(tmp);
        KeyStoreError::io("rename", tmp, e)
    })
}

/// Write `data` to a fresh temp file in `dir` with mode `mode` (fsync-ed with `sync`);
/// returns its path. The file is a dotfile, invisible to every key listing. The writing is
/// `salt-pki`'s ([`salt_pki::files::write_new`]), which removes the file when it fails.
pub(crate) fn write_tmp(dir: &Path, data: &[u8], mode: u32, sync: bool) -> Result<PathBuf> {
    let tmp = tmp_path(dir);
    salt_pki::files::write_new(&tmp, data, mode, sync).map_err(|e| match e {
        salt_pki::Error::Io { op, path, source } => KeyStoreError::io(op, path, source),
        other => KeyStoreError::io("write", &tmp, io::Error::other(other.to_string())),
    })?;
    crash_point("atomic_write:after_create")?;
    Ok(tmp)
}

/// Create the file `path`, which must not exist, holding `data` with permission bits
/// `mode`, in one step that readers see whole or not at all: an unnamed file (`O_TMPFILE`)
/// in the directory, written, then given its name (`linkat` through `/proc/self/fd`, which
/// refuses an existing name). No temporary name, no rename: half the directory updates of a
/// temp file + rename, which a first sign-in pays twice (key and session key). Not flushed
/// to disk. Returns the open file (for its metadata); `Ok(None)` when the system cannot do
/// this (a file system without `O_TMPFILE`, no `/proc`): the caller then writes a temp
/// file and renames it. `AlreadyExists` when `path` exists.
pub fn create_linked(path: &Path, data: &[u8], mode: u32, sync: bool) -> io::Result<Option<File>> {
    use nix::errno::Errno;
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let opened = OpenOptions::new()
        .write(true)
        .mode(mode)
        .custom_flags(nix::fcntl::OFlag::O_TMPFILE.bits() | nix::fcntl::OFlag::O_CLOEXEC.bits())
        .open(dir);
    let mut f = match opened {
        Ok(f) => f,
        // No O_TMPFILE here (old kernel: EISDIR; file system: EOPNOTSUPP).
        Err(e)
            if [Errno::EOPNOTSUPP, Errno::EISDIR, Errno::EINVAL]
                .iter()
                .any(|&n| e.raw_os_error() == Some(n as i32)) =>
        {
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    f.write_all(data)?;
    if sync {
        f.sync_all()?;
    }
    if mode & umask() != 0 {
        f.set_permissions(fs::Permissions::from_mode(mode))?;
    }
    let proc_path = PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()));
    match nix::unistd::linkat(
        None,
        proc_path.as_path(),
        None,
        path,
        nix::fcntl::AtFlags::AT_SYMLINK_FOLLOW,
    ) {
        Ok(()) => Ok(Some(f)),
        Err(Errno::EEXIST) => Err(io::ErrorKind::AlreadyExists.into()),
        // No /proc (or no right to link through it): the caller's way.
        Err(Errno::ENOENT | Errno::EXDEV | Errno::EPERM) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The process's umask, read once (from `/proc/self/status`, which does not change it; the
/// daemons never change theirs). Unknown: every bit, so callers always `fchmod`.
fn umask() -> u32 {
    static UMASK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *UMASK.get_or_init(|| {
        fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Umask:"))
                    .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
            })
            .unwrap_or(0o777)
    })
}

/// fsync a directory so that renames/unlinks in it are durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    salt_pki::files::fsync_dir(dir).map_err(|e| KeyStoreError::io("fsync directory", dir, e))
}

/// Read a key file: `Ok(None)` when it does not exist (or vanished), an error naming the
/// file when it is unreadable, too large, or not UTF-8.
pub(crate) fn read_key_file(path: &Path) -> Result<Option<String>> {
    let f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(KeyStoreError::io("read", path, e)),
    };
    // Room for any real key up front: one read() and the end-of-file one instead of std's
    // probing reads from 32 bytes up (a sign-in reads the minion's accepted key every time;
    // strace: 2 reads, not 7).
    let mut buf = Vec::with_capacity(4096);
    f.take(MAX_KEY_FILE + 1)
        .read_to_end(&mut buf)
        .map_err(|e| KeyStoreError::io("read", path, e))?;
    if buf.len() as u64 > MAX_KEY_FILE {
        return Err(KeyStoreError::InvalidKey {
            path: path.to_owned(),
            reason: format!("larger than {MAX_KEY_FILE} bytes"),
        });
    }
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| KeyStoreError::InvalidKey {
            path: path.to_owned(),
            reason: "not UTF-8 text".to_owned(),
        })
}

/// Open the directory `path` for the `*at` calls of a bulk operation: each key is then
/// reached by its name alone, without a path walk from `/` nor a path allocation per key.
pub(crate) fn open_dir(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_DIRECTORY.bits())
        .open(path)
}

/// `renameat(2)`: move `name` from the directory `from` to the directory `to`, keeping its
/// name. One atomic system call, as `rename(2)` of the full paths.
pub(crate) fn rename_at(from: &File, to: &File, name: &str) -> io::Result<()> {
    nix::fcntl::renameat(Some(from.as_raw_fd()), name, Some(to.as_raw_fd()), name)
        .map_err(io::Error::from)
}

/// `unlinkat(2)` of the file `name` in the directory `dir`.
pub(crate) fn unlink_at(dir: &File, name: &str) -> io::Result<()> {
    nix::unistd::unlinkat(
        Some(dir.as_raw_fd()),
        name,
        nix::unistd::UnlinkatFlags::NoRemoveDir,
    )
    .map_err(io::Error::from)
}

/// A file descriptor from `openat`, closed on drop.
struct Fd(RawFd);

impl Drop for Fd {
    fn drop(&mut self) {
        let _ = nix::unistd::close(self.0);
    }
}

/// Size of the buffer [`read_key_at`] wants: one byte more than the largest key file.
pub(crate) const KEY_BUF_LEN: usize = MAX_KEY_FILE as usize + 1;

/// Read the key file `name` of the directory `dir` (whose path is `dir_path`, for error
/// messages) into `buf` (of [`KEY_BUF_LEN`] bytes, reused from call to call, so nothing is
/// allocated per key): `Ok(Some(len))`, or `Ok(None)` when it does not exist (or vanished).
/// Errors name the file: unreadable, or larger than [`MAX_KEY_FILE`]. Opened non-blocking,
/// so a FIFO in place of a key reads as empty instead of hanging the caller.
pub(crate) fn read_key_at(
    dir: &File,
    dir_path: &Path,
    name: &str,
    buf: &mut [u8],
) -> Result<Option<usize>> {
    use nix::errno::Errno;
    use nix::fcntl::OFlag;
    let flags = OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NOCTTY | OFlag::O_NONBLOCK;
    let fd = match nix::fcntl::openat(
        Some(dir.as_raw_fd()),
        name,
        flags,
        nix::sys::stat::Mode::empty(),
    ) {
        Ok(fd) => Fd(fd),
        Err(Errno::ENOENT) => return Ok(None),
        Err(e) => return Err(KeyStoreError::io("read", dir_path.join(name), e.into())),
    };
    let mut len = 0;
    while len < buf.len() {
        match nix::unistd::read(fd.0, &mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(Errno::EINTR) => {}
            Err(e) => return Err(KeyStoreError::io("read", dir_path.join(name), e.into())),
        }
    }
    if len as u64 > MAX_KEY_FILE {
        return Err(KeyStoreError::InvalidKey {
            path: dir_path.join(name),
            reason: format!("larger than {MAX_KEY_FILE} bytes"),
        });
    }
    Ok(Some(len))
}

/// Remove our temp files in `dir` older than `max_age` (left by a crash). Returns how many.
pub(crate) fn sweep_tmp(dir: &Path, max_age: Duration) -> Result<usize> {
    let now = SystemTime::now();
    let mut removed = 0;
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(KeyStoreError::io("read directory", dir, e)),
    };
    for entry in rd {
        let entry = entry.map_err(|e| KeyStoreError::io("read directory", dir, e))?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with(TMP_PREFIX)
            && remove_if_stale(dir, &name, now, max_age)
        {
            removed += 1;
        }
    }
    Ok(removed)
}

/// Remove the temp files `names` (found by a directory read) of `dir` that are older than
/// `max_age`; returns how many.
pub(crate) fn sweep_tmp_names(
    dir: &Path,
    names: &[std::ffi::OsString],
    max_age: Duration,
) -> usize {
    let now = SystemTime::now();
    names
        .iter()
        .filter(|n| remove_if_stale(dir, n, now, max_age))
        .count()
}

fn remove_if_stale(dir: &Path, name: &std::ffi::OsStr, now: SystemTime, max_age: Duration) -> bool {
    let path = dir.join(name);
    let old = fs::symlink_metadata(&path)
        .and_then(|m| m.modified())
        .map(|t| now.duration_since(t).unwrap_or_default() >= max_age)
        .unwrap_or(false);
    old && fs::remove_file(&path).is_ok()
}

#[cfg(test)]
thread_local! {
    /// Test hook: the name of the step at which the current thread "crashes".
    pub(crate) static CRASH_AT: std::cell::Cell<Option<&'static str>> =
        const { std::cell::Cell::new(None) };
}

/// A named step boundary. In tests, returns `SimulatedCrash` when the thread asked to crash
/// there, so that the operation stops exactly as if the process had died at that point
/// (no cleanup runs for a simulated crash: callers propagate with `?` only).
#[cfg(test)]
pub(crate) fn crash_point(name: &'static str) -> Result<()> {
    if CRASH_AT.with(|c| c.get()) == Some(name) {
        return Err(KeyStoreError::SimulatedCrash(name));
    }
    Ok(())
}

/// A named step boundary (no-op outside tests).
#[cfg(not(test))]
#[inline(always)]
pub(crate) fn crash_point(_name: &'static str) -> Result<()> {
    Ok(())
}
