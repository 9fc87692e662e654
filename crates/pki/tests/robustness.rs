//! Property tests (Crypticle round trips) and malformed input: every bad input is an `Err`,
//! never a panic.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::sync::OnceLock;

use proptest::prelude::*;
use salt_pki::{Crypticle, EncAlgo, Error, Fault, PrivateKey, PublicKey, SigAlgo, pubsig};

fn key() -> &'static PrivateKey {
    static KEY: OnceLock<PrivateKey> = OnceLock::new();
    KEY.get_or_init(|| PrivateKey::generate(2048).unwrap())
}

fn crypticle() -> &'static Crypticle {
    static C: OnceLock<Crypticle> = OnceLock::new();
    C.get_or_init(Crypticle::generate)
}

proptest! {
    #[test]
    fn crypticle_encrypt_decrypt(plain in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let c = crypticle();
        let data = c.encrypt(&plain);
        prop_assert_eq!(data.len() % 16, 0);
        prop_assert_eq!(c.decrypt(&data).unwrap().to_vec(), plain);
    }

    #[test]
    fn crypticle_dumps_loads(
        body in proptest::collection::vec(any::<u8>(), 0..1024),
        nonce in "[0-9a-f]{32}",
        with_nonce in any::<bool>(),
    ) {
        let c = crypticle();
        let n = with_nonce.then_some(nonce.as_str());
        let data = c.dumps(&body, n);
        prop_assert_eq!(c.loads(&data, n).unwrap().to_vec(), body);
    }

    #[test]
    fn crypticle_any_bitflip_is_rejected(
        plain in proptest::collection::vec(any::<u8>(), 0..256),
        pos in any::<prop::sample::Index>(),
        bit in 0u8..8,
    ) {
        let c = crypticle();
        let mut data = c.encrypt(&plain);
        let i = pos.index(data.len());
        data[i] ^= 1 << bit;
        prop_assert!(matches!(c.decrypt(&data), Err(Error::BadMac)));
    }

    #[test]
    fn crypticle_garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
        let c = crypticle();
        prop_assert!(c.decrypt(&data).is_err());
        prop_assert!(c.loads(&data, Some("0123456789abcdef0123456789abcdef")).is_err());
    }

    #[test]
    fn pem_garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        prop_assert!(PrivateKey::from_pem(&data, None).is_err());
        prop_assert!(PrivateKey::from_pem(&data, Some(b"pw\0x")).is_err());
        prop_assert!(PublicKey::from_pem(&data).is_err());
    }

    #[test]
    fn rsa_garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        let k = key();
        let p = k.public_key();
        prop_assert!(k.decrypt_oaep(EncAlgo::OaepSha1, &data).is_err());
        prop_assert!(p.verify(SigAlgo::Pkcs1v15Sha1, b"m", &data).is_err());
        // X9.31 recovery has no integrity check of its own: about 1 in 16,000 random inputs
        // carry a valid padding (first byte 0x6a/0x6b, last 0xcc, for r or n - r), so an `Ok`
        // is legitimate; what matters is that it never panics and never returns more than
        // the modulus.
        if let Ok(m) = p.x931_recover(&data) {
            prop_assert!(m.len() < 256);
        }
        prop_assert!(pubsig::verify_master_pubkey(&p, &data, &data, SigAlgo::Pkcs1v15Sha1).is_err());
    }
}

#[test]
fn crypticle_malformed() {
    let c = crypticle();
    let good = c.encrypt(b"hello");
    // Truncated: every prefix fails (the MAC moves), with the right error class.
    for n in 0..good.len() {
        let e = c.decrypt(&good[..n]).unwrap_err();
        assert!(matches!(e, Error::BadMac), "len {n}: {e:?}");
        assert_eq!(e.fault(), Fault::Peer);
    }
    // Wrong MAC.
    let mut bad = good.clone();
    *bad.last_mut().unwrap() ^= 0x80;
    assert!(matches!(c.decrypt(&bad), Err(Error::BadMac)));
    // A different key.
    assert!(matches!(
        Crypticle::generate().decrypt(&good),
        Err(Error::BadMac)
    ));
    // Authenticated but short / misaligned ciphertexts (only a key holder could make these).
    for body_len in [0usize, 15, 16, 17, 33] {
        let data = mac_only(c, &vec![0u8; body_len]);
        assert!(
            matches!(c.decrypt(&data), Err(Error::Malformed(_))),
            "body {body_len}"
        );
    }
    // Bad key strings.
    for ks in ["", "not base64!", "AAAA", &"A".repeat(76), &"A".repeat(80)] {
        assert!(
            matches!(Crypticle::from_key_string(ks), Err(Error::BadKeyString)),
            "{ks}"
        );
    }
}

