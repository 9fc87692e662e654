//! Key files in Salt's formats, written atomically.
//!
//! Private keys: PEM PKCS#1, mode `0400`. Public keys: PEM SPKI, mode `0644`. Every write goes
//! to a temporary file in the target directory (created `0600`, so a private key is never
//! readable by others, not even briefly), is fsynced, renamed over the target, and the
//! directory is fsynced so the rename survives a crash.

use std::fs::{self, File, Permissions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use tempfile::NamedTempFile;

use crate::{Error, PrivateKey, PublicKey};

/// Mode of private key files (Salt: umask 0277, then chmod 0400).
pub const PRIVATE_KEY_MODE: u32 = 0o400;
/// Mode of public key files.
pub const PUBLIC_KEY_MODE: u32 = 0o644;

/// Write `data` to `path` atomically with permissions `mode`: temp file in the same
/// directory, fsync, rename over `path`, fsync the directory.
pub fn atomic_write(path: &Path, data: &[u8], mode: u32) -> Result<(), Error> {
    let (tmp, dir) = write_temp(path, data, mode)?;
    tmp.persist(path)
        .map_err(|e| Error::io("rename", path, e.error))?;
    sync_dir(dir)
}

/// Like [`atomic_write`] but never replaces an existing file: returns an
/// [`Error::Io`] with kind `AlreadyExists` if `path` exists.
pub fn atomic_create(path: &Path, data: &[u8], mode: u32) -> Result<(), Error> {
    let (tmp, dir) = write_temp(path, data, mode)?;
    tmp.persist_noclobber(path)
        .map_err(|e| Error::io("create", path, e.error))?;
    sync_dir(dir)
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

fn write_temp<'a>(
    path: &'a Path,
    data: &[u8],
    mode: u32,
) -> Result<(NamedTempFile, &'a Path), Error> {
    let dir = parent_dir(path);
    let mut tmp = tempfile::Builder::new()
        .prefix(".salt-pki-")
        .tempfile_in(dir)
        .map_err(|e| Error::io("create temp file in", dir, e))?;
    let tmp_path = tmp.path().to_owned();
    tmp.write_all(data)
        .map_err(|e| Error::io("write", &tmp_path, e))?;
    tmp.as_file()
        .set_permissions(Permissions::from_mode(mode))
        .map_err(|e| Error::io("chmod", &tmp_path, e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| Error::io("fsync", &tmp_path, e))?;
    Ok((tmp, dir))
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
