//! The crate's error type.
//!
//! One enum for the crate, with variants grouped by *who is at fault* (see [`Fault`]):
//!
//! * **input**: a key file, PEM text or key string we were handed is unusable
//!   ([`Error::BadPem`], [`Error::PassphraseRequired`], [`Error::UnsupportedKey`],
//!   [`Error::BadKeyString`], [`Error::UnknownAlgorithm`]);
//! * **peer**: bytes that came from the network fail a cryptographic check
//!   ([`Error::BadMac`], [`Error::BadSignature`], [`Error::DecryptFailed`],
//!   [`Error::Malformed`], [`Error::NonceMismatch`]). These carry no detail on purpose: a
//!   decryption oracle must not learn *why* something failed;
//! * **caller**: the API was used wrongly ([`Error::UnsupportedKeySize`], [`Error::MessageTooLong`]);
//! * **backend**: the crypto library itself failed ([`Error::Backend`]);
//! * **io**: the filesystem failed ([`Error::Io`]).

use std::path::PathBuf;

/// Everything that can go wrong in `salt-pki`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The PEM text is not a readable RSA key (or the passphrase is wrong: OpenSSL cannot
    /// tell a wrong passphrase from a corrupt encrypted body).
    #[error("invalid or unreadable PEM key")]
    BadPem,
    /// The private key is encrypted and no passphrase was given.
    #[error("private key is encrypted and no passphrase was given")]
    PassphraseRequired,
    /// The PEM holds a valid key that is not RSA.
    #[error("unsupported key type (only RSA keys are supported)")]
    UnsupportedKey,
    /// A Crypticle key string is not base64 of exactly 56 bytes.
    #[error("invalid AES key string")]
    BadKeyString,
    /// An algorithm or hash name Salt does not accept (e.g. `"OAEP-MD5"`).
    #[error("unknown algorithm {0:?}")]
    UnknownAlgorithm(String),

    /// Crypticle HMAC-SHA256 tag mismatch (Salt's "message authentication failed").
    #[error("message authentication failed")]
    BadMac,
    /// An RSA signature (PKCS#1 v1.5 or X9.31) does not verify.
    #[error("signature verification failed")]
    BadSignature,
    /// RSA-OAEP decryption failed. Deliberately without detail.
    #[error("decryption failed")]
    DecryptFailed,
    /// Peer data has an impossible shape (too short, wrong block length, bad base64).
    #[error("malformed data: {0}")]
    Malformed(&'static str),
    /// A Crypticle payload did not carry the expected nonce (Salt: "Nonce verification error").
    #[error("Nonce verification error")]
    NonceMismatch,

    /// Key generation outside 2048..=16384 bits was requested (Salt refuses < 2048 too).
    #[error("unsupported key size {bits} (must be 2048..=16384 bits)")]
    UnsupportedKeySize {
        /// The requested size.
        bits: u32,
    },
    /// The plaintext does not fit in one RSA block for the chosen padding.
    #[error("message too long for the key and padding")]
    MessageTooLong,
    /// X9.31 signing of an empty message: OpenSSL would sign it, but never verify it.
    #[error("empty message for an X9.31 signature")]
    EmptyMessage,

    /// The crypto backend failed for a reason that is not the input's fault.
    #[error("crypto backend failure: {0}")]
    Backend(String),

    /// A filesystem operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What we were doing ("write", "read", "rename", ...).
        op: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// Who is at fault for an [`Error`]; lets callers map errors to logs or replies in one place.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Fault {
    /// The caller misused the API.
    Caller,
    /// The crypto library failed.
    Backend,
    /// Local input (a key file, PEM text, a configured name) is unusable.
    Input,
    /// The filesystem failed.
    Io,
    /// Data from the network failed a check.
    Peer,
}

impl Error {
    /// Classify the error by who is at fault.
    pub fn fault(&self) -> Fault {
        match self {
            Self::BadPem
            | Self::PassphraseRequired
            | Self::UnsupportedKey
            | Self::BadKeyString
            | Self::UnknownAlgorithm(_) => Fault::Input,
            Self::BadMac
            | Self::BadSignature
            | Self::DecryptFailed
            | Self::Malformed(_)
            | Self::NonceMismatch => Fault::Peer,
            Self::UnsupportedKeySize { .. } | Self::MessageTooLong | Self::EmptyMessage => {
                Fault::Caller
            }
            Self::Backend(_) => Fault::Backend,
            Self::Io { .. } => Fault::Io,
        }
    }

    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn backend(e: openssl::error::ErrorStack) -> Self {
        Self::Backend(e.to_string())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn faults() {
        assert_eq!(Error::BadMac.fault(), Fault::Peer);
        assert_eq!(Error::BadPem.fault(), Fault::Input);
        assert_eq!(
            Error::UnsupportedKeySize { bits: 1024 }.fault(),
            Fault::Caller
        );
        assert_eq!(Error::NonceMismatch.to_string(), "Nonce verification error");
    }
}
