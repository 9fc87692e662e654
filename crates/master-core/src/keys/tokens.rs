//! The minion `tok` check of every AES request, from memory.
//!
//! A `tok` is the minion's X9.31 signature of `"salt"`; it validates against the minion's
//! accepted key. Checking it costs a key-file read, a PEM parse and an RSA public operation,
//! so a (key file version, tok) pair that validated once is remembered per id. The key file
//! is still looked at on every request, by one `stat`: a deleted key must stop working at
//! once (`salt-key -d` in another process), and a replaced key (a new inode, or new
//! mtime/ctime/size) is read and checked again.

use std::collections::HashMap;
use std::sync::Mutex;

use rmpv::Value;
use salt_keystore::{KeyState, KeyStore};
use salt_pki::PublicKey;
use salt_pki::files::FileVersion;

/// A tok that validated against one version of an id's accepted key file.
#[derive(Clone, Debug)]
struct Verified {
    version: FileVersion,
    tok: Vec<u8>,
}

/// The toks already verified, by minion id (see the module doc).
#[derive(Debug, Default)]
pub struct TokenCache(Mutex<HashMap<String, Verified>>);

impl TokenCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Verified>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `tok` is `id`'s valid token against its accepted key in `store`.
    pub fn valid(&self, store: &KeyStore, id: &str, tok: &Value) -> bool {
        let tok = match tok {
            Value::String(s) => s.as_bytes(),
            Value::Binary(b) => b.as_slice(),
            _ => return false,
        };
        let Ok(path) = store.key_path(KeyState::Accepted, id) else {
            return false;
        };
        let Ok(meta) = std::fs::metadata(&path) else {
            return false;
        };
        if !meta.is_file() {
            return false;
        }
        let version = FileVersion::of(&meta);
        if self
            .lock()
            .get(id)
            .is_some_and(|v| v.version == version && v.tok == tok)
        {
            return true;
        }
        let Ok(Some(pem)) = store.read_key(KeyState::Accepted, id) else {
            return false;
        };
        let Ok(key) = PublicKey::from_pem(pem.as_bytes()) else {
            return false;
        };
        let ok = key.x931_recover(tok).is_ok_and(|m| m == b"salt");
        // Remember it only if the file read is the one stat'ed (not replaced in between).
        if ok && std::fs::metadata(&path).is_ok_and(|m| FileVersion::of(&m) == version) {
            self.lock().insert(
                id.to_owned(),
                Verified {
                    version,
                    tok: tok.to_vec(),
                },
            );
        }
        ok
    }
}
