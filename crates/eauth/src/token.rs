//! Eauth tokens and where they are kept.
//!
//! [`TokenData`] is Salt's `tdata` dict (`LoadAuth.mk_token`): `start`, `expire`, `name`,
//! `eauth`, `auth_list` (with `keep_acl_in_token`), `groups`, `token`, written in that order.
//! [`TokenStore`] is the storage seam (Salt's `eauth_tokens` loader): [`LocalFsStore`] is
//! Salt 3006/3007's `localfs` (`salt/tokens/localfs.py`): one file per token under
//! `cachedir/tokens/`, named by the token, holding `salt.payload.dumps(tdata)`, written with
//! umask 0177 through `<token>.tmp` and a rename. The master group's store
//! (`eauth_tokens: postgres`, `salt_pgstore::PgTokens`) implements the same trait.
//!
//! A token is a bearer secret: no log line names one (nor a token file's path), a
//! [`TokenData`] prints it redacted and wipes it from memory when dropped.
//!
//! A token is the hex digest (`hash_type`, sha256 by default) of 512 random bytes from the
//! OS. Lookups only ever open a file named by lowercase hex, so a guessed or hostile token
//! cannot name another path; a wrong token answers exactly as an expired one (`{}`).

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;

use md5::Md5;
use rand::RngCore;
use rmpv::Value;
use salt_proto::{ValueExt, decode, encode};
use sha1::Sha1;
use sha2::{Digest, Sha224, Sha256, Sha384, Sha512};

/// Salt's `tdata`. Its `Debug` hides the token; dropping it zeroizes the token.
#[derive(Clone, PartialEq)]
pub struct TokenData {
    /// `start`: `time.time()` at creation.
    pub start: f64,
    /// `expire`: `start + token_expire`.
    pub expire: f64,
    /// `name`: the user (`load_name`).
    pub name: String,
    /// `eauth`: the backend.
    pub eauth: String,
    /// `auth_list`, present with `keep_acl_in_token` (nil when the backend has no `acl`,
    /// which is every backend implemented here, exactly as Salt stores it).
    pub auth_list: Option<Value>,
    /// `groups`: the user's groups, when the backend has `groups()` and found some.
    pub groups: Option<Vec<String>>,
    /// `token`.
    pub token: String,
    /// Keys of a token written by another writer, kept in order.
    pub extra: Vec<(Value, Value)>,
}