/// Build `body || HMAC(body)` with the Crypticle's MAC key by decrypting nothing: we only
/// have the public API, so derive the MAC key from the key string.
fn mac_only(c: &Crypticle, body: &[u8]) -> Vec<u8> {
    use base64::Engine as _;
    use hmac::Mac;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(c.key_string())
        .unwrap();
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&raw[24..]).unwrap();
    mac.update(body);
    let mut out = body.to_vec();
    out.extend_from_slice(&mac.finalize().into_bytes());
    out
}

#[test]
fn rsa_malformed() {
    let k = key();
    let p = k.public_key();
    let ct = p.encrypt_oaep(EncAlgo::OaepSha1, b"secret").unwrap();
    // Short, long, flipped, wrong key: all DecryptFailed with no detail.
    for bad in [
        &ct[..ct.len() - 1],
        &[ct.as_slice(), &[0]].concat()[..],
        &[0u8; 256][..],
    ] {
        let e = k.decrypt_oaep(EncAlgo::OaepSha1, bad).unwrap_err();
        assert!(matches!(e, Error::DecryptFailed));
        assert_eq!(e.to_string(), "decryption failed");
    }
    let mut flipped = ct.clone();
    flipped[100] ^= 1;
    assert!(matches!(
        k.decrypt_oaep(EncAlgo::OaepSha1, &flipped),
        Err(Error::DecryptFailed)
    ));
    let other = PrivateKey::generate(2048).unwrap();
    assert!(matches!(
        other.decrypt_oaep(EncAlgo::OaepSha1, &ct),
        Err(Error::DecryptFailed)
    ));

    // Caller errors.
    assert!(matches!(
        p.encrypt_oaep(EncAlgo::OaepSha1, &[0; 215]),
        Err(Error::MessageTooLong)
    ));
    p.encrypt_oaep(EncAlgo::OaepSha1, &[0; 214]).unwrap();
    assert!(matches!(k.x931_sign(&[0; 253]), Err(Error::MessageTooLong)));
    k.x931_sign(&[0; 252]).unwrap();

    // X9.31: a PKCS#1 signature is not an X9.31 block, and vice versa.
    let pk = k.sign(SigAlgo::Pkcs1v15Sha1, b"salt").unwrap();
    assert!(matches!(p.x931_recover(&pk), Err(Error::BadSignature)));
    let x = k.x931_sign(b"salt").unwrap();
    assert!(matches!(
        p.verify(SigAlgo::Pkcs1v15Sha1, b"salt", &x),
        Err(Error::BadSignature)
    ));
    assert!(matches!(
        p.x931_recover(&[0xff; 256]),
        Err(Error::BadSignature)
    ));
    assert!(matches!(
        p.x931_recover(&[1; 257]),
        Err(Error::BadSignature)
    ));
}

#[test]
fn pem_malformed() {
    let pem = key().to_pem(None).unwrap();
    let text = std::str::from_utf8(&pem).unwrap();
    let cases = [
        String::new(),
        "garbage".to_owned(),
        text[..text.len() / 2].to_owned(),
        text.replace("MII", "MIJ"),
        "-----BEGIN RSA PRIVATE KEY-----\n!!!!\n-----END RSA PRIVATE KEY-----\n".to_owned(),
    ];
    for c in &cases {
        let e = PrivateKey::from_pem(c.as_bytes(), None).unwrap_err();
        assert_eq!(e.fault(), Fault::Input, "{e:?}");
        assert!(PublicKey::from_pem(c.as_bytes()).is_err());
    }
    // A private key where a public one is expected, and a non-RSA key.
    assert!(PublicKey::from_pem(&pem).is_err());
    let ec = openssl::ec::EcKey::generate(
        &openssl::ec::EcGroup::from_curve_name(openssl::nid::Nid::X9_62_PRIME256V1).unwrap(),
    )
    .unwrap();
    let ec_pem = openssl::pkey::PKey::from_ec_key(ec).unwrap();
    assert!(matches!(
        PrivateKey::from_pem(&ec_pem.private_key_to_pem_pkcs8().unwrap(), None),
        Err(Error::UnsupportedKey)
    ));
    assert!(matches!(
        PublicKey::from_pem(&ec_pem.public_key_to_pem().unwrap()),
        Err(Error::UnsupportedKey)
    ));
    // Passphrase containing NUL and an over-long passphrase: errors, not panics.
    let enc = key().to_pem(Some(b"pw")).unwrap();
    assert!(PrivateKey::from_pem(&enc, Some(b"p\0w")).is_err());
    assert!(PrivateKey::from_pem(&enc, Some(&[b'x'; 5000])).is_err());
}
