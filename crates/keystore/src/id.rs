//! Minion id validation (Salt's `salt.utils.verify.valid_id`).

use crate::error::{KeyStoreError, Result};

/// Longest id accepted: the usual file-name limit (`NAME_MAX`) in bytes.
pub const MAX_ID_LEN: usize = 255;

/// Check that `id` is a minion id Salt accepts and that it can name a key file.
///
/// Salt's `valid_id` refuses ids containing `/`, `\` or NUL, and ids whose join with
/// `pki_dir` does not land directly inside `pki_dir` after `normpath` (that rules out
/// the empty id, `.` and `..`). On top of that we refuse:
///
/// * ids longer than 255 bytes: they cannot be a file name (Salt fails later with an
///   `OSError` when writing the key);
/// * ids starting with `.`: Salt ignores dotfiles in every key directory, so such a key
///   would be written but could never be listed, accepted or deleted with `salt-key`; our
///   own temporary files are dotfiles too. This is a deliberate deviation: Salt's master
///   would keep such a minion pending forever, we refuse it outright.
///
/// On failure nothing has been touched.
pub fn validate_id(id: &str) -> Result<()> {
    let reason = if id.is_empty() {
        Some("empty")
    } else if id == "." || id == ".." {
        Some("is a directory reference")
    } else if id.contains('/') {
        Some("contains '/'")
    } else if id.contains('\\') {
        Some("contains '\\'")
    } else if id.contains('\0') {
        Some("contains a NUL byte")
    } else if id.len() > MAX_ID_LEN {
        Some("longer than 255 bytes")
    } else if id.starts_with('.') {
        Some("starts with '.' (Salt ignores dotfiles in key directories)")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(KeyStoreError::InvalidId {
            id: id.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_ids() {
        for id in [
            "minion1",
            "web-01.example.com",
            "UPPER",
            "a b",
            "ünïcödé",
            "x..y",
            "x..",
            "master.pem",
            "tab\there",
        ] {
            validate_id(id).unwrap_or_else(|e| panic!("{id:?}: {e}"));
        }
        validate_id(&"a".repeat(255)).unwrap();
    }

    #[test]
    fn refuses_bad_ids() {
        for id in [
            "", ".", "..", "a/b", "/abs", "../up", "a\\b", "nul\0", ".hidden", "..x",
        ] {
            let err = validate_id(id).unwrap_err();
            assert!(
                matches!(&err, KeyStoreError::InvalidId { id: got, .. } if got == id),
                "{id:?}: {err}"
            );
        }
        assert!(validate_id(&"a".repeat(256)).is_err());
        // 128 two-byte characters = 256 bytes.
        assert!(validate_id(&"é".repeat(128)).is_err());
    }
}
