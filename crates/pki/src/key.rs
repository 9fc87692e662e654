//! [`PrivateKey`] and [`PublicKey`]: Salt's RSA keys and the four RSA operations it uses.

use std::fmt;
use std::sync::Arc;

use zeroize::Zeroizing;

use crate::backend::{self, OpensslPrivateKey, RsaPrivateOps, RsaPublicOps};
use crate::{EncAlgo, Error, HashType, SigAlgo, pem_finger};

/// Smallest key size [`PrivateKey::generate`] accepts (Salt's `salt-key --keysize` floor).
pub const MIN_KEY_BITS: u32 = 2048;
/// Largest key size [`PrivateKey::generate`] accepts (keeps a typo from hanging keygen).
pub const MAX_KEY_BITS: u32 = 16384;
/// Salt's default `keysize`.
pub const DEFAULT_KEY_BITS: u32 = 2048;

/// An RSA private key (`master.pem`, `minion.pem`, `master_sign.pem`).
///
/// Cheap to clone (an `Arc` inside); `Send + Sync`. The key material lives in the backend,
/// which clears it when the last clone is dropped. `Debug` prints the size and the SHA-256
/// fingerprint of the public half, never private material.
#[derive(Clone)]
pub struct PrivateKey {
    inner: Arc<dyn RsaPrivateOps>,
}

impl PrivateKey {
    /// Generate a key with e = 65537. Refuses fewer than [`MIN_KEY_BITS`] bits.
    pub fn generate(bits: u32) -> Result<Self, Error> {
        if !(MIN_KEY_BITS..=MAX_KEY_BITS).contains(&bits) {
            return Err(Error::UnsupportedKeySize { bits });
        }
        Ok(Self::from_ops(Arc::new(OpensslPrivateKey::generate(bits)?)))
    }

    /// Wrap a custom backend.
    pub fn from_ops(inner: Arc<dyn RsaPrivateOps>) -> Self {
        Self { inner }
    }

    /// Parse a PEM private key: PKCS#1 or PKCS#8, plain or encrypted (legacy PEM encryption
    /// or encrypted PKCS#8), as Salt (`cryptography`'s `load_pem_private_key`) reads them.
    /// An empty passphrase counts as none, as in Salt.
    pub fn from_pem(pem: &[u8], passphrase: Option<&[u8]>) -> Result<Self, Error> {
        Ok(Self::from_ops(Arc::new(OpensslPrivateKey::from_pem(
            pem, passphrase,
        )?)))
    }

    /// PEM PKCS#1 (`-----BEGIN RSA PRIVATE KEY-----`, Salt's "TraditionalOpenSSL"); with a
    /// passphrase, legacy PEM encryption (AES-256-CBC, `Proc-Type`/`DEK-Info` headers).
    pub fn to_pem(&self, passphrase: Option<&[u8]>) -> Result<Zeroizing<Vec<u8>>, Error> {
        self.inner.pkcs1_pem(passphrase)
    }

    /// The public half.
    pub fn public_key(&self) -> PublicKey {
        PublicKey {
            inner: self.inner.public(),
        }
    }

    /// Modulus length in bytes (256 for a 2048-bit key).
    pub fn size(&self) -> usize {
        self.inner.size()
    }

    /// RSAES-OAEP decryption (auth `aes`/`session`/`token`, pillar `key`).
    /// Any failure is [`Error::DecryptFailed`] with no further detail.
    pub fn decrypt_oaep(&self, alg: EncAlgo, ct: &[u8]) -> Result<Zeroizing<Vec<u8>>, Error> {
        self.inner.decrypt_oaep(alg, ct)
    }

    /// RSASSA-PKCS1-v1_5 signature of `msg` (deterministic; Salt's `PrivateKey.sign`).
    pub fn sign(&self, alg: SigAlgo, msg: &[u8]) -> Result<Vec<u8>, Error> {
        self.inner.sign(alg, msg)
    }

