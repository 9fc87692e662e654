//! Fuzz entry points over `salt-pki`: the Crypticle layer, PEM loading, master
//! public-key signatures and the RSA operations a peer's bytes reach.
//!
//! This file is shared: the cargo-fuzz targets call it through the `salt-fuzz` crate,
//! and `crates/pki/tests/fuzz_corpus.rs` includes it with `#[path]` to replay the
//! committed corpora on stable `cargo test`. It must therefore depend only on
//! `salt_pki` and crates `salt-pki` itself depends on (`base64`, `hmac`, `sha2`).
//!
//! Every entry returns normally on any input; a panic (including the invariant
//! assertions below) is a finding. Keys are the public golden-vector test keys.

use std::sync::OnceLock;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use salt_pki::pubsig::{decode_pub_sig, pub_sig_from_signature_file, verify_master_pubkey};
use salt_pki::{
    Crypticle, EncAlgo, Error, HashType, PICKLE_PAD, PrivateKey, PublicKey, SigAlgo, clean_key,
    pem_finger,
};
use sha2::Sha256;

pub use super::keys::{KEY_STRING, NONCE, PASSPHRASE, PRIVATE_PEM, SIGN_PUBLIC_PEM};

const HASHES: [HashType; 6] = [
    HashType::Md5,
    HashType::Sha1,
    HashType::Sha224,
    HashType::Sha256,
    HashType::Sha384,
    HashType::Sha512,
];

/// Number of modes [`crypticle`] selects from with its first byte.
pub const CRYPTICLE_MODES: u8 = 4;

fn fixed_crypticle() -> &'static Crypticle {
    static C: OnceLock<Crypticle> = OnceLock::new();
    C.get_or_init(|| Crypticle::from_key_string(KEY_STRING).expect("vector key string parses"))
}

fn sign_public() -> &'static PublicKey {
    static K: OnceLock<PublicKey> = OnceLock::new();
    K.get_or_init(|| PublicKey::from_pem(SIGN_PUBLIC_PEM.as_bytes()).expect("vector key parses"))
}

fn private_key() -> &'static PrivateKey {
    static K: OnceLock<PrivateKey> = OnceLock::new();
    K.get_or_init(|| PrivateKey::from_pem(PRIVATE_PEM.as_bytes(), None).expect("vector key parses"))
}

/// HMAC-SHA256 tag of `body` under the fixed key's MAC half: lets the fuzzer hand
/// `decrypt` arbitrary authenticated ciphertexts (bad lengths, any padding byte).
fn forge_tag(body: &[u8]) -> Vec<u8> {
    let raw = STANDARD
        .decode(KEY_STRING)
        .expect("vector key string is base64");
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&raw[24..]).expect("any key length");
    mac.update(body);
    mac.finalize().into_bytes().to_vec()
}

/// Target `crypticle`. The first byte picks a mode; the rest is the input:
///
/// * 0 — raw peer bytes: `decrypt`, `loads` with and without a nonce, and the bytes
///   as a key string (the minion parses the master's decrypted AES key);
/// * 1 — the bytes are a *plaintext*: encrypt, then `decrypt`/`loads` (reaches the
///   post-MAC code with a MAC-correct message whose content is garbage);
/// * 2 — the bytes are `IV || CT` with any length and padding: a valid tag is
///   appended, so the post-MAC length and padding checks see hostile shapes;
/// * 3 — `dumps` then `loads` with the nonce: the body must come back unchanged.
///
/// Returns the msgpack body `loads` produced, if any, for the caller to decode.
pub fn crypticle(data: &[u8]) -> Option<Vec<u8>> {
    let (&sel, rest) = data.split_first()?;
    let c = fixed_crypticle();
    match sel % CRYPTICLE_MODES {
        0 => {
            let _ = c.decrypt(rest);
            let _ = c.loads(rest, Some(NONCE));
            let _ = Crypticle::from_key_string(&String::from_utf8_lossy(rest));
            c.loads(rest, None).ok().map(|b| b.to_vec())
        }
        1 => {
            let iv: [u8; 16] = core::array::from_fn(|i| i as u8);
            let ct = c.encrypt_with_iv(rest, &iv);
            let plain = c.decrypt(&ct).expect("own ciphertext decrypts");
            assert_eq!(plain.as_slice(), rest, "decrypt(encrypt(p)) != p");
            let body = c.loads(&ct, None).expect("own ciphertext loads");
            match rest.strip_prefix(PICKLE_PAD) {
                Some(after) => assert_eq!(body.as_slice(), after),
                None => assert_eq!(body.as_slice(), [0x80]),
            }
            match c.loads(&ct, Some(NONCE)) {
                Ok(b) => {
                    let after = rest.strip_prefix(PICKLE_PAD);
                    assert!(
                        after.is_none_or(|a| a.starts_with(NONCE.as_bytes())),
                        "nonce accepted without being present"
                    );
                    let _ = b;
                }
                Err(Error::NonceMismatch) => {}
                Err(e) => panic!("unexpected loads error on own ciphertext: {e}"),
            }
            Some(body.to_vec())
        }
        2 => {
            let mut msg = rest.to_vec();
            msg.extend_from_slice(&forge_tag(rest));
            match c.decrypt(&msg) {
                Err(Error::BadMac) => panic!("forged tag rejected"),
                Err(Error::Malformed(_)) => {
                    assert!(rest.len() < 32 || rest.len() % 16 != 0);
                }
                Err(e) => panic!("unexpected decrypt error: {e}"),
                Ok(p) => assert!(p.len() < rest.len()),
            }
            let _ = c.loads(&msg, Some(NONCE));
            c.loads(&msg, None).ok().map(|b| b.to_vec())
        }
        _ => {
            let ct = c.dumps(rest, Some(NONCE));
            let body = c.loads(&ct, Some(NONCE)).expect("own dumps loads");
            assert_eq!(body.as_slice(), rest, "loads(dumps(b)) != b");
            let plain = c.loads(&ct, None).expect("own dumps loads");
            assert!(plain.starts_with(NONCE.as_bytes()));
            Some(body.to_vec())
        }
    }
}

