//! Salt's public-key and symmetric cryptography, byte-compatible with Salt 3006/3007/3008.
//!
//! What is here:
//!
//! * [`PrivateKey`] / [`PublicKey`]: RSA keys in Salt's file formats and the four RSA
//!   operations Salt uses (wire protocol §3.1): OAEP encrypt/decrypt ([`EncAlgo`]),
//!   PKCS#1 v1.5 sign/verify ([`SigAlgo`]) and Salt's X9.31 "private_encrypt" /
//!   "public_decrypt" ([`PrivateKey::x931_sign`], [`PublicKey::x931_recover`]).
//! * [`files`]: key files written atomically with Salt's modes; `load_or_generate`.
//! * [`pubsig`]: master public-key signatures (`master_sign_pubkey`).
//! * [`Crypticle`]: AES-192-CBC + HMAC-SHA256 session/publish encryption (§4).
//! * [`clean_key`], [`pem_finger`]: Salt's key normalisation and `salt-key -f` fingerprints.
//! * [`KeyPairOps`]: every RSA operation of the `_auth` handshake, the one trait both
//!   halves in `salt-proto` take (so that crate stays crypto-free).
//!
//! What is *not* here: no networking, no msgpack decoding, no key-acceptance policy, and not
//! Salt's `serial` replay check (all in `salt-proto` / `salt-keystore`). Bytes in, bytes out;
//! the only I/O is in [`files`].
//!
//! # Why OpenSSL and not the `rsa` crate
//!
//! RSA goes through the `openssl` crate behind two small traits ([`backend::RsaPrivateOps`],
//! [`backend::RsaPublicOps`]) so the choice can be revisited:
//!
//! * **Constant time.** `rsa` 0.9 is affected by the Marvin timing attack
//!   (RUSTSEC-2023-0071, no patched release); an OAEP-decrypting master is exactly the
//!   target. OpenSSL 3 uses constant-time bignum code and RSA blinding.
//! * **X9.31.** Salt's token and auth-reply `sig` are raw `RSA_private_encrypt` with
//!   `RSA_X931_PADDING`; OpenSSL does it natively (`Padding::from_raw(5)`) and is the
//!   implementation Salt itself calls through ctypes, so results are byte-identical.
//! * **Formats.** Legacy passphrase-encrypted PEM (`Proc-Type`/`DEK-Info`) is what Salt
//!   writes for `key_pass`; OpenSSL reads and writes it.
//! * **Speed.** About 3–4× faster than pure-Rust RSA for 2048-bit private operations.
//!
//! # Secrets
//!
//! Crypticle keys and key strings are [`zeroize`]d on drop; RSA private material lives in
//! OpenSSL, which clears it on free. Decrypted plaintexts and private PEMs are returned in
//! [`Zeroizing`] buffers. No `Debug` impl prints key material (keys print their size and
//! public fingerprint).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
mod crypticle;
mod error;
pub mod files;
mod handshake;
mod key;
pub mod pubsig;

use std::fmt;
use std::str::FromStr;

pub use zeroize::Zeroizing;

pub use crate::crypticle::{Crypticle, NONCE_LEN, PICKLE_PAD, generate_key_string};
pub use crate::error::{Error, Fault};
pub use crate::handshake::KeyPairOps;
pub use crate::key::{DEFAULT_KEY_BITS, MAX_KEY_BITS, MIN_KEY_BITS, PrivateKey, PublicKey};

/// RSA encryption algorithm (Salt's `encryption_algorithm`): OAEP with MGF1 over the same
/// hash and an empty label.
#[derive(Clone, Copy, Debug, Default, Eq, Hash, PartialEq)]
pub enum EncAlgo {
    /// `"OAEP-SHA1"`, Salt's default.
    #[default]
    OaepSha1,
    /// `"OAEP-SHA224"`.
    OaepSha224,
}

impl EncAlgo {
    /// The name Salt uses on the wire and in config.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OaepSha1 => "OAEP-SHA1",
            Self::OaepSha224 => "OAEP-SHA224",
        }
    }
}

impl FromStr for EncAlgo {
    type Err = Error;

    /// Exact names only, as Salt validates them.
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "OAEP-SHA1" => Ok(Self::OaepSha1),
            "OAEP-SHA224" => Ok(Self::OaepSha224),
            _ => Err(Error::UnknownAlgorithm(s.to_owned())),
        }
    }
}