    /// Salt's `PrivateKey.encrypt`: raw X9.31 private-key operation on `msg` itself
    /// (minion `tok` over `b"salt"`, auth reply `sig`). Deterministic; `size()` bytes out.
    pub fn x931_sign(&self, msg: &[u8]) -> Result<Vec<u8>, Error> {
        self.inner.x931_sign(msg)
    }
}

impl fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let public = self.public_key();
        f.debug_struct("PrivateKey")
            .field("bits", &public.bits())
            .field("public_sha256", &public.fingerprint(HashType::Sha256))
            .finish_non_exhaustive()
    }
}

/// An RSA public key (`*.pub`, a minion's accepted key, the cached `minion_master.pub`).
///
/// Cheap to clone; `Send + Sync`; `Debug` prints the size and SHA-256 fingerprint.
#[derive(Clone)]
pub struct PublicKey {
    inner: Arc<dyn RsaPublicOps>,
}

impl PublicKey {
    /// Parse a PEM public key: SPKI (`PUBLIC KEY`, what Salt writes) or PKCS#1
    /// (`RSA PUBLIC KEY`, which Salt also reads).
    pub fn from_pem(pem: &[u8]) -> Result<Self, Error> {
        Ok(Self::from_ops(Arc::new(backend::public_from_pem(pem)?)))
    }

    /// Wrap a custom backend.
    pub fn from_ops(inner: Arc<dyn RsaPublicOps>) -> Self {
        Self { inner }
    }

    /// PEM SPKI with 64-column lines and a trailing `"\n"`, byte-identical to the `.pub`
    /// files Salt writes.
    pub fn to_pem(&self) -> String {
        // Serialising a key we already hold only fails on allocation failure.
        self.inner.spki_pem().unwrap_or_default()
    }

    /// Modulus size in bits.
    pub fn bits(&self) -> u32 {
        self.inner.bits()
    }

    /// Modulus length in bytes.
    pub fn size(&self) -> usize {
        self.inner.size()
    }

    /// Fingerprint as `salt-key -f` prints it for this key's `.pub` file.
    pub fn fingerprint(&self, hash: HashType) -> String {
        pem_finger(self.to_pem().as_bytes(), hash)
    }

    /// RSAES-OAEP encryption with MGF1 over the same hash and an empty label.
    pub fn encrypt_oaep(&self, alg: EncAlgo, msg: &[u8]) -> Result<Vec<u8>, Error> {
        self.inner.encrypt_oaep(alg, msg)
    }

    /// Verify an RSASSA-PKCS1-v1_5 signature over `msg`; [`Error::BadSignature`] if not valid.
    pub fn verify(&self, alg: SigAlgo, msg: &[u8], sig: &[u8]) -> Result<(), Error> {
        self.inner.verify(alg, msg, sig)
    }

    /// Salt's `PublicKey.decrypt`: X9.31 public-key operation that recovers what
    /// [`PrivateKey::x931_sign`] signed. [`Error::BadSignature`] if the padding is wrong.
    pub fn x931_recover(&self, sig: &[u8]) -> Result<Vec<u8>, Error> {
        self.inner.x931_recover(sig)
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublicKey")
            .field("bits", &self.bits())
            .field("sha256", &self.fingerprint(HashType::Sha256))
            .finish()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn refuses_small_keys() {
        assert!(matches!(
            PrivateKey::generate(1024),
            Err(Error::UnsupportedKeySize { bits: 1024 })
        ));
    }

    #[test]
    fn debug_has_no_secrets() {
        let k = PrivateKey::generate(2048).unwrap();
        let dbg = format!("{k:?}");
        assert!(dbg.contains("bits: 2048"), "{dbg}");
        let pem = k.to_pem(None).unwrap();
        let pem = std::str::from_utf8(&pem).unwrap();
        let body_line = pem.lines().nth(1).unwrap();
        assert!(!dbg.contains(body_line));
        assert!(pem.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
    }
}
