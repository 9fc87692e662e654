//! The minion `tok` check of every AES request, from memory.
//!
//! A `tok` is the minion's X9.31 signature of `"salt"`; it validates against the minion's
//! accepted key. Checking it costs a key-file read, a PEM parse and an RSA public operation,
//! so a (key file version, tok) pair that validated once is remembered per id. The key file
//! is still looked at on every request, by one `stat`: a deleted key must stop working at
//! once (`salt-key -d` in another process), and a replaced key (a new inode, or new
//! mtime/ctime/size) is read and checked again. With `keys.cache_driver: mmap_key` there is
//! no key file: the accepted key is read from the index on each request and the tok checked
//! again when its text changed.

use std::collections::HashMap;
use std::sync::Mutex;

use rmpv::Value;
use salt_keystore::{KeyState, KeyStore};
use salt_pki::PublicKey;
use salt_pki::files::FileVersion;

/// A tok that validated against one version of an id's accepted key.
#[derive(Clone, Debug)]
struct Verified {
    version: Version,
    tok: Vec<u8>,
}

/// Which accepted key a tok validated against: a key file's version, or (`mmap_key`, no
/// file per key) the key's text as the index holds it.
#[derive(Clone, Debug, PartialEq)]
enum Version {
    File(FileVersion),
    Pem(String),
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
        if store.is_mmap() {
            return self.valid_in_index(store, id, tok);
        }
        let Ok(path) = store.key_path(KeyState::Accepted, id) else {
            return false;
        };
        let Ok(meta) = std::fs::metadata(&path) else {
            return false;
        };
        if !meta.is_file() {
            return false;
        }
        let version = Version::File(FileVersion::of(&meta));
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
        let ok = verifies(&pem, tok);
        // Remember it only if the file read is the one stat'ed (not replaced in between).
        if ok
            && std::fs::metadata(&path).is_ok_and(|m| Version::File(FileVersion::of(&m)) == version)
        {
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

    /// [`Self::valid`] with `mmap_key`: the accepted key is read from the index on every
    /// request (a lookup in a mapped file, no `stat` to ask), and a tok is verified again
    /// when the key's text changed.
    fn valid_in_index(&self, store: &KeyStore, id: &str, tok: &[u8]) -> bool {
        let Ok(Some(pem)) = store.read_key(KeyState::Accepted, id) else {
            return false;
        };
        if self
            .lock()
            .get(id)
            .is_some_and(|v| matches!(&v.version, Version::Pem(p) if *p == pem) && v.tok == tok)
        {
            return true;
        }
        let ok = verifies(&pem, tok);
        if ok {
            self.lock().insert(
                id.to_owned(),
                Verified {
                    version: Version::Pem(pem),
                    tok: tok.to_vec(),
                },
            );
        }
        ok
    }
}

/// Whether `tok` is the X9.31 signature of `"salt"` by the key `pem`.
fn verifies(pem: &str, tok: &[u8]) -> bool {
    PublicKey::from_pem(pem.as_bytes())
        .is_ok_and(|key| key.x931_recover(tok).is_ok_and(|m| m == b"salt"))
}
