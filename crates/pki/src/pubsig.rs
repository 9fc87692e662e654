//! Master public-key signing (`master_sign_pubkey`, wire protocol §5.2).
//!
//! The signed message is the *clean_key* form of `master.pub` (LF line endings, no trailing
//! newline), which is also the `pub_key` a master sends. Signatures travel as base64 with a
//! trailing `"\n"` (`pub_sig`) or sit in the `master_pubkey_signature` file (same text).
//!
//! # Trailing-newline tolerance (Salt issue #68930)
//!
//! Salt versions before the #68930 fix (PRs #68934, #69650) signed the raw `master.pub` file,
//! *with* its trailing newline, while masters always send `pub_key` *without* it; such a
//! signature file never verified. Salt 3006.30 / 3007.17 sign the clean form. To interoperate
//! with signature files from either era, [`verify_master_pubkey`] accepts a signature over
//! the text as received, its clean_key form, or the clean_key form plus `"\n"`. These texts
//! differ only in whitespace outside the PEM body, so they name the same key; nothing an
//! attacker could not already do is gained.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::{Error, PrivateKey, PublicKey, SigAlgo, clean_key};

/// Raw PKCS#1 v1.5 signature over `clean_key(master_pub_pem)`.
pub fn sign_master_pubkey(
    sign_key: &PrivateKey,
    master_pub_pem: &str,
    alg: SigAlgo,
) -> Result<Vec<u8>, Error> {
    sign_key.sign(alg, clean_key(master_pub_pem).as_bytes())
}

/// The `pub_sig` value Salt puts in a dynamically signed auth reply:
/// `binascii.b2a_base64(sig)`, i.e. base64 plus `"\n"`, as bytes.
pub fn pub_sig_value(sig: &[u8]) -> Vec<u8> {
    signature_file(sig).into_bytes()
}

/// The `master_pubkey_signature` file body (`salt-key --gen-signature`): base64 + `"\n"`.
pub fn signature_file(sig: &[u8]) -> String {
    let mut s = STANDARD.encode(sig);
    s.push('\n');
    s
}

/// The `pub_sig` a master with `master_use_pubkey_signature: True` sends: the signature
/// file's text through clean_key (no trailing newline), as a str.
pub fn pub_sig_from_signature_file(file_text: &str) -> String {
    clean_key(file_text)
}

/// Decode a `pub_sig` like Python's `binascii.a2b_base64`: characters outside the base64
/// alphabet (whitespace, newlines) are skipped.
pub fn decode_pub_sig(pub_sig: &[u8]) -> Result<Vec<u8>, Error> {
    let clean: Vec<u8> = pub_sig
        .iter()
        .copied()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'='))
        .collect();
    STANDARD
        .decode(clean)
        .map_err(|_| Error::Malformed("pub_sig is not base64"))
}

/// Verify `pub_sig` (base64, see [`decode_pub_sig`]) over `pub_key` as received, with the
/// minion's `signing_algorithm`. Tolerates a trailing-newline mismatch in either direction
/// (see the module docs). [`Error::BadSignature`] if no form verifies.
pub fn verify_master_pubkey(
    sign_pub: &PublicKey,
    pub_key: &[u8],
    pub_sig: &[u8],
    alg: SigAlgo,
) -> Result<(), Error> {
    let sig = decode_pub_sig(pub_sig)?;
    if sign_pub.verify(alg, pub_key, &sig).is_ok() {
        return Ok(());
    }
    let Ok(text) = std::str::from_utf8(pub_key) else {
        return Err(Error::BadSignature);
    };
    let clean = clean_key(text);
    let with_nl = format!("{clean}\n");
    for candidate in [clean.as_bytes(), with_nl.as_bytes()] {
        if candidate != pub_key && sign_pub.verify(alg, candidate, &sig).is_ok() {
            return Ok(());
        }
    }
    Err(Error::BadSignature)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn newline_tolerance_both_directions() {
        let sign = PrivateKey::generate(2048).unwrap();
        let master = PrivateKey::generate(2048).unwrap();
        let file_text = master.public_key().to_pem(); // ends with "\n"
        let clean = clean_key(&file_text);
        assert!(!clean.ends_with('\n'));
        let sp = sign.public_key();

        // New-style signature (clean form) vs pub_key with and without newline.
        let sig = sign_master_pubkey(&sign, &file_text, SigAlgo::Pkcs1v15Sha1).unwrap();
        let v = pub_sig_value(&sig);
        for pk in [clean.as_bytes(), file_text.as_bytes()] {
            verify_master_pubkey(&sp, pk, &v, SigAlgo::Pkcs1v15Sha1).unwrap();
        }
        // Old-style signature over the raw file (with newline) vs clean pub_key.
        let old = sign
            .sign(SigAlgo::Pkcs1v15Sha1, file_text.as_bytes())
            .unwrap();
        let old_sig = pub_sig_from_signature_file(&signature_file(&old));
        for pk in [clean.as_bytes(), file_text.as_bytes()] {
            verify_master_pubkey(&sp, pk, old_sig.as_bytes(), SigAlgo::Pkcs1v15Sha1).unwrap();
        }
        // Wrong algorithm, other key, tampered key: rejected.
        assert!(matches!(
            verify_master_pubkey(&sp, clean.as_bytes(), &v, SigAlgo::Pkcs1v15Sha224),
            Err(Error::BadSignature)
        ));
        let other = PrivateKey::generate(2048).unwrap().public_key();
        assert!(verify_master_pubkey(&other, clean.as_bytes(), &v, SigAlgo::Pkcs1v15Sha1).is_err());
        let tampered = clean.replacen('A', "B", 1);
        assert!(verify_master_pubkey(&sp, tampered.as_bytes(), &v, SigAlgo::Pkcs1v15Sha1).is_err());
        assert!(
            verify_master_pubkey(&sp, clean.as_bytes(), b"!!!", SigAlgo::Pkcs1v15Sha1).is_err()
        );
    }
}