impl fmt::Display for EncAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// RSA signature algorithm (Salt's `signing_algorithm`): RSASSA-PKCS1-v1_5.
#[derive(Clone, Copy, Debug, Default, Eq, Hash, PartialEq)]
pub enum SigAlgo {
    /// `"PKCS1v15-SHA1"`, Salt's default.
    #[default]
    Pkcs1v15Sha1,
    /// `"PKCS1v15-SHA224"`.
    Pkcs1v15Sha224,
}

impl SigAlgo {
    /// The name Salt uses on the wire and in config.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pkcs1v15Sha1 => "PKCS1v15-SHA1",
            Self::Pkcs1v15Sha224 => "PKCS1v15-SHA224",
        }
    }
}

impl FromStr for SigAlgo {
    type Err = Error;

    /// Exact names only, as Salt validates them.
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "PKCS1v15-SHA1" => Ok(Self::Pkcs1v15Sha1),
            "PKCS1v15-SHA224" => Ok(Self::Pkcs1v15Sha224),
            _ => Err(Error::UnknownAlgorithm(s.to_owned())),
        }
    }
}

impl fmt::Display for SigAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Salt's `hash_type` option (fingerprints); the default is `sha256`.
#[derive(Clone, Copy, Debug, Default, Eq, Hash, PartialEq)]
pub enum HashType {
    /// `md5`
    Md5,
    /// `sha1`
    Sha1,
    /// `sha224`
    Sha224,
    /// `sha256` (default)
    #[default]
    Sha256,
    /// `sha384`
    Sha384,
    /// `sha512`
    Sha512,
}

