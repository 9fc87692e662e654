//! The RSA backend seam: two small object-safe traits and the OpenSSL implementation.
//!
//! [`crate::PrivateKey`] and [`crate::PublicKey`] hold an `Arc<dyn RsaPrivateOps>` /
//! `Arc<dyn RsaPublicOps>`, so another backend (a pure-Rust `rsa` 0.10 once its timing
//! advisory is closed, an HSM) can be dropped in without touching callers. Only OpenSSL is
//! provided; see the crate docs for why.
//!
//! Every method is one-shot and stateless, so implementations must be `Send + Sync`.

use std::sync::Arc;

use openssl::encrypt::{Decrypter, Encrypter};
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private, Public};
use openssl::rsa::{Padding, Rsa};
use openssl::sign::Verifier;
use openssl::symm::Cipher;
use zeroize::Zeroizing;

use crate::{EncAlgo, Error, SigAlgo};

/// OpenSSL's `RSA_X931_PADDING` (openssl/rsa.h), used by Salt's `salt.utils.rsax931`.
const X931_PADDING: i32 = 5;

/// Public-key RSA operations Salt needs.
pub trait RsaPublicOps: Send + Sync {
    /// Modulus size in bits.
    fn bits(&self) -> u32;
    /// Modulus size in bytes (the length of every signature and ciphertext).
    fn size(&self) -> usize;
    /// The key as PEM SubjectPublicKeyInfo (`-----BEGIN PUBLIC KEY-----`).
    fn spki_pem(&self) -> Result<String, Error>;
    /// RSAES-OAEP encryption, MGF1 with the same hash, empty label.
    fn encrypt_oaep(&self, alg: EncAlgo, msg: &[u8]) -> Result<Vec<u8>, Error>;
    /// RSASSA-PKCS1-v1_5 verification over `msg` (hashed here).
    fn verify(&self, alg: SigAlgo, msg: &[u8], sig: &[u8]) -> Result<(), Error>;
    /// Raw `RSA_public_decrypt` with X9.31 padding: recovers the signed message.
    fn x931_recover(&self, sig: &[u8]) -> Result<Vec<u8>, Error>;
}

/// Private-key RSA operations Salt needs.
pub trait RsaPrivateOps: Send + Sync {
    /// The matching public half.
    fn public(&self) -> Arc<dyn RsaPublicOps>;
    /// Modulus size in bytes.
    fn size(&self) -> usize;
    /// PKCS#1 PEM (`RSA PRIVATE KEY`), legacy-PEM-encrypted (AES-256-CBC) with a passphrase.
    fn pkcs1_pem(&self, passphrase: Option<&[u8]>) -> Result<Zeroizing<Vec<u8>>, Error>;
    /// RSAES-OAEP decryption. Every failure is [`Error::DecryptFailed`], without detail.
    fn decrypt_oaep(&self, alg: EncAlgo, ct: &[u8]) -> Result<Zeroizing<Vec<u8>>, Error>;
    /// RSASSA-PKCS1-v1_5 signature over `msg` (hashed here). Deterministic.
    fn sign(&self, alg: SigAlgo, msg: &[u8]) -> Result<Vec<u8>, Error>;
    /// Raw `RSA_private_encrypt` with X9.31 padding of `msg` itself (no hashing).
    fn x931_sign(&self, msg: &[u8]) -> Result<Vec<u8>, Error>;
}

fn enc_md(alg: EncAlgo) -> MessageDigest {
    match alg {
        EncAlgo::OaepSha1 => MessageDigest::sha1(),
        EncAlgo::OaepSha224 => MessageDigest::sha224(),
    }
}

/// The DER `DigestInfo` before the digest, for `alg`'s hash (RFC 8017 9.2, note 1).
fn digest_info_prefix(alg: SigAlgo) -> &'static [u8] {
    match alg {
        SigAlgo::Pkcs1v15Sha1 => &[
            0x30, 0x21, 0x30, 0x09, 0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a, 0x05, 0x00, 0x04,
            0x14,
        ],
        SigAlgo::Pkcs1v15Sha224 => &[
            0x30, 0x2d, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02,
            0x04, 0x05, 0x00, 0x04, 0x1c,
        ],
    }
}

