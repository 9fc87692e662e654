//! Key files in Salt's formats, written atomically.
//!
//! Private keys: PEM PKCS#1, mode `0400`. Public keys: PEM SPKI, mode `0644`. Every write goes
//! to a temporary file in the target directory (created with its final mode, so a private key
//! is never readable by others, not even briefly), is fsynced, renamed over the target, and
//! the directory is fsynced so the rename survives a crash. [`temp_path`] and [`write_new`]
//! are the halves other crates' atomic writes (the key store's) are built from.

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Error, PrivateKey, PublicKey};

/// One version of a file: device, inode, size, and mtime and ctime to the nanosecond. Any
/// write to the file, or another file renamed into its place, makes another version (the
/// key-file check of the master's `tok` cache and the file server's per-version caches).
#[derive(Clone, Copy, Debug, Eq, Hash, PartialEq)]
pub struct FileVersion {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl FileVersion {
    /// The version `m` describes (from `stat`).
    pub fn of(m: &fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Self {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
        }
    }

    /// The size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether both are versions of the same file (device and inode), changed or not.
    pub fn same_file(&self, other: &Self) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }
}

/// Mode of private key files (Salt: umask 0277, then chmod 0400).
pub const PRIVATE_KEY_MODE: u32 = 0o400;
/// Mode of public key files.
pub const PUBLIC_KEY_MODE: u32 = 0o644;

/// Prefix of pki's own temporary files (a dotfile: no key listing shows it).
const TMP_PREFIX: &str = ".salt-pki-";

/// Write `data` to `path` atomically with permissions `mode`: temp file in the same
/// directory, fsync, rename over `path`, fsync the directory.
pub fn atomic_write(path: &Path, data: &[u8], mode: u32) -> Result<(), Error> {
    let (tmp, dir) = write_temp(path, data, mode)?;
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        Error::io("rename", path, e)
    })?;
    sync_dir(dir)
}

/// Like [`atomic_write`] but never replaces an existing file: returns an
/// [`Error::Io`] with kind `AlreadyExists` if `path` exists.
pub fn atomic_create(path: &Path, data: &[u8], mode: u32) -> Result<(), Error> {
    let (tmp, dir) = write_temp(path, data, mode)?;
    // link(2) refuses an existing target: the file appears complete or not at all.
    let linked = fs::hard_link(&tmp, path).map_err(|e| Error::io("create", path, e));
    let _ = fs::remove_file(&tmp);
    linked?;
    sync_dir(dir)
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

fn write_temp<'a>(path: &'a Path, data: &[u8], mode: u32) -> Result<(PathBuf, &'a Path), Error> {
    let dir = parent_dir(path);
    let tmp = temp_path(dir, TMP_PREFIX);
    write_new(&tmp, data, mode, true)?;
    Ok((tmp, dir))
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh temporary file name in `dir`: `<prefix><pid>.<n>`, unique per process and call.
/// With a prefix starting with `.` the file stays out of key listings (Salt's and ours), so
/// a crash never makes a half-written file look like a key; the prefix lets its owner find
/// and sweep leftovers.
pub fn temp_path(dir: &Path, prefix: &str) -> PathBuf {
    let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!("{prefix}{}.{n}", std::process::id()))
}

/// Create the new file `path` (it must not exist) with exactly the permission bits `mode`
/// (it is created with them, so it is never more readable than asked, and the umask is
/// undone), write `data`, and fsync it when `sync`. On failure the file is removed. The
/// first half of every atomic write: a rename (or link) over the final name follows.
pub fn write_new(path: &Path, data: &[u8], mode: u32, sync: bool) -> Result<(), Error> {
    let res = write_new_at(path, data, mode, sync);
    if res.is_err() {
        let _ = fs::remove_file(path);
    }
    res
}

fn write_new_at(path: &Path, data: &[u8], mode: u32, sync: bool) -> Result<(), Error> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| Error::io("create", path, e))?;
    f.write_all(data).map_err(|e| Error::io("write", path, e))?;
    f.set_permissions(Permissions::from_mode(mode))
        .map_err(|e| Error::io("chmod", path, e))?;
    if sync {
        f.sync_all().map_err(|e| Error::io("fsync", path, e))?;
    }
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<(), Error> {
    fsync_dir(dir).map_err(|e| Error::io("fsync", dir, e))
}