impl HashType {
    /// The `hashlib` name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Md5 => "md5",
            Self::Sha1 => "sha1",
            Self::Sha224 => "sha224",
            Self::Sha256 => "sha256",
            Self::Sha384 => "sha384",
            Self::Sha512 => "sha512",
        }
    }

    /// Digest of `data`.
    pub fn digest(self, data: &[u8]) -> Vec<u8> {
        use sha2::Digest as _;
        match self {
            Self::Md5 => md5::Md5::digest(data).to_vec(),
            Self::Sha1 => sha1::Sha1::digest(data).to_vec(),
            Self::Sha224 => sha2::Sha224::digest(data).to_vec(),
            Self::Sha256 => sha2::Sha256::digest(data).to_vec(),
            Self::Sha384 => sha2::Sha384::digest(data).to_vec(),
            Self::Sha512 => sha2::Sha512::digest(data).to_vec(),
        }
    }

    /// Digest of everything `reader` yields (read in 64 KiB blocks), as `hashlib` would
    /// compute it for a file (`salt.utils.hashutils.get_hash`).
    ///
    /// # Errors
    /// The reader's error.
    pub fn digest_reader(self, reader: impl std::io::Read) -> std::io::Result<Vec<u8>> {
        fn run<D: sha2::Digest>(mut r: impl std::io::Read) -> std::io::Result<Vec<u8>> {
            let mut h = D::new();
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match r.read(&mut buf) {
                    Ok(0) => return Ok(h.finalize().to_vec()),
                    Ok(n) => h.update(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        match self {
            Self::Md5 => run::<md5::Md5>(reader),
            Self::Sha1 => run::<sha1::Sha1>(reader),
            Self::Sha224 => run::<sha2::Sha224>(reader),
            Self::Sha256 => run::<sha2::Sha256>(reader),
            Self::Sha384 => run::<sha2::Sha384>(reader),
            Self::Sha512 => run::<sha2::Sha512>(reader),
        }
    }
}

impl FromStr for HashType {
    type Err = Error;

    /// `hashlib` names, case-insensitive (`"sha256"`, `"MD5"`, ...).
    fn from_str(s: &str) -> Result<Self, Error> {
        match s.to_ascii_lowercase().as_str() {
            "md5" => Ok(Self::Md5),
            "sha1" => Ok(Self::Sha1),
            "sha224" => Ok(Self::Sha224),
            "sha256" => Ok(Self::Sha256),
            "sha384" => Ok(Self::Sha384),
            "sha512" => Ok(Self::Sha512),
            _ => Err(Error::UnknownAlgorithm(s.to_owned())),
        }
    }
}

impl fmt::Display for HashType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Python's `str.isspace` for the characters that matter here.
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// Python's `str.splitlines` line boundaries.
fn py_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\x0b'
            | '\x0c'
            | '\x1c'
            | '\x1d'
            | '\x1e'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// Salt's `clean_key`: `"\n".join(key.strip().splitlines())`. Trims surrounding
/// whitespace, turns every line ending into LF, leaves no trailing newline. This is the
/// form of `pub_key` on the wire and of `minion_master.pub` / accepted minion keys on disk.
pub fn clean_key(text: &str) -> String {
    let trimmed = text.trim_matches(py_space);
    let mut out = String::with_capacity(trimmed.len());
    let mut chars = trimmed.chars().peekable();
    while let Some(c) = chars.next() {
        if py_line_break(c) {
            if c == '\r' && chars.peek() == Some(&'\n') {
                chars.next();
            }
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    out
}

/// Salt's `pem_finger` (`salt-key -f`, `master_finger`): for PEM text, hash the body lines
/// (armor removed, CRLF as LF, blank lines dropped), each followed by `"\n"`; anything
/// else is hashed as is. Output: lowercase hex byte pairs joined by `:`.
pub fn pem_finger(pem: &[u8], hash: HashType) -> String {
    let digest = hash.digest(&fingerprint_bytes(pem));
    let mut out = String::with_capacity(digest.len() * 3);
    for (i, b) in digest.iter().enumerate() {
        if i > 0 {
            out.push(':');
        }
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Salt's `_fingerprint_key_bytes`.
fn fingerprint_bytes(key: &[u8]) -> Vec<u8> {
    let normalized = replace_crlf(key);
    let lines: Vec<&[u8]> = normalized
        .split(|&b| b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty())
        .collect();
    match lines.as_slice() {
        [first, body @ .., last]
            if first.trim_ascii().starts_with(b"-----BEGIN")
                && last.trim_ascii().starts_with(b"-----END") =>
        {
            let mut out = Vec::with_capacity(key.len());
            for line in body {
                out.extend_from_slice(line);
                out.push(b'\n');
            }
            out
        }
        _ => key.to_vec(),
    }
}

fn replace_crlf(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let mut i = data.iter().peekable();
    while let Some(&b) = i.next() {
        if b == b'\r' && i.peek() == Some(&&b'\n') {
            continue;
        }
        out.push(b);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn clean_key_like_python() {
        assert_eq!(clean_key("  a\r\nb\rc\n\n"), "a\nb\nc");
        assert_eq!(clean_key("a\n\nb\n"), "a\n\nb");
        assert_eq!(clean_key(""), "");
    }

    #[test]
    fn algo_names() {
        for a in [EncAlgo::OaepSha1, EncAlgo::OaepSha224] {
            assert_eq!(a.as_str().parse::<EncAlgo>().unwrap(), a);
        }
        for a in [SigAlgo::Pkcs1v15Sha1, SigAlgo::Pkcs1v15Sha224] {
            assert_eq!(a.as_str().parse::<SigAlgo>().unwrap(), a);
        }
        assert!("oaep-sha1".parse::<EncAlgo>().is_err());
        assert_eq!("MD5".parse::<HashType>().unwrap(), HashType::Md5);
        assert_eq!(EncAlgo::default(), EncAlgo::OaepSha1);
    }

    #[test]
    fn finger_ignores_armor_and_line_endings() {
        let a = b"-----BEGIN PUBLIC KEY-----\nAAAA\nBBBB\n-----END PUBLIC KEY-----\n";
        let b = b"-----BEGIN PUBLIC KEY-----\r\nAAAA\r\n\r\nBBBB\r\n-----END PUBLIC KEY-----";
        assert_eq!(
            pem_finger(a, HashType::Sha256),
            pem_finger(b, HashType::Sha256)
        );
        assert_eq!(pem_finger(a, HashType::Sha256).len(), 95);
        assert_eq!(
            pem_finger(b"AAAA\nBBBB\n", HashType::Md5),
            pem_finger(a, HashType::Md5)
        );
        assert_ne!(
            pem_finger(b"AAAA\nBBBB", HashType::Md5),
            pem_finger(a, HashType::Md5)
        );
    }
}
