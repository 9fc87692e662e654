//! The AES rotation dropfile `{cachedir}/.dfn` (salt-wire-protocol.md §6.1).
//!
//! `salt-key` asks a running master to rotate its publish AES key (so a deleted or
//! rejected minion can no longer read publishes) by dropping a file; the master's
//! maintenance loop polls for it.
//!
//! * Salt 3007 (`salt.crypt.dropfile`): if `.dfn` already exists, nothing is done
//!   ("rotation already requested"). Otherwise `.dfn-next` is written with the master's
//!   `id` as its whole content, chmod-ed 0400 and renamed to `.dfn`.
//!   The master (`handle_key_rotate`) rotates only if `.dfn` has mode exactly 0400 and
//!   its content equals its own `id`, and removes it only then.
//! * Salt 3006: `.dfn` is written empty, mode 0400, and the master rotates on any 0400
//!   `.dfn`, removing it whatever its mode. A 3006 master therefore also honours the
//!   3007-style file we write.

use std::fs::{self, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::error::{KeyStoreError, Result};
use crate::fsutil;

/// File name of the dropfile in the master's cachedir.
pub const DROPFILE: &str = ".dfn";
/// Name of the file written first and renamed to [`DROPFILE`] (3007).
pub const DROPFILE_NEXT: &str = ".dfn-next";
/// Exact mode the master requires.
pub const DROPFILE_MODE: u32 = 0o400;

/// Request an AES key rotation from the master whose `id` is `master_id` (3007 semantics:
/// the id is the file's content; `None` writes an empty file as Salt 3006 does, which a
/// 3007 master ignores). Returns `false` when a request was already pending (the file is
/// left untouched, as Salt does), `true` when the dropfile was written.
///
/// Unlike Salt, a stale `.dfn-next` (0400, left by a crash) is removed first instead of
/// making the write fail; the write is fsync-ed before the rename and the directory after.
/// Ownership is not changed (Salt chowns to the master `user` when run as root; a
/// binary that needs that does it after this call).
pub fn write_dropfile(cachedir: &Path, master_id: Option<&str>) -> Result<bool> {
    let dfn = cachedir.join(DROPFILE);
    match fs::symlink_metadata(&dfn) {
        Ok(m) if m.is_file() => return Ok(false),
        Ok(_) => {
            return Err(KeyStoreError::io(
                "write dropfile",
                dfn,
                io::Error::other("exists and is not a regular file"),
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(KeyStoreError::io("stat", dfn, e)),
    }
    let next = cachedir.join(DROPFILE_NEXT);
    match fs::remove_file(&next) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(KeyStoreError::io("remove", next, e)),
    }
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(DROPFILE_MODE)
        .open(&next)
        .map_err(|e| KeyStoreError::io("create", &next, e))?;
    f.write_all(master_id.unwrap_or("").as_bytes())
        .map_err(|e| KeyStoreError::io("write", &next, e))?;
    f.set_permissions(fs::Permissions::from_mode(DROPFILE_MODE))
        .map_err(|e| KeyStoreError::io("chmod", &next, e))?;
    f.sync_all()
        .map_err(|e| KeyStoreError::io("fsync", &next, e))?;
    drop(f);
    fs::rename(&next, &dfn).map_err(|e| KeyStoreError::io("rename", &next, e))?;
    fsutil::sync_dir(cachedir)?;
    Ok(true)
}

/// What the master's poll found.
#[derive(Clone, Debug, Eq, PartialEq)]
pub enum DropfileCheck {
    /// No dropfile.
    Absent,
    /// A valid request for this master: rotate now. The file has been removed.
    Rotate,
    /// A dropfile whose mode is not 0400 (Salt logs "Found dropfile with incorrect
    /// permissions, ignoring..."). Left in place under 3007 semantics.
    BadMode {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A 0400 dropfile addressed to another master id (3007). Left in place, as Salt.
    OtherMaster,
}

/// The master's poll (Salt's `handle_key_rotate`): check `{cachedir}/.dfn` and remove it
/// when it asks this master to rotate.
///
/// With `Some(id)` (3007): rotate iff mode is exactly 0400 and the content equals `id`.
/// With `None` (3006): rotate iff mode is 0400; the file is removed in every case.
pub fn check_dropfile(cachedir: &Path, master_id: Option<&str>) -> Result<DropfileCheck> {
    let dfn = cachedir.join(DROPFILE);
    let meta = match fs::metadata(&dfn) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(DropfileCheck::Absent),
        Err(e) => return Err(KeyStoreError::io("stat", dfn, e)),
    };
    let mode_ok = meta.mode() == 0o100_400;
    let verdict = match master_id {
        _ if !mode_ok => DropfileCheck::BadMode {
            path: dfn.clone(),
            mode: meta.mode() & 0o7777,
        },
        None => DropfileCheck::Rotate,
        Some(id) => match read_small(&dfn)? {
            None => return Ok(DropfileCheck::Absent),
            Some(content) if content == id.as_bytes() => DropfileCheck::Rotate,
            Some(_) => DropfileCheck::OtherMaster,
        },
    };
    if verdict == DropfileCheck::Rotate || master_id.is_none() {
        match fs::remove_file(&dfn) {
            Ok(()) => {}
            // Someone else (another poll) took it first: not ours to act on.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(DropfileCheck::Absent),
            Err(e) => return Err(KeyStoreError::io("remove", dfn, e)),
        }
    }
    Ok(verdict)
}

/// [`check_dropfile`] reduced to "rotate now?".
pub fn take_dropfile(cachedir: &Path, master_id: Option<&str>) -> Result<bool> {
    Ok(check_dropfile(cachedir, master_id)? == DropfileCheck::Rotate)
}

/// Remove a leftover dropfile (the master does this when it starts, since a fresh start
/// generates a fresh AES key anyway). Returns whether one was there.
pub fn clear_dropfile(cachedir: &Path) -> Result<bool> {
    let dfn = cachedir.join(DROPFILE);
    match fs::remove_file(&dfn) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(KeyStoreError::io("remove", dfn, e)),
    }
}

fn read_small(path: &Path) -> Result<Option<Vec<u8>>> {
    let f = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(KeyStoreError::io("read", path, e)),
    };
    let mut buf = Vec::new();
    f.take(4096)
        .read_to_end(&mut buf)
        .map_err(|e| KeyStoreError::io("read", path, e))?;
    Ok(Some(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_take_3007() {
        let d = tempfile::tempdir().unwrap();
        assert!(write_dropfile(d.path(), Some("m1")).unwrap());
        let dfn = d.path().join(DROPFILE);
        assert_eq!(fs::read(&dfn).unwrap(), b"m1");
        assert_eq!(fs::metadata(&dfn).unwrap().mode() & 0o7777, 0o400);
        assert!(!d.path().join(DROPFILE_NEXT).exists());
        // Second request while one is pending: untouched.
        assert!(!write_dropfile(d.path(), Some("other")).unwrap());
        assert_eq!(fs::read(&dfn).unwrap(), b"m1");
        // Another master ignores it and leaves it.
        assert_eq!(
            check_dropfile(d.path(), Some("m2")).unwrap(),
            DropfileCheck::OtherMaster
        );
        assert!(dfn.exists());
        assert!(take_dropfile(d.path(), Some("m1")).unwrap());
        assert!(!dfn.exists());
        assert!(!take_dropfile(d.path(), Some("m1")).unwrap());
    }

    #[test]
    fn salt_3006_semantics() {
        let d = tempfile::tempdir().unwrap();
        assert!(write_dropfile(d.path(), None).unwrap());
        assert_eq!(fs::read(d.path().join(DROPFILE)).unwrap(), b"");
        // A 3007 master ignores an empty (3006) dropfile...
        assert!(!take_dropfile(d.path(), Some("m1")).unwrap());
        // ...a 3006 master takes any 0400 one.
        assert!(take_dropfile(d.path(), None).unwrap());
        // And a 3006 master honours the 3007 file we write.
        write_dropfile(d.path(), Some("m1")).unwrap();
        assert!(take_dropfile(d.path(), None).unwrap());
    }

    #[test]
    fn bad_mode_is_ignored() {
        let d = tempfile::tempdir().unwrap();
        let dfn = d.path().join(DROPFILE);
        fs::write(&dfn, "m1").unwrap();
        fs::set_permissions(&dfn, fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(
            check_dropfile(d.path(), Some("m1")).unwrap(),
            DropfileCheck::BadMode { mode: 0o600, .. }
        ));
        assert!(dfn.exists());
        // 3006 removes it anyway, without rotating.
        assert!(!take_dropfile(d.path(), None).unwrap());
        assert!(!dfn.exists());
    }

    #[test]
    fn stale_next_file_does_not_block() {
        let d = tempfile::tempdir().unwrap();
        let next = d.path().join(DROPFILE_NEXT);
        fs::write(&next, "junk").unwrap();
        fs::set_permissions(&next, fs::Permissions::from_mode(0o400)).unwrap();
        assert!(write_dropfile(d.path(), Some("m1")).unwrap());
        assert_eq!(fs::read(d.path().join(DROPFILE)).unwrap(), b"m1");
        assert!(clear_dropfile(d.path()).unwrap());
        assert!(!clear_dropfile(d.path()).unwrap());
    }
}
