//! Signed minion messages against golden vectors from Salt 3008.5's own code
//! (`scripts/gen-signed-load-vectors.py`): the bytes a signed load's signature covers, the
//! master's verification, and our minion's signature (RSASSA-PKCS1-v1_5 is deterministic, so
//! ours must equal Salt's byte for byte).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use salt_pki::{PrivateKey, PublicKey, SigAlgo};
use salt_proto::msg::{AesMeta, LoadSignature, check_load, sign_load, signed_bytes};
use salt_proto::{Value, decode, map_remove};

fn vectors() -> serde_json::Value {
    serde_json::from_str(include_str!("vectors/signed_loads.json")).unwrap()
}

fn keys(v: &serde_json::Value) -> (PrivateKey, PublicKey) {
    let private = PrivateKey::from_pem(v["minion_pem"].as_str().unwrap().as_bytes(), None).unwrap();
    let public = PublicKey::from_pem(v["minion_pub"].as_str().unwrap().as_bytes()).unwrap();
    (private, public)
}

/// The load as our master's request handler sees it: decoded, `nonce` and `tok` taken.
fn received(wire_hex: &str) -> Value {
    let mut load = decode(&hex::decode(wire_hex).unwrap()).unwrap();
    AesMeta::take(&mut load, 3).unwrap();
    load
}

#[test]
fn the_master_verifies_what_salt_3008_minions_sign() {
    let all = vectors();
    let (_, public) = keys(&all);
    let list = all["vectors"].as_array().unwrap();
    assert_eq!(list.len(), 8);
    for v in list {
        let name = v["name"].as_str().unwrap();
        let alg: SigAlgo = v["algorithm"].as_str().unwrap().parse().unwrap();
        let mut load = received(v["wire_hex"].as_str().unwrap());
        assert_eq!(
            hex::encode(signed_bytes(&load)),
            v["signed_hex"].as_str().unwrap(),
            "{name}: signed bytes"
        );
        assert_eq!(
            check_load(&mut load, Some(&public), alg),
            LoadSignature::Valid,
            "{name}"
        );
        // `sig` is put back at the end, as Salt's `_return` does.
        let Value::Map(entries) = &load else { panic!() };
        assert_eq!(entries.last().unwrap().0.as_str(), Some("sig"), "{name}");
        // The other algorithm, a changed field, another key: not valid.
        let other = match alg {
            SigAlgo::Pkcs1v15Sha1 => SigAlgo::Pkcs1v15Sha224,
            _ => SigAlgo::Pkcs1v15Sha1,
        };
        assert_eq!(
            check_load(&mut load, Some(&public), other),
            LoadSignature::Invalid
        );
        let mut tampered = load.clone();
        salt_proto::map_set(&mut tampered, "id", Value::from("m2"));
        assert_eq!(
            check_load(&mut tampered, Some(&public), alg),
            LoadSignature::Invalid
        );
        assert_eq!(check_load(&mut load, None, alg), LoadSignature::NoKey);
        map_remove(&mut load, "sig");
        assert_eq!(
            check_load(&mut load, Some(&public), alg),
            LoadSignature::Unsigned
        );
    }
}

#[test]
fn our_minion_signs_as_salt_3008_does() {
    let all = vectors();
    let (private, _) = keys(&all);
    for v in all["vectors"].as_array().unwrap() {
        let name = v["name"].as_str().unwrap();
        let alg: SigAlgo = v["algorithm"].as_str().unwrap().parse().unwrap();
        // The load as the minion has it before signing: every channel field, no sig.
        let mut load = decode(&hex::decode(v["wire_hex"].as_str().unwrap()).unwrap()).unwrap();
        map_remove(&mut load, "sig");
        sign_load(&mut load, &private, alg).unwrap();
        let Value::Map(entries) = &load else { panic!() };
        let (k, sig) = entries.last().unwrap();
        assert_eq!(k.as_str(), Some("sig"), "{name}");
        assert_eq!(
            hex::encode(sig.as_slice().unwrap()),
            v["sig_hex"].as_str().unwrap(),
            "{name}: signature"
        );
    }
}
