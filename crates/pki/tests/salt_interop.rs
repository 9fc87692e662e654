//! Reverse direction: outputs of salt-pki handed to real Salt (a Salt venv's python runs
//! `tests/salt_check.py`, which uses Salt's own functions); the venv is required
//! (`salt_testkit`: a failure under CI=true, else a recorded skip).

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use salt_pki::{
    Crypticle, EncAlgo, HashType, PrivateKey, SigAlgo, files, generate_key_string, pubsig,
};
use serde_json::json;

fn b64(b: &[u8]) -> String {
    STANDARD.encode(b)
}

#[test]
fn salt_accepts_our_outputs() {
    let Some(venv) = salt_testkit::require(salt_testkit::any_salt_venv()) else {
        return;
    };
    println!("using Salt venv {}", venv.display());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    let key = files::load_or_generate(d, "master", 2048).unwrap();
    let sign = files::load_or_generate(d, "master_sign", 2048).unwrap();
    let minion_pki = d.join("minion_pki");
    std::fs::create_dir(&minion_pki).unwrap();
    files::write_public_key(&minion_pki.join("master_sign.pub"), &sign.public_key()).unwrap();
    let passphrase = "our-pass";
    let enc = PrivateKey::generate(2048).unwrap();
    files::write_private_key(&d.join("encrypted.pem"), &enc, Some(passphrase.as_bytes())).unwrap();
    files::write_public_key(&d.join("encrypted.pub"), &enc.public_key()).unwrap();

    let public = key.public_key();
    let msgs: [&[u8]; 3] = [b"salt", b"", b"a longer message with \x00 bytes"];
    let mut pkcs1 = vec![];
    let mut oaep = vec![];
    for m in msgs {
        for alg in [SigAlgo::Pkcs1v15Sha1, SigAlgo::Pkcs1v15Sha224] {
            pkcs1.push(json!({"alg": alg.as_str(), "message_hex": hex::encode(m),
                "signature": b64(&key.sign(alg, m).unwrap())}));
        }
        for alg in [EncAlgo::OaepSha1, EncAlgo::OaepSha224] {
            oaep.push(json!({"alg": alg.as_str(), "plaintext_hex": hex::encode(m),
                "ciphertext": b64(&public.encrypt_oaep(alg, m).unwrap())}));
        }
    }
    let hex64 = hex::encode([0xabu8; 32]);
    let x931: Vec<_> = [b"salt".as_slice(), hex64.as_bytes()]
        .iter()
        .map(|m| json!({"message_hex": hex::encode(m), "signature": b64(&key.x931_sign(m).unwrap())}))
        .collect();

    let ks = generate_key_string();
    let c = Crypticle::from_key_string(&ks).unwrap();
    // {"fun": "test.ping", "arg": []} as msgpack.
    let body = b"\x82\xa3fun\xa9test.ping\xa3arg\x90";
    let nonce = "0123456789abcdef0123456789abcdef";
    let crypticle = vec![
        json!({"nonce": null, "data": b64(&c.dumps(body, None)), "expect": {"fun": "test.ping", "arg": []}}),
        json!({"nonce": nonce, "data": b64(&c.dumps(body, Some(nonce))), "expect": {"fun": "test.ping", "arg": []}}),
    ];

    let pub_text = std::fs::read_to_string(d.join("master.pub")).unwrap();
    let sig = pubsig::sign_master_pubkey(&sign, &pub_text, SigAlgo::Pkcs1v15Sha1).unwrap();
    files::atomic_write(
        &d.join("master_pubkey_signature"),
        pubsig::signature_file(&sig).as_bytes(),
        0o644,
    )
    .unwrap();
    let pub_sig: Vec<_> = [SigAlgo::Pkcs1v15Sha1, SigAlgo::Pkcs1v15Sha224]
        .iter()
        .map(|&alg| {
            let s = pubsig::sign_master_pubkey(&sign, &pub_text, alg).unwrap();
            json!({"alg": alg.as_str(), "value": String::from_utf8(pubsig::pub_sig_value(&s)).unwrap()})
        })
        .collect();
    let fingers: Vec<_> = [HashType::Sha256, HashType::Md5]
        .iter()
        .map(|&h| json!({"hash_type": h.as_str(), "finger": public.fingerprint(h)}))
        .collect();

    let manifest = json!({
        "passphrase": passphrase, "pkcs1": pkcs1, "x931": x931, "oaep": oaep,
        "key_string": ks.as_str(), "crypticle": crypticle,
        "encrypted": b64(&c.encrypt(b"hello salt")),
        "pub_sig": pub_sig, "fingers": fingers,
    });
    std::fs::write(d.join("manifest.json"), manifest.to_string()).unwrap();

    run_check(&venv, d);
}

fn run_check(venv: &Path, dir: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/salt_check.py");
    let out = Command::new(venv.join("bin/python"))
        .arg(&script)
        .arg(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "Salt rejected our output:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("ALL OK"));
    assert!(stdout.contains("ok verify_pubkey_sig over our master_pubkey_signature file"));
}
