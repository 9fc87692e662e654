//! The RSA work of Salt's `_auth` handshake, behind the one trait both halves take.
//!
//! `salt-proto` runs the handshake sans-IO and crypto-free: the minion's checks
//! (`auth_minion`) and the master's replies (`auth_master`) call a [`KeyPairOps`] for every
//! RSA operation, on this side's key pair and on the peer's public key. [`PrivateKey`]
//! implements it with OpenSSL; another implementation (an HSM, a test double counting
//! operations) only needs the three private-key methods, the peer-key ones have defaults.

use zeroize::Zeroizing;

use crate::{EncAlgo, Error, HashType, PrivateKey, PublicKey, SigAlgo};

/// This side's RSA key pair and the public-key operations on its peer's key, as Salt's
/// `_auth` exchange uses them (salt-wire-protocol.md §3.3–§3.6).
pub trait KeyPairOps: Send + Sync {
    /// This side's public key, PEM in `clean_key` form (the `pub` / `pub_key` field).
    fn public_text(&self) -> String;
    /// RSAES-OAEP decryption with this side's key (`aes`, `session`, `token`).
    fn decrypt(&self, alg: EncAlgo, ct: &[u8]) -> Result<Zeroizing<Vec<u8>>, Error>;
    /// RSASSA-PKCS1-v1_5 signature with this side's key (the reply's outer `sig`).
    fn sign(&self, alg: SigAlgo, msg: &[u8]) -> Result<Vec<u8>, Error>;

    /// Parse a peer's public key from PEM text.
    fn peer_key(&self, pem: &str) -> Result<PublicKey, Error> {
        PublicKey::from_pem(pem.as_bytes())
    }
    /// RSAES-OAEP encryption to the peer (`token`, `aes`, `session`).
    fn encrypt_to(&self, peer: &PublicKey, alg: EncAlgo, msg: &[u8]) -> Result<Vec<u8>, Error> {
        peer.encrypt_oaep(alg, msg)
    }
    /// Verify the peer's PKCS#1 v1.5 signature over `msg`.
    fn verify_from(
        &self,
        peer: &PublicKey,
        alg: SigAlgo,
        msg: &[u8],
        sig: &[u8],
    ) -> Result<(), Error> {
        peer.verify(alg, msg, sig)
    }
    /// Check Salt's X9.31 `sig` by the peer over hex(SHA-256(`key`)) (the auth reply's
    /// signature of the publish AES key string). [`Error::BadSignature`] if it differs.
    fn verify_key_sig(&self, peer: &PublicKey, key: &[u8], sig: &[u8]) -> Result<(), Error> {
        let digest = hex::encode(HashType::Sha256.digest(key));
        let recovered = peer.x931_recover(sig)?;
        if recovered == digest.as_bytes() {
            Ok(())
        } else {
            Err(Error::BadSignature)
        }
    }
    /// Verify the master's `pub_sig` (`master_sign_pubkey`) over its key text with
    /// `master_sign.pub` ([`crate::pubsig::verify_master_pubkey`]).
    fn verify_pub_sig(
        &self,
        sign_pub: &PublicKey,
        master_pub: &[u8],
        pub_sig: &[u8],
        alg: SigAlgo,
    ) -> Result<(), Error> {
        crate::pubsig::verify_master_pubkey(sign_pub, master_pub, pub_sig, alg)
    }
    /// Salt's `pem_finger` of a key text (`master_finger`).
    fn finger(&self, pem: &str, hash: HashType) -> String {
        crate::pem_finger(pem.as_bytes(), hash)
    }
}

impl KeyPairOps for PrivateKey {
    fn public_text(&self) -> String {
        crate::clean_key(&self.public_key().to_pem())
    }

    fn decrypt(&self, alg: EncAlgo, ct: &[u8]) -> Result<Zeroizing<Vec<u8>>, Error> {
        self.decrypt_oaep(alg, ct)
    }

    fn sign(&self, alg: SigAlgo, msg: &[u8]) -> Result<Vec<u8>, Error> {
        PrivateKey::sign(self, alg, msg)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn key_sig_round_trip_and_mismatch() {
        let master = PrivateKey::generate(2048).unwrap();
        let other = PrivateKey::generate(2048).unwrap();
        let key = b"an aes key string";
        let digest = hex::encode(HashType::Sha256.digest(key));
        let sig = master.x931_sign(digest.as_bytes()).unwrap();
        let peer = master.peer_key(&master.public_text()).unwrap();
        master.verify_key_sig(&peer, key, &sig).unwrap();
        assert!(master.verify_key_sig(&peer, b"another key", &sig).is_err());
        let stranger = other.public_key();
        assert!(master.verify_key_sig(&stranger, key, &sig).is_err());
        let ct = other.encrypt_to(&peer, EncAlgo::OaepSha1, b"tok").unwrap();
        assert_eq!(&master.decrypt(EncAlgo::OaepSha1, &ct).unwrap()[..], b"tok");
        let s = KeyPairOps::sign(&master, SigAlgo::Pkcs1v15Sha1, b"m").unwrap();
        other
            .verify_from(&peer, SigAlgo::Pkcs1v15Sha1, b"m", &s)
            .unwrap();
    }
}
