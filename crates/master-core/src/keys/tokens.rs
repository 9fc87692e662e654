//! The minion `tok` check of every AES request, from memory.
//!
//! A `tok` is the minion's X9.31 signature of `"salt"`; it validates against the minion's
//! accepted key. Checking it costs a key-file read, a PEM parse and an RSA public operation,
//! so a (key file version, tok) pair that validated once is remembered per id. The key file
//! is still looked at on every request, by one `stat`: a deleted key must stop working at
//! once (`salt-key -d` in another process), and a replaced key (a new inode, or new
//! mtime/ctime/size) is read and checked again.

use std::os::unix::fs::MetadataExt;

use rmpv::Value;
use salt_keystore::KeyState;
use salt_pki::PublicKey;

use crate::shared::Shared;

/// Identity of one version of a key file: any change means "read it again".
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Stamp {
    fn of(m: &std::fs::Metadata) -> Self {
        Self {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
        }
    }
}

/// A tok that validated against one version of an id's accepted key file.
#[derive(Clone, Debug)]
pub struct Verified {
    stamp: Stamp,
    tok: Vec<u8>,
}

/// Whether `tok` is `id`'s valid token (see the module doc).
pub(crate) fn token_valid(shared: &Shared, id: &str, tok: &Value) -> bool {
    let tok = match tok {
        Value::String(s) => s.as_bytes(),
        Value::Binary(b) => b.as_slice(),
        _ => return false,
    };
    let Ok(path) = shared.store.key_path(KeyState::Accepted, id) else {
        return false;
    };
    let Ok(meta) = std::fs::metadata(&path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    let stamp = Stamp::of(&meta);
    let lock = || {
        shared
            .verified_toks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    };
    if lock()
        .get(id)
        .is_some_and(|v| v.stamp == stamp && v.tok == tok)
    {
        return true;
    }
    let Ok(Some(pem)) = shared.store.read_key(KeyState::Accepted, id) else {
        return false;
    };
    let Ok(key) = PublicKey::from_pem(pem.as_bytes()) else {
        return false;
    };
    let ok = key.x931_recover(tok).is_ok_and(|m| m == b"salt");
    // Remember it only if the file read is the one stat'ed (not replaced in between).
    if ok && std::fs::metadata(&path).is_ok_and(|m| Stamp::of(&m) == stamp) {
        lock().insert(
            id.to_owned(),
            Verified {
                stamp,
                tok: tok.to_vec(),
            },
        );
    }
    ok
}
