//! Minion id validation: Salt's `salt.utils.verify.valid_id`, the one rule of
//! `salt_compat::id`, with the key store's error.

use crate::error::{KeyStoreError, Result};

/// Check that `id` is a minion id Salt accepts (`salt_compat::id::check_id`): no `/`, `\`
/// or NUL, and not `""`, `.` or `..`. Ids starting with `.` are valid (as in Salt, such a
/// key is a dotfile that listings skip); an id longer than the file system's name limit is
/// refused by the file system when its key is written.
///
/// On failure nothing has been touched.
pub fn validate_id(id: &str) -> Result<()> {
    salt_compat::id::check_id(id).map_err(|reason| KeyStoreError::InvalidId {
        id: id.to_owned(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn salts_rule() {
        for id in ["minion1", "web-01.example.com", "x..y", ".hidden", "..x"] {
            validate_id(id).unwrap_or_else(|e| panic!("{id:?}: {e}"));
        }
        validate_id(&"a".repeat(256)).unwrap_or_else(|e| panic!("{e}"));
        for id in ["", ".", "..", "a/b", "/abs", "../up", "a\\b", "nul\0"] {
            let err = validate_id(id).unwrap_err();
            assert!(
                matches!(&err, KeyStoreError::InvalidId { id: got, .. } if got == id),
                "{id:?}: {err}"
            );
        }
    }
}