impl std::fmt::Debug for TokenData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenData")
            .field("start", &self.start)
            .field("expire", &self.expire)
            .field("name", &self.name)
            .field("eauth", &self.eauth)
            .field("token", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl Drop for TokenData {
    fn drop(&mut self) {
        use zeroize::Zeroize as _;
        self.token.zeroize();
    }
}

impl TokenData {
    /// The dict, keys in Salt's order.
    pub fn to_value(&self) -> Value {
        let mut m = vec![
            (Value::from("start"), Value::F64(self.start)),
            (Value::from("expire"), Value::F64(self.expire)),
            (Value::from("name"), Value::from(self.name.as_str())),
            (Value::from("eauth"), Value::from(self.eauth.as_str())),
        ];
        if let Some(acl) = &self.auth_list {
            m.push((Value::from("auth_list"), acl.clone()));
        }
        if let Some(groups) = &self.groups {
            m.push((
                Value::from("groups"),
                Value::Array(groups.iter().map(|g| Value::from(g.as_str())).collect()),
            ));
        }
        m.push((Value::from("token"), Value::from(self.token.as_str())));
        m.extend(self.extra.iter().cloned());
        Value::Map(m)
    }

    /// Read a stored dict. `None` when it is not a map (a corrupt token). A missing
    /// `expire` reads as 0, so the token counts as expired, as in Salt's `get_tok`.
    pub fn from_value(v: &Value) -> Option<Self> {
        let entries = v.as_entries()?;
        let num = |k: &str| v.get(k).and_then(ValueExt::as_number).unwrap_or(0.0);
        let text = |k: &str| {
            v.get(k)
                .and_then(ValueExt::as_text)
                .unwrap_or("")
                .to_owned()
        };
        const KNOWN: [&str; 7] = [
            "start",
            "expire",
            "name",
            "eauth",
            "auth_list",
            "groups",
            "token",
        ];
        Some(Self {
            start: num("start"),
            expire: num("expire"),
            name: text("name"),
            eauth: text("eauth"),
            auth_list: v.get("auth_list").cloned(),
            groups: v.get("groups").and_then(ValueExt::as_items).map(|items| {
                items
                    .iter()
                    .filter_map(|g| g.as_text().map(str::to_owned))
                    .collect()
            }),
            token: text("token"),
            extra: entries
                .iter()
                .filter(|(k, _)| !k.as_text().is_some_and(|k| KNOWN.contains(&k)))
                .cloned()
                .collect(),
        })
    }
}

/// Why a store could not answer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The stored token cannot be read as a token (Salt: `SaltDeserializationError`; the
    /// caller removes it).
    #[error("token data could not be deserialized")]
    Corrupt,
    /// The store failed (disk, network): the token is left in place.
    #[error("token store: {0}")]
    Io(#[from] io::Error),
}

/// Where tokens live (Salt's `eauth_tokens` modules).
pub trait TokenStore: Send + Sync + std::fmt::Debug {
    /// Store `tdata` under a new token and return it with `token` set.
    fn mk_token(&self, tdata: TokenData) -> Result<TokenData, StoreError>;
    /// The token's data; `Ok(None)` when there is no such token.
    fn get_token(&self, token: &str) -> Result<Option<TokenData>, StoreError>;
    /// Remove a token (absent is not an error to the caller; it is logged).
    fn rm_token(&self, token: &str) -> Result<(), StoreError>;
    /// Every stored token (a store that keeps only digests lists none).
    fn list_tokens(&self) -> Result<Vec<String>, StoreError>;
    /// Salt's `clean_expired_tokens`: remove every token expired before `now` (and every
    /// unreadable one); how many went. The default walks [`Self::list_tokens`].
    fn clean_expired(&self, now: f64) -> Result<usize, StoreError> {
        let mut removed = 0;
        for token in self.list_tokens()? {
            let gone = match self.get_token(&token) {
                Ok(Some(t)) => t.expire < now,
                Ok(None) => false,
                Err(StoreError::Corrupt) => true,
                Err(StoreError::Io(_)) => false,
            };
            if gone && self.rm_token(&token).is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
    }
}

/// A new token: the hex digest (`hash_type`; sha256 for a name we do not know) of 512
/// random bytes from the OS, as Salt's `localfs.mk_token`.
pub fn new_token(hash_type: &str) -> String {
    let mut random = zeroize::Zeroizing::new(vec![0u8; 512]);
    rand::rngs::OsRng.fill_bytes(&mut random);
    hex_digest(hash_type, &random).unwrap_or_else(|| hex::encode(Sha256::digest(&*random)))
}

/// Salt's `localfs` token store: `cachedir/tokens/<token>`.
#[derive(Clone, Debug)]
pub struct LocalFsStore {
    dir: PathBuf,
    hash_type: String,
}

impl LocalFsStore {
    /// A store in `dir` (Salt's `token_dir`) minting tokens with `hash_type`.
    pub fn new(dir: PathBuf, hash_type: &str) -> Self {
        Self {
            dir,
            hash_type: hash_type.to_owned(),
        }
    }

    fn path(&self, token: &str) -> Option<PathBuf> {
        is_token_name(token).then(|| self.dir.join(token))
    }
}

/// A name a localfs token file can have: lowercase hex, at most a sha512 hexdigest long.
fn is_token_name(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= 128
        && token
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl TokenStore for LocalFsStore {
    fn mk_token(&self, mut tdata: TokenData) -> Result<TokenData, StoreError> {
        if !self.dir.is_dir() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.dir)?;
        }
        let mut token = new_token(&self.hash_type);
        while self.dir.join(&token).is_file() {
            token = new_token(&self.hash_type);
        }
        tdata.token = token.clone();
        let path = self.dir.join(&token);
        let tmp = self.dir.join(format!("{token}.tmp"));
        let write = || -> io::Result<()> {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(&encode(&tdata.to_value()))?;
            f.sync_all()?;
            fs::rename(&tmp, &path)
        };
        if let Err(e) = write() {
            // Salt names the file; its name is the token.
            tracing::warn!(
                "Authentication failure: can not write a token file in \"{}\": {e}",
                self.dir.display()
            );
            let _ = fs::remove_file(&tmp);
            return Err(e.into());
        }
        Ok(tdata)
    }

    fn get_token(&self, token: &str) -> Result<Option<TokenData>, StoreError> {
        let Some(path) = self.path(token) else {
            return Ok(None);
        };
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                tracing::warn!(
                    "Authentication failure: can not read a token file in \"{}\": {e}",
                    self.dir.display()
                );
                return Err(e.into());
            }
        };
        let value = decode(&bytes).map_err(|_| StoreError::Corrupt)?;
        TokenData::from_value(&value)
            .map(Some)
            .ok_or(StoreError::Corrupt)
    }

    fn rm_token(&self, token: &str) -> Result<(), StoreError> {
        let Some(path) = self.path(token) else {
            return Ok(());
        };
        fs::remove_file(path).map_err(|e| {
            tracing::warn!(
                "Could not remove a token file in \"{}\": {e}",
                self.dir.display()
            );
            e.into()
        })
    }

    fn list_tokens(&self) -> Result<Vec<String>, StoreError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                out.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        Ok(out)
    }
}