fn sig_md(alg: SigAlgo) -> MessageDigest {
    match alg {
        SigAlgo::Pkcs1v15Sha1 => MessageDigest::sha1(),
        SigAlgo::Pkcs1v15Sha224 => MessageDigest::sha224(),
    }
}

// === impl OpensslPublicKey ===

/// OpenSSL-backed RSA public key.
pub struct OpensslPublicKey {
    rsa: Rsa<Public>,
    pkey: PKey<Public>,
}

impl OpensslPublicKey {
    /// Wrap an OpenSSL RSA public key.
    pub fn new(rsa: Rsa<Public>) -> Result<Self, Error> {
        let pkey = PKey::from_rsa(rsa.clone()).map_err(Error::backend)?;
        Ok(Self { rsa, pkey })
    }
}

impl RsaPublicOps for OpensslPublicKey {
    fn bits(&self) -> u32 {
        self.pkey.bits()
    }

    fn size(&self) -> usize {
        self.rsa.size() as usize
    }

    fn spki_pem(&self) -> Result<String, Error> {
        let pem = self.rsa.public_key_to_pem().map_err(Error::backend)?;
        String::from_utf8(pem).map_err(|_| Error::Backend("non-UTF-8 PEM".into()))
    }

    fn encrypt_oaep(&self, alg: EncAlgo, msg: &[u8]) -> Result<Vec<u8>, Error> {
        let md = enc_md(alg);
        // RFC 8017 7.1.1: mLen <= k - 2hLen - 2.
        if msg.len() + 2 * md.size() + 2 > self.size() {
            return Err(Error::MessageTooLong);
        }
        if alg == EncAlgo::OaepSha1 {
            // OpenSSL's own RSA call: OAEP with SHA-1 and MGF1-SHA-1 is its default, and it
            // skips the EVP context set up per call (21.7 vs 24.8 µs here, docs/decisions.md).
            let mut out = vec![0u8; self.size()];
            let n = self
                .rsa
                .public_encrypt(msg, &mut out, Padding::PKCS1_OAEP)
                .map_err(Error::backend)?;
            out.truncate(n);
            return Ok(out);
        }
        let mut enc = Encrypter::new(&self.pkey).map_err(Error::backend)?;
        enc.set_rsa_padding(Padding::PKCS1_OAEP)
            .and_then(|()| enc.set_rsa_oaep_md(md))
            .and_then(|()| enc.set_rsa_mgf1_md(md))
            .map_err(Error::backend)?;
        let mut out = vec![0u8; enc.encrypt_len(msg).map_err(Error::backend)?];
        let n = enc.encrypt(msg, &mut out).map_err(Error::backend)?;
        out.truncate(n);
        Ok(out)
    }

    fn verify(&self, alg: SigAlgo, msg: &[u8], sig: &[u8]) -> Result<(), Error> {
        if sig.len() != self.size() {
            return Err(Error::BadSignature);
        }
        let mut v = Verifier::new(sig_md(alg), &self.pkey).map_err(Error::backend)?;
        match v.verify_oneshot(sig, msg) {
            Ok(true) => Ok(()),
            _ => Err(Error::BadSignature),
        }
    }

    fn x931_recover(&self, sig: &[u8]) -> Result<Vec<u8>, Error> {
        let k = self.size();
        if sig.is_empty() || sig.len() > k {
            return Err(Error::BadSignature);
        }
        let mut out = vec![0u8; k];
        let n = self
            .rsa
            .public_decrypt(sig, &mut out, Padding::from_raw(X931_PADDING))
            .map_err(|_| Error::BadSignature)?;
        out.truncate(n);
        Ok(out)
    }
}

// === impl OpensslPrivateKey ===

