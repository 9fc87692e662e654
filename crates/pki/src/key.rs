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
        // The usual shape (an SPKI RSA key, what Salt writes and every minion presents at
        // sign-in) is read here: OpenSSL 3's decoder path (a provider lookup by name, then
        // the decoded key exported back to a legacy RSA) cost more master CPU per sign-in
        // than the two OAEP encryptions that use the key. Anything else takes OpenSSL's.
        if let Some(k) = spki::rsa_public_from_pem(pem) {
            return Ok(Self::from_ops(Arc::new(k)));
        }
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

/// A strict reader of the one common public-key shape: PEM `PUBLIC KEY` holding a DER
/// SubjectPublicKeyInfo with the rsaEncryption algorithm (NULL parameters) and an
/// RSAPublicKey of two positive, minimally encoded INTEGERs. Anything it does not recognise
/// (PKCS#1 armour, other algorithms, BER oddities, headers) returns `None` and is left to
/// OpenSSL, so it accepts nothing OpenSSL would refuse.
mod spki {
    use openssl::bn::BigNum;
    use openssl::rsa::Rsa;

    use crate::backend::OpensslPublicKey;

    /// AlgorithmIdentifier contents: OID 1.2.840.113549.1.1.1 (rsaEncryption), NULL.
    const RSA_ALG: &[u8] = &[
        0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
    ];
    const BEGIN: &str = "-----BEGIN PUBLIC KEY-----";
    const END: &str = "-----END PUBLIC KEY-----";

    pub(super) fn rsa_public_from_pem(pem: &[u8]) -> Option<OpensslPublicKey> {
        let (n, e) = {
            let der = pem_der(pem)?;
            let (n, e) = rsa_components(&der)?;
            (BigNum::from_slice(n).ok()?, BigNum::from_slice(e).ok()?)
        };
        OpensslPublicKey::new(Rsa::from_public_components(n, e).ok()?).ok()
    }

    /// The DER inside the only `PUBLIC KEY` block of `pem` (surrounding whitespace allowed,
    /// nothing else around it; no headers).
    fn pem_der(pem: &[u8]) -> Option<Vec<u8>> {
        use base64::Engine as _;
        let text = std::str::from_utf8(pem).ok()?.trim();
        let body = text.strip_prefix(BEGIN)?.strip_suffix(END)?;
        if body.contains(['-', ':']) {
            return None;
        }
        let b64: String = body.split_ascii_whitespace().collect();
        base64::engine::general_purpose::STANDARD.decode(b64).ok()
    }

    /// (n, e) of an RSA SubjectPublicKeyInfo in DER.
    pub(super) fn rsa_components(der: &[u8]) -> Option<(&[u8], &[u8])> {
        let spki = whole(der, 0x30)?;
        let (alg, rest) = tlv(spki, 0x30)?;
        if alg != RSA_ALG {
            return None;
        }
        let bits = whole(rest, 0x03)?;
        let (&0, key) = bits.split_first()? else {
            return None; // unused-bits count must be 0
        };
        let seq = whole(key, 0x30)?;
        let (n, rest) = tlv(seq, 0x02)?;
        let e = whole(rest, 0x02)?;
        Some((positive(n)?, positive(e)?))
    }

    /// The contents of a TLV with `tag` that spans all of `input`.
    fn whole(input: &[u8], tag: u8) -> Option<&[u8]> {
        match tlv(input, tag)? {
            (v, []) => Some(v),
            _ => None,
        }
    }

    /// One DER TLV with `tag` at the start of `input`: (contents, what follows). Definite,
    /// minimal lengths only.
    fn tlv(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
        let (&t, rest) = input.split_first()?;
        let (&l0, rest) = rest.split_first()?;
        if t != tag {
            return None;
        }
        let (len, rest) = if l0 < 0x80 {
            (usize::from(l0), rest)
        } else {
            let k = usize::from(l0 & 0x7f);
            if !(1..=3).contains(&k) || rest.len() < k || rest[0] == 0 {
                return None;
            }
            let len = rest[..k]
                .iter()
                .fold(0usize, |a, &b| a << 8 | usize::from(b));
            if len < 0x80 {
                return None; // not minimal
            }
            (len, &rest[k..])
        };
        (rest.len() >= len).then(|| rest.split_at(len))
    }

    /// The magnitude of a positive, minimally encoded INTEGER (its leading 0 byte kept:
    /// `BigNum::from_slice` reads it as the same number).
    fn positive(v: &[u8]) -> Option<&[u8]> {
        match v {
            [] => None,
            [b, ..] if *b >= 0x80 => None,   // negative
            [0] => None,                     // zero
            [0, b, ..] if *b < 0x80 => None, // not minimal
            _ => Some(v),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Keys of every size Salt may hold, as OpenSSL writes them: the reader here and
    /// OpenSSL's agree on the key (same SPKI out, same modulus size).
    #[test]
    fn spki_reader_agrees_with_openssl() {
        for bits in [2048, 3072, 4096] {
            let k = PrivateKey::generate(bits).unwrap().public_key();
            let pem = k.to_pem();
            let fast = spki::rsa_public_from_pem(pem.as_bytes()).expect("common shape");
            let slow = backend::public_from_pem(pem.as_bytes()).unwrap();
            use crate::backend::RsaPublicOps as _;
            assert_eq!(fast.spki_pem().unwrap(), slow.spki_pem().unwrap());
            assert_eq!(fast.bits(), bits);
            // CRLF line ends and surrounding whitespace, as a peer may send.
            let crlf = format!("\n {}\r\n", pem.replace('\n', "\r\n"));
            assert!(spki::rsa_public_from_pem(crlf.as_bytes()).is_some());
        }
    }

    /// Shapes the reader leaves to OpenSSL (which still reads the valid ones) or refuses.
    #[test]
    fn spki_reader_declines_what_it_does_not_know() {
        let k = PrivateKey::generate(2048).unwrap().public_key();
        let pem = k.to_pem();
        let der = {
            use base64::Engine as _;
            let b: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
            base64::engine::general_purpose::STANDARD.decode(b).unwrap()
        };
        assert!(spki::rsa_components(&der).is_some());
        // Trailing garbage, a truncated key, a wrong outer tag.
        let mut long = der.clone();
        long.push(0);
        assert!(spki::rsa_components(&long).is_none());
        assert!(spki::rsa_components(&der[..der.len() - 1]).is_none());
        let mut tag = der.clone();
        tag[0] = 0x31;
        assert!(spki::rsa_components(&tag).is_none());
        // PKCS#1 armour: not this reader's, still read by OpenSSL's.
        let pkcs1 = PrivateKey::generate(2048).unwrap();
        let rsa_pub = openssl::rsa::Rsa::private_key_from_pem(&pkcs1.to_pem(None).unwrap())
            .unwrap()
            .public_key_to_pem_pkcs1()
            .unwrap();
        assert!(spki::rsa_public_from_pem(&rsa_pub).is_none());
        assert!(PublicKey::from_pem(&rsa_pub).is_ok());
        // Text before the block, or two blocks: left to OpenSSL's reader.
        let prefixed = format!("junk\n{pem}");
        assert!(spki::rsa_public_from_pem(prefixed.as_bytes()).is_none());
        // Garbage stays refused.
        assert!(
            PublicKey::from_pem(b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
                .is_err()
        );
    }

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
