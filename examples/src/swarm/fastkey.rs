//! A salt-pki RSA backend for cached swarm keys that skips `RSA_check_key`.
//!
//! salt-pki checks every private key it loads (primality of p and q: ~40 ms of CPU for a
//! 2048-bit key), which is right for a daemon's one key but makes loading 5,000 cached keys
//! take minutes. The swarm's cache holds keys it (or `openssl genrsa`) generated, so it
//! wraps them without the check, through the backend seam [`salt_pki::backend`]. The
//! operations are the same OpenSSL calls salt-pki makes.

use std::sync::Arc;

use openssl::encrypt::Decrypter;
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private};
use openssl::rsa::{Padding, Rsa};
use openssl::sign::Signer;
use salt_pki::backend::{OpensslPublicKey, RsaPrivateOps, RsaPublicOps};
use salt_pki::{EncAlgo, Error, PrivateKey, SigAlgo, Zeroizing};

/// OpenSSL's `RSA_X931_PADDING`.
const X931_PADDING: i32 = 5;

struct Unchecked {
    rsa: Rsa<Private>,
    pkey: PKey<Private>,
    public: Arc<OpensslPublicKey>,
}

fn backend(e: openssl::error::ErrorStack) -> Error {
    Error::Backend(e.to_string())
}

/// Parse a PEM private key (PKCS#1 or PKCS#8, unencrypted) without the consistency check.
pub fn from_pem_unchecked(pem: &[u8]) -> Result<PrivateKey, Error> {
    let pkey = PKey::private_key_from_pem(pem).map_err(|_| Error::BadPem)?;
    let rsa = pkey.rsa().map_err(|_| Error::UnsupportedKey)?;
    let pubrsa = Rsa::from_public_components(
        rsa.n().to_owned().map_err(backend)?,
        rsa.e().to_owned().map_err(backend)?,
    )
    .map_err(backend)?;
    let public = Arc::new(OpensslPublicKey::new(pubrsa)?);
    Ok(PrivateKey::from_ops(Arc::new(Unchecked {
        rsa,
        pkey,
        public,
    })))
}

impl RsaPrivateOps for Unchecked {
    fn public(&self) -> Arc<dyn RsaPublicOps> {
        self.public.clone()
    }

    fn size(&self) -> usize {
        self.rsa.size() as usize
    }

    fn pkcs1_pem(&self, _passphrase: Option<&[u8]>) -> Result<Zeroizing<Vec<u8>>, Error> {
        self.rsa
            .private_key_to_pem()
            .map(Zeroizing::new)
            .map_err(backend)
    }

    fn decrypt_oaep(&self, alg: EncAlgo, ct: &[u8]) -> Result<Zeroizing<Vec<u8>>, Error> {
        let md = match alg {
            EncAlgo::OaepSha224 => MessageDigest::sha224(),
            _ => MessageDigest::sha1(),
        };
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
        let md = match alg {
            SigAlgo::Pkcs1v15Sha224 => MessageDigest::sha224(),
            _ => MessageDigest::sha1(),
        };
        let mut s = Signer::new(md, &self.pkey).map_err(backend)?;
        s.sign_oneshot_to_vec(msg).map_err(backend)
    }

    fn x931_sign(&self, msg: &[u8]) -> Result<Vec<u8>, Error> {
        let k = self.size();
        if msg.len() + 4 > k {
            return Err(Error::MessageTooLong);
        }
        let mut out = vec![0u8; k];
        let n = self
            .rsa
            .private_encrypt(msg, &mut out, Padding::from_raw(X931_PADDING))
            .map_err(backend)?;
        out.truncate(n);
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_the_checked_key() {
        let k = PrivateKey::generate(2048).unwrap();
        let pem = k.to_pem(None).unwrap();
        let u = from_pem_unchecked(&pem).unwrap();
        let p = k.public_key();
        assert_eq!(u.public_key().to_pem(), p.to_pem());
        assert_eq!(u.x931_sign(b"salt").unwrap(), k.x931_sign(b"salt").unwrap());
        let ct = p.encrypt_oaep(EncAlgo::OaepSha1, b"secret").unwrap();
        assert_eq!(
            u.decrypt_oaep(EncAlgo::OaepSha1, &ct).unwrap().as_slice(),
            b"secret"
        );
        let sig = u.sign(SigAlgo::Pkcs1v15Sha1, b"m").unwrap();
        p.verify(SigAlgo::Pkcs1v15Sha1, b"m", &sig).unwrap();
    }
}