/// The hex digest of `data` with Salt's `hash_type` name; `None` for an unknown name.
pub fn hex_digest(hash_type: &str, data: &[u8]) -> Option<String> {
    Some(match hash_type {
        "md5" => hex::encode(Md5::digest(data)),
        "sha1" => hex::encode(Sha1::digest(data)),
        "sha224" => hex::encode(Sha224::digest(data)),
        "sha256" => hex::encode(Sha256::digest(data)),
        "sha384" => hex::encode(Sha384::digest(data)),
        "sha512" => hex::encode(Sha512::digest(data)),
        _ => return None,
    })
}

/// The hexdigest length of a `hash_type`, `None` if not one we know.
pub fn digest_len(hash_type: &str) -> Option<usize> {
    hex_digest(hash_type, b"").map(|h| h.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_names() {
        assert!(is_token_name(&"a".repeat(64)));
        assert!(!is_token_name("../../etc/passwd"));
        assert!(!is_token_name("ABCDEF"));
        assert!(!is_token_name(""));
        assert!(!is_token_name(&"a".repeat(129)));
    }

    #[test]
    fn round_trip_through_the_store() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let store = LocalFsStore::new(dir.path().join("tokens"), "sha256");
        let t = store
            .mk_token(TokenData {
                start: 1.5,
                expire: 2.5,
                name: "fred".into(),
                eauth: "pam".into(),
                auth_list: None,
                groups: Some(vec!["wheel".into()]),
                token: String::new(),
                extra: Vec::new(),
            })
            .unwrap_or_else(|e| panic!("mk_token: {e}"));
        assert_eq!(t.token.len(), 64);
        let back = store.get_token(&t.token).ok().flatten();
        assert_eq!(back.as_ref(), Some(&t));
        assert_eq!(store.list_tokens().ok(), Some(vec![t.token.clone()]));
        assert!(store.rm_token(&t.token).is_ok());
        assert!(matches!(store.get_token(&t.token), Ok(None)));
    }
}