/// fsync the directory `dir`, so that a rename or unlink in it survives a crash.
///
/// # Errors
/// Opening or syncing the directory.
pub fn fsync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Write a private key as PEM PKCS#1 (encrypted with `passphrase` if given), mode 0400.
pub fn write_private_key(
    path: &Path,
    key: &PrivateKey,
    passphrase: Option<&[u8]>,
) -> Result<(), Error> {
    atomic_write(path, &key.to_pem(passphrase)?, PRIVATE_KEY_MODE)
}

/// Write a public key as PEM SPKI, mode 0644.
pub fn write_public_key(path: &Path, key: &PublicKey) -> Result<(), Error> {
    atomic_write(path, key.to_pem().as_bytes(), PUBLIC_KEY_MODE)
}

/// Read a PEM private key file (PKCS#1 or PKCS#8, encrypted or not).
pub fn read_private_key(path: &Path, passphrase: Option<&[u8]>) -> Result<PrivateKey, Error> {
    let pem = zeroize::Zeroizing::new(fs::read(path).map_err(|e| Error::io("read", path, e))?);
    PrivateKey::from_pem(&pem, passphrase)
}

/// Read a PEM public key file (SPKI or PKCS#1).
pub fn read_public_key(path: &Path) -> Result<PublicKey, Error> {
    let pem = fs::read(path).map_err(|e| Error::io("read", path, e))?;
    PublicKey::from_pem(&pem)
}

/// Load `DIR/NAME.pem` (and write `DIR/NAME.pub` if it is missing), or create both if the
/// private key does not exist, as Salt's `MasterKeys`/`gen_keys` do at startup. If another
/// process creates the key between our check and our write, its key wins and is loaded.
pub fn load_or_generate(dir: &Path, name: &str, bits: u32) -> Result<PrivateKey, Error> {
    let pem_path = dir.join(format!("{name}.pem"));
    let pub_path = dir.join(format!("{name}.pub"));
    let key = if pem_path.exists() {
        read_private_key(&pem_path, None)?
    } else {
        let key = PrivateKey::generate(bits)?;
        match atomic_create(&pem_path, &key.to_pem(None)?, PRIVATE_KEY_MODE) {
            Ok(()) => {
                write_public_key(&pub_path, &key.public_key())?;
                return Ok(key);
            }
            Err(Error::Io { source, .. }) if source.kind() == ErrorKind::AlreadyExists => {
                read_private_key(&pem_path, None)?
            }
            Err(e) => return Err(e),
        }
    };
    if !pub_path.exists() {
        write_public_key(&pub_path, &key.public_key())?;
    }
    Ok(key)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn modes_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let key = load_or_generate(dir.path(), "master", 2048).unwrap();
        let pem = dir.path().join("master.pem");
        let pubp = dir.path().join("master.pub");
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&pem), 0o400);
        assert_eq!(mode(&pubp), 0o644);
        let text = fs::read_to_string(&pubp).unwrap();
        assert!(text.starts_with("-----BEGIN PUBLIC KEY-----\n") && text.ends_with("-----\n"));
        // Second call loads, does not regenerate.
        let again = load_or_generate(dir.path(), "master", 2048).unwrap();
        assert_eq!(again.public_key().to_pem(), key.public_key().to_pem());
        // Missing .pub is recreated from the private key.
        fs::remove_file(&pubp).unwrap();
        load_or_generate(dir.path(), "master", 2048).unwrap();
        assert_eq!(fs::read_to_string(&pubp).unwrap(), text);
        // Overwriting a 0400 file works (rename, not open-for-write); no temp files left.
        write_private_key(&pem, &key, Some(b"pw")).unwrap();
        let back = read_private_key(&pem, Some(b"pw")).unwrap();
        assert_eq!(back.public_key().to_pem(), text);
        assert!(matches!(
            read_private_key(&pem, None),
            Err(Error::PassphraseRequired)
        ));
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(matches!(
            atomic_create(&pem, b"x", 0o600),
            Err(Error::Io { source, .. }) if source.kind() == ErrorKind::AlreadyExists
        ));
        assert!(matches!(
            read_public_key(&dir.path().join("nope.pub")),
            Err(Error::Io { op: "read", .. })
        ));
    }
}