/// OpenSSL-backed RSA private key. OpenSSL clears the private BIGNUMs when the last
/// reference is freed (`RSA_free` uses `BN_clear_free`).
pub struct OpensslPrivateKey {
    rsa: Rsa<Private>,
    pkey: PKey<Private>,
    public: Arc<OpensslPublicKey>,
}

impl OpensslPrivateKey {
    /// Wrap an OpenSSL RSA private key after a pairwise-consistency test: a signature made
    /// with the private half must verify with the public half (one private operation,
    /// ~1 ms). `RSA_check_key` also tests p and q for primality, ~42 ms per 2048-bit key —
    /// most of a minion's start-up — and a corrupt or mismatched key file (the failure that
    /// matters for keys we read from our own `pki_dir`) fails this test as well.
    pub fn new(rsa: Rsa<Private>) -> Result<Self, Error> {
        let pkey = PKey::from_rsa(rsa.clone()).map_err(Error::backend)?;
        let n = rsa.n().to_owned().map_err(Error::backend)?;
        let e = rsa.e().to_owned().map_err(Error::backend)?;
        let pubrsa = Rsa::from_public_components(n, e).map_err(Error::backend)?;
        let public = Arc::new(OpensslPublicKey::new(pubrsa)?);
        let key = Self { rsa, pkey, public };
        const PROBE: &[u8] = b"salt-pki pairwise consistency test";
        let consistent = key.sign(SigAlgo::Pkcs1v15Sha1, PROBE).is_ok_and(|sig| {
            key.public
                .verify(SigAlgo::Pkcs1v15Sha1, PROBE, &sig)
                .is_ok()
        });
        if !consistent {
            return Err(Error::BadPem);
        }
        Ok(key)
    }

    /// Generate a fresh key with e = 65537.
    pub fn generate(bits: u32) -> Result<Self, Error> {
        Self::new(Rsa::generate(bits).map_err(Error::backend)?)
    }