/// Target `pubkey`: the peer-reachable half of [`pem`] at full speed — fingerprints
/// and key normalisation of arbitrary text and `PublicKey::from_pem` (what a peer
/// sends as `pub`/`pub_key`). A key that loads must re-serialise to a PEM that loads
/// to the same key.
pub fn pubkey(data: &[u8]) {
    for h in HASHES {
        let f = pem_finger(data, h);
        assert_eq!(f.len(), h.digest(b"").len() * 3 - 1);
    }
    let text = String::from_utf8_lossy(data);
    let clean = clean_key(&text);
    assert_eq!(clean_key(&clean), clean, "clean_key is not idempotent");

    if let Some(k) = public_from_pem(data) {
        let again = PublicKey::from_pem(k.to_pem().as_bytes()).expect("own PEM parses");
        assert_eq!(again.to_pem(), k.to_pem());
        assert_eq!(k.bits().div_ceil(8) as usize, k.size());
    }
    let _ = public_from_pem(clean.as_bytes());
}

/// Target `pem`: everything [`pubkey`] does, plus private-key loading with no, the
/// right and a wrong passphrase (local files, but parsed by the same code; slow:
/// OpenSSL checks every RSA key it loads and derives keys for encrypted PEM).
pub fn pem(data: &[u8]) {
    pubkey(data);
    for pass in [None, Some(PASSPHRASE), Some(&b"\0"[..])] {
        if let Ok(k) = PrivateKey::from_pem(data, pass) {
            let pem = k.to_pem(None).expect("own key serialises");
            let again = PrivateKey::from_pem(&pem, None).expect("own PEM parses");
            assert_eq!(again.public_key().to_pem(), k.public_key().to_pem());
        }
    }
}

/// `PublicKey::from_pem`, except on input holding `ENCRYPTED`: known finding (see
/// `docs/security.md`), such PEM makes OpenSSL prompt for a passphrase on the
/// terminal, which would hang a `cargo test` run in a shell. The reproducers are in
/// `fuzz/artifacts-regressions/pem/` and checked by `public_from_pem_never_prompts`.
/// Drop this guard once `salt-pki` refuses encrypted PEM for public keys.
pub fn public_from_pem(data: &[u8]) -> Option<PublicKey> {
    if data.windows(9).any(|w| w == b"ENCRYPTED") {
        return None;
    }
    PublicKey::from_pem(data).ok()
}

/// Splits `rest` at the first NUL byte: `(before, after)`; all of it is `before`
/// when there is none.
fn split_nul(rest: &[u8]) -> (&[u8], &[u8]) {
    match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[]),
    }
}

/// Target `pubsig`: a minion checking a master's `pub_key` against `pub_sig`
/// (`verify_master_pubkey` with the fixed signing key). Input: one byte choosing
/// the algorithm, then `pub_key NUL pub_sig`.
pub fn pubsig(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let alg = if sel & 1 == 0 {
        SigAlgo::Pkcs1v15Sha1
    } else {
        SigAlgo::Pkcs1v15Sha224
    };
    let (pub_key, pub_sig) = split_nul(rest);
    let _ = decode_pub_sig(pub_sig);
    let _ = pub_sig_from_signature_file(&String::from_utf8_lossy(pub_sig));
    let _ = verify_master_pubkey(sign_public(), pub_key, pub_sig, alg);
    let _ = public_from_pem(pub_key);
}

/// Target `rsa`: the RSA operations on peer bytes — OAEP decryption (a master
/// decrypting a minion's `token`, a minion decrypting the `aes` key), PKCS#1 v1.5
/// verification and X9.31 recovery (the minion checking the master's `sig`).
/// Input: one selector byte, then `message NUL signature-or-ciphertext`.
pub fn rsa(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let key = private_key();
    let public = key.public_key();
    let (msg, blob) = split_nul(rest);
    match sel % 4 {
        0 => {
            let _ = key.decrypt_oaep(EncAlgo::OaepSha1, rest);
            let _ = key.decrypt_oaep(EncAlgo::OaepSha224, rest);
        }
        1 => {
            let _ = public.verify(SigAlgo::Pkcs1v15Sha1, msg, blob);
            let _ = public.verify(SigAlgo::Pkcs1v15Sha224, msg, blob);
        }
        2 => {
            let _ = public.x931_recover(rest);
        }
        _ => {
            // Encrypt then decrypt must round-trip whenever the message fits.
            if let Ok(ct) = public.encrypt_oaep(EncAlgo::OaepSha1, rest) {
                let p = key.decrypt_oaep(EncAlgo::OaepSha1, &ct).expect("own OAEP");
                assert_eq!(p.as_slice(), rest);
            }
            // Known edge (reported, not ours to fix): `x931_sign(b"")` succeeds but its
            // signature never recovers (OpenSSL's X9.31 check wants a non-empty
            // message). Salt only signs 4- and 64-byte messages.
            if let Ok(sig) = key.x931_sign(rest)
                && !rest.is_empty()
            {
                assert_eq!(public.x931_recover(&sig).expect("own X9.31"), rest);
            }
        }
    }
}