    /// Parse any PEM private key OpenSSL reads (PKCS#1, PKCS#8, legacy-encrypted PKCS#1,
    /// encrypted PKCS#8). Never prompts on a terminal.
    pub fn from_pem(pem: &[u8], passphrase: Option<&[u8]>) -> Result<Self, Error> {
        let encrypted = contains(pem, b"ENCRYPTED");
        let passphrase = passphrase.filter(|p| !p.is_empty());
        if encrypted && passphrase.is_none() {
            return Err(Error::PassphraseRequired);
        }
        // The callback form: the `_passphrase` form panics on NUL bytes, and the plain form
        // would let OpenSSL prompt on the controlling terminal.
        let pkey = PKey::private_key_from_pem_callback(pem, |buf| match passphrase {
            Some(p) if p.len() <= buf.len() => {
                buf[..p.len()].copy_from_slice(p);
                Ok(p.len())
            }
            _ => Err(openssl::error::ErrorStack::get()),
        })
        .map_err(|_| Error::BadPem)?;
        if pkey.id() != openssl::pkey::Id::RSA {
            return Err(Error::UnsupportedKey);
        }
        Self::new(pkey.rsa().map_err(|_| Error::UnsupportedKey)?)
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

impl RsaPrivateOps for OpensslPrivateKey {
    fn public(&self) -> Arc<dyn RsaPublicOps> {
        self.public.clone()
    }

    fn size(&self) -> usize {
        self.rsa.size() as usize
    }

    fn pkcs1_pem(&self, passphrase: Option<&[u8]>) -> Result<Zeroizing<Vec<u8>>, Error> {
        let pem = match passphrase.filter(|p| !p.is_empty()) {
            // What `cryptography`'s BestAvailableEncryption + TraditionalOpenSSL writes.
            Some(p) => self
                .rsa
                .private_key_to_pem_passphrase(Cipher::aes_256_cbc(), p),
            None => self.rsa.private_key_to_pem(),
        };
        pem.map(Zeroizing::new).map_err(Error::backend)
    }

    fn decrypt_oaep(&self, alg: EncAlgo, ct: &[u8]) -> Result<Zeroizing<Vec<u8>>, Error> {
        if ct.len() != self.size() {
            return Err(Error::DecryptFailed);
        }
        if alg == EncAlgo::OaepSha1 {
            // As in `encrypt_oaep`: OpenSSL's RSA call, its OAEP check is the same
            // constant-time one (255 vs 264 µs per decryption here).
            let mut out = Zeroizing::new(vec![0u8; self.size()]);
            let n = self
                .rsa
                .private_decrypt(ct, &mut out, Padding::PKCS1_OAEP)
                .map_err(|_| Error::DecryptFailed)?;
            out.truncate(n);
            return Ok(out);
        }
        let md = enc_md(alg);
        let mut dec = Decrypter::new(&self.pkey).map_err(|_| Error::DecryptFailed)?;
        dec.set_rsa_padding(Padding::PKCS1_OAEP)
            .and_then(|()| dec.set_rsa_oaep_md(md))
            .and_then(|()| dec.set_rsa_mgf1_md(md))
            .map_err(|_| Error::DecryptFailed)?;
        let mut out = Zeroizing::new(vec![0u8; self.size()]);
        let n = dec
            .decrypt(ct, &mut out)
            .map_err(|_| Error::DecryptFailed)?;
        out.truncate(n);
        Ok(out)
    }

    fn sign(&self, alg: SigAlgo, msg: &[u8]) -> Result<Vec<u8>, Error> {
        // EMSA-PKCS1-v1_5 (RFC 8017 9.2): the DigestInfo is built here and padded and
        // signed by OpenSSL's RSA call, without an EVP context per signature (246 vs
        // 277 µs here, docs/decisions.md). The same bytes as `Signer`'s (tests/vectors.rs).
        let digest = openssl::hash::hash(sig_md(alg), msg).map_err(Error::backend)?;
        let prefix = digest_info_prefix(alg);
        let mut info = Vec::with_capacity(prefix.len() + digest.len());
        info.extend_from_slice(prefix);
        info.extend_from_slice(&digest);
        let mut out = vec![0u8; self.size()];
        let n = self
            .rsa
            .private_encrypt(&info, &mut out, Padding::PKCS1)
            .map_err(Error::backend)?;
        out.truncate(n);
        Ok(out)
    }

    fn x931_sign(&self, msg: &[u8]) -> Result<Vec<u8>, Error> {
        let k = self.size();
        // OpenSSL's X9.31 checker wants at least one 0xBB pad byte, so a message longer than
        // k - 4 would sign but never verify. Salt only signs 4- and 64-byte messages.
        if msg.len() + 4 > k {
            return Err(Error::MessageTooLong);
        }
        // ... and a non-empty one (fuzz finding 2: an empty message signs but never verifies).
        if msg.is_empty() {
            return Err(Error::EmptyMessage);
        }
        let mut out = vec![0u8; k];
        let n = self
            .rsa
            .private_encrypt(msg, &mut out, Padding::from_raw(X931_PADDING))
            .map_err(Error::backend)?;
        out.truncate(n);
        Ok(out)
    }
}

/// Parse a PEM public key: SPKI (`PUBLIC KEY`) or PKCS#1 (`RSA PUBLIC KEY`).
pub fn public_from_pem(pem: &[u8]) -> Result<OpensslPublicKey, Error> {
    // Decode the armour ourselves and hand OpenSSL DER only: OpenSSL's PEM reader falls back
    // to an interactive passphrase prompt on encrypted blocks, and a public key comes from a
    // peer (a minion's `pub`, a master's `pub_key`), so it must never reach that path.
    if let Some(der) = pem_body(pem, "RSA PUBLIC KEY") {
        let rsa = Rsa::public_key_from_der_pkcs1(&der).map_err(|_| Error::BadPem)?;
        return OpensslPublicKey::new(rsa);
    }
    let der = pem_body(pem, "PUBLIC KEY").ok_or(Error::BadPem)?;
    let pkey = PKey::public_key_from_der(&der).map_err(|_| Error::BadPem)?;
    if pkey.id() != openssl::pkey::Id::RSA {
        return Err(Error::UnsupportedKey);
    }
    OpensslPublicKey::new(pkey.rsa().map_err(|_| Error::UnsupportedKey)?)
}

/// The base64-decoded body of the first `-----BEGIN {label}-----` block, or `None` when there
/// is none, it has headers (`Proc-Type:` and the like: encryption), or it is not base64.
fn pem_body(pem: &[u8], label: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let text = std::str::from_utf8(pem).ok()?;
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin)? + begin.len();
    let rest = text.get(start..)?;
    let body = rest.get(..rest.find(&end)?)?;
    if body.contains(':') {
        return None;
    }
    let b64: String = body.split_whitespace().collect();
    base64::engine::general_purpose::STANDARD.decode(b64).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod consistency_tests {
    use super::*;

    /// The RSA-call paths give what OpenSSL's EVP API gives: the same PKCS#1 v1.5
    /// signatures (deterministic), OAEP-SHA1 both ways.
    #[test]
    fn rsa_calls_match_evp() {
        let key = OpensslPrivateKey::generate(2048).unwrap();
        for alg in [SigAlgo::Pkcs1v15Sha1, SigAlgo::Pkcs1v15Sha224] {
            let mut evp = openssl::sign::Signer::new(sig_md(alg), &key.pkey).unwrap();
            let want = evp.sign_oneshot_to_vec(b"salt").unwrap();
            assert_eq!(key.sign(alg, b"salt").unwrap(), want);
            key.public.verify(alg, b"salt", &want).unwrap();
        }
        let ct = key
            .public
            .encrypt_oaep(EncAlgo::OaepSha1, b"secret")
            .unwrap();
        let mut dec = Decrypter::new(&key.pkey).unwrap();
        dec.set_rsa_padding(Padding::PKCS1_OAEP).unwrap();
        dec.set_rsa_oaep_md(MessageDigest::sha1()).unwrap();
        let mut out = vec![0u8; 256];
        let n = dec.decrypt(&ct, &mut out).unwrap();
        assert_eq!(&out[..n], b"secret");
        let mut enc = Encrypter::new(&key.public.pkey).unwrap();
        enc.set_rsa_padding(Padding::PKCS1_OAEP).unwrap();
        enc.set_rsa_oaep_md(MessageDigest::sha1()).unwrap();
        let mut ct = vec![0u8; 256];
        let n = enc.encrypt(b"secret", &mut ct).unwrap();
        ct.truncate(n);
        assert_eq!(
            &key.decrypt_oaep(EncAlgo::OaepSha1, &ct).unwrap()[..],
            b"secret"
        );
        let ct = key
            .public
            .encrypt_oaep(EncAlgo::OaepSha224, b"secret")
            .unwrap();
        assert_eq!(
            &key.decrypt_oaep(EncAlgo::OaepSha224, &ct).unwrap()[..],
            b"secret"
        );
        assert!(key.decrypt_oaep(EncAlgo::OaepSha1, &ct).is_err());
    }

    #[test]
    fn a_key_whose_halves_do_not_match_is_refused() {
        let a = Rsa::generate(2048).unwrap();
        let b = Rsa::generate(2048).unwrap();
        assert!(OpensslPrivateKey::new(a.clone()).is_ok());
        // A's modulus with B's private half: what a corrupt or spliced key file holds.
        let bad = Rsa::from_private_components(
            a.n().to_owned().unwrap(),
            b.e().to_owned().unwrap(),
            b.d().to_owned().unwrap(),
            b.p().unwrap().to_owned().unwrap(),
            b.q().unwrap().to_owned().unwrap(),
            b.dmp1().unwrap().to_owned().unwrap(),
            b.dmq1().unwrap().to_owned().unwrap(),
            b.iqmp().unwrap().to_owned().unwrap(),
        )
        .unwrap();
        assert!(matches!(OpensslPrivateKey::new(bad), Err(Error::BadPem)));
    }
}
