//! Minion-side sign-in checks against a fake master built from salt-pki calls.
//!
//! Each test builds the reply a Salt master would send (§3.5), optionally broken in one
//! way, and asserts the typed error naming the check that refused it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;

use salt_pki::{Crypticle, EncAlgo, HashType, PrivateKey, PublicKey, SigAlgo, Zeroizing};
use salt_proto::Value;
use salt_proto::auth_minion::{
    AuthAction, AuthClient, AuthError, AuthNote, AuthOutcome, AuthSettings, PendingAuth,
};

struct Keys {
    minion: PrivateKey,
    master: PrivateKey,
    other_master: PrivateKey,
    sign: PrivateKey,
    other_sign: PrivateKey,
}

fn keys() -> &'static Keys {
    static K: OnceLock<Keys> = OnceLock::new();
    K.get_or_init(|| Keys {
        minion: PrivateKey::generate(2048).unwrap(),
        master: PrivateKey::generate(2048).unwrap(),
        other_master: PrivateKey::generate(2048).unwrap(),
        sign: PrivateKey::generate(2048).unwrap(),
        other_sign: PrivateKey::generate(2048).unwrap(),
    })
}

const NONCE: &str = "0123456789abcdef0123456789abcdef";
const TOKEN: &str = "dG9rZW4tdG9rZW4tdG9rZW4tdG9rZW4tdG9rZW4tdG9rZW4tdG9rZW4tdG9rZW4tdG9rZW4=";

fn clean_pub(k: &PrivateKey) -> String {
    salt_pki::clean_key(&k.public_key().to_pem())
}

/// How the fake master builds its reply.
#[derive(Clone)]
struct Fake {
    master: PrivateKey,
    /// Sign `pub_key` with this key (master_sign_pubkey).
    pub_sig_by: Option<PrivateKey>,
    /// Echo the token back (decrypting the request's token with `master`).
    echo_token: bool,
    /// Replace the echoed token with this text.
    wrong_token: Option<&'static str>,
    /// Sign the outer load with this key instead of `master`.
    outer_by: Option<PrivateKey>,
    nonce: &'static str,
    aes_sig: bool,
    aes_sig_by: Option<PrivateKey>,
    ret: Option<Value>,
}

impl Fake {
    fn new() -> Self {
        Self {
            master: keys().master.clone(),
            pub_sig_by: None,
            echo_token: true,
            wrong_token: None,
            outer_by: None,
            nonce: NONCE,
            aes_sig: true,
            aes_sig_by: None,
            ret: None,
        }
    }

    fn reply(&self, request: &Value) -> Value {
        let load = get(request, "load").unwrap();
        let minion_pub =
            PublicKey::from_pem(get(load, "pub").unwrap().as_str().unwrap().as_bytes()).unwrap();
        let enc = EncAlgo::OaepSha1;
        let inner = if let Some(ret) = &self.ret {
            Value::Map(vec![
                ("ret".into(), ret.clone()),
                ("nonce".into(), self.nonce.into()),
            ])
        } else {
            let aes = Crypticle::generate();
            let session = Crypticle::generate();
            let pub_key = clean_pub(&self.master);
            let mut m: Vec<(Value, Value)> = vec![
                ("enc".into(), "pub".into()),
                ("pub_key".into(), pub_key.as_str().into()),
                ("publish_port".into(), 4505.into()),
            ];
            if let Some(sk) = &self.pub_sig_by {
                let sig = salt_pki::pubsig::sign_master_pubkey(sk, &pub_key, SigAlgo::Pkcs1v15Sha1)
                    .unwrap();
                m.push((
                    "pub_sig".into(),
                    Value::Binary(salt_pki::pubsig::pub_sig_value(&sig)),
                ));
            }
            if self.echo_token
                && let Some(tok_ct) = get(load, "token")
            {
                let tok = match self.wrong_token {
                    Some(t) => t.as_bytes().to_vec(),
                    None => self
                        .master
                        .decrypt_oaep(enc, bytes(tok_ct))
                        .unwrap()
                        .to_vec(),
                };
                m.push((
                    "token".into(),
                    Value::Binary(minion_pub.encrypt_oaep(enc, &tok).unwrap()),
                ));
            }
            m.push((
                "aes".into(),
                Value::Binary(
                    minion_pub
                        .encrypt_oaep(enc, aes.key_string().as_bytes())
                        .unwrap(),
                ),
            ));
            m.push((
                "session".into(),
                Value::Binary(
                    minion_pub
                        .encrypt_oaep(enc, session.key_string().as_bytes())
                        .unwrap(),
                ),
            ));
            if self.aes_sig {
                let digest = hex::encode(HashType::Sha256.digest(aes.key_string().as_bytes()));
                let by = self.aes_sig_by.as_ref().unwrap_or(&self.master);
                m.push((
                    "sig".into(),
                    Value::Binary(by.x931_sign(digest.as_bytes()).unwrap()),
                ));
            }
            m.push(("nonce".into(), self.nonce.into()));
            Value::Map(m)
        };
        let bytes_ = salt_proto::encode(&inner);
        let by = self.outer_by.as_ref().unwrap_or(&self.master);
        let sig = by.sign(SigAlgo::Pkcs1v15Sha1, &bytes_).unwrap();
        Value::Map(vec![
            ("enc".into(), "clear".into()),
            ("load".into(), Value::Binary(bytes_)),
            ("sig".into(), Value::Binary(sig)),
        ])
    }
}

fn get<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    v.as_map()?
        .iter()
        .find(|(key, _)| key.as_str() == Some(k))
        .map(|(_, v)| v)
}

fn bytes(v: &Value) -> &[u8] {
    match v {
        Value::String(s) => s.as_bytes(),
        Value::Binary(b) => b,
        _ => panic!("not bytes"),
    }
}

fn client(settings: AuthSettings, cached: Option<String>, sign: Option<&PrivateKey>) -> AuthClient {
    AuthClient::with_token(
        settings,
        keys().minion.clone(),
        cached,
        sign.map(PrivateKey::public_key),
        Zeroizing::new(TOKEN.to_owned()),
    )
}

/// Build the request, let `fake` answer, round-trip the reply through msgpack, check it.
fn exchange(c: &mut AuthClient, fake: &Fake) -> Result<AuthOutcome, AuthError> {
    let (req, pending): (Value, PendingAuth) = c.build_request(NONCE);
    let req = salt_proto::decode(&salt_proto::encode(&req)).unwrap();
    let reply = salt_proto::decode(&salt_proto::encode(&fake.reply(&req))).unwrap();
    c.handle_reply(&pending, &reply)
}

fn accepted(r: Result<AuthOutcome, AuthError>) -> Box<salt_proto::auth_minion::Credentials> {
    match r {
        Ok(AuthOutcome::Accepted(c)) => c,
        other => panic!("expected accepted, got {other:?}"),
    }
}

#[test]
fn request_shape_matches_salt() {
    let c = client(AuthSettings::new("m1"), None, None);
    let (req, pending) = c.build_request(NONCE);
    assert_eq!(pending.nonce(), NONCE);
    let keys_: Vec<&str> = req
        .as_map()
        .unwrap()
        .iter()
        .map(|(k, _)| k.as_str().unwrap())
        .collect();
    assert_eq!(keys_, ["enc", "load", "version"]);
    assert_eq!(get(&req, "version"), Some(&Value::from(3)));
    let load = get(&req, "load").unwrap();
    let lk: Vec<&str> = load
        .as_map()
        .unwrap()
        .iter()
        .map(|(k, _)| k.as_str().unwrap())
        .collect();
    assert_eq!(
        lk,
        ["cmd", "id", "nonce", "enc_algo", "sig_algo", "pub"],
        "no token without cached key"
    );
    assert_eq!(
        get(load, "pub").unwrap().as_str().unwrap(),
        clean_pub(&keys().minion)
    );
    assert_eq!(get(load, "enc_algo").unwrap().as_str(), Some("OAEP-SHA1"));

    let c = client(
        AuthSettings::new("m1"),
        Some(clean_pub(&keys().master)),
        None,
    );
    let (req, _) = c.build_request(NONCE);
    let load = get(&req, "load").unwrap();
    let tok = get(load, "token").expect("token with cached master key");
    let plain = keys()
        .master
        .decrypt_oaep(EncAlgo::OaepSha1, bytes(tok))
        .unwrap();
    assert_eq!(plain.as_slice(), TOKEN.as_bytes());
}

#[test]
fn tofu_first_contact_then_token_round_trip() {
    let mut c = client(AuthSettings::new("m1"), None, None);
    let creds = accepted(exchange(&mut c, &Fake::new()));
    assert_eq!(creds.publish_port, 4505);
    assert_eq!(
        creds.actions,
        vec![AuthAction::WriteMasterPub(clean_pub(&keys().master))]
    );
    assert!(creds.notes.contains(&AuthNote::DecryptingAes));
    // Second sign-in: token sent and checked, nothing to write.
    let creds = accepted(exchange(&mut c, &Fake::new()));
    assert!(creds.actions.is_empty());
}

#[test]
fn cached_key_with_trailing_newline_still_matches() {
    let cached = format!("{}\n", clean_pub(&keys().master));
    let mut c = client(AuthSettings::new("m1"), Some(cached), None);
    accepted(exchange(&mut c, &Fake::new()));
}

#[test]
fn changed_master_key_is_refused() {
    let mut c = client(
        AuthSettings::new("m1"),
        Some(clean_pub(&keys().other_master)),
        None,
    );
    let fake = Fake {
        echo_token: false,
        ..Fake::new()
    };
    let err = exchange(&mut c, &fake).unwrap_err();
    assert_eq!(err, AuthError::MasterKeyChanged);
    assert!(err.is_master_key_failure());
}

#[test]
fn token_not_echoed_or_wrong_is_refused() {
    let mut c = client(
        AuthSettings::new("m1"),
        Some(clean_pub(&keys().master)),
        None,
    );
    let fake = Fake {
        echo_token: false,
        ..Fake::new()
    };
    assert_eq!(
        exchange(&mut c, &fake).unwrap_err(),
        AuthError::TokenMismatch
    );
    let fake = Fake {
        wrong_token: Some("nope"),
        ..Fake::new()
    };
    assert_eq!(
        exchange(&mut c, &fake).unwrap_err(),
        AuthError::TokenMismatch
    );
}

fn verifying() -> AuthSettings {
    AuthSettings {
        verify_master_pubkey_sign: true,
        ..AuthSettings::new("m1")
    }
}

#[test]
fn signed_master_key_accepted_and_any_signed_master_trusted() {
    let k = keys();
    let mut c = client(verifying(), None, Some(&k.sign));
    let fake = Fake {
        pub_sig_by: Some(k.sign.clone()),
        ..Fake::new()
    };
    let creds = accepted(exchange(&mut c, &fake));
    assert!(creds.notes.contains(&AuthNote::PubSigVerified));
    assert!(creds.notes.contains(&AuthNote::SignedPubkeyReceived));
    assert_eq!(
        creds.actions,
        vec![AuthAction::WriteMasterPub(clean_pub(&k.master))]
    );
    // A different master whose key is signed by the same signing key: accepted, key replaced.
    let other = Fake {
        master: k.other_master.clone(),
        pub_sig_by: Some(k.sign.clone()),
        echo_token: false,
        ..Fake::new()
    };
    let creds = accepted(exchange(&mut c, &other));
    assert_eq!(
        creds.actions,
        vec![AuthAction::WriteMasterPub(clean_pub(&k.other_master))]
    );
    assert_eq!(
        c.cached_master_pub(),
        Some(clean_pub(&k.other_master).as_str())
    );
}

#[test]
fn pub_sig_by_wrong_key_is_refused() {
    let k = keys();
    let mut c = client(verifying(), None, Some(&k.sign));
    let fake = Fake {
        pub_sig_by: Some(k.other_sign.clone()),
        ..Fake::new()
    };
    assert_eq!(
        exchange(&mut c, &fake).unwrap_err(),
        AuthError::PubSigInvalid
    );
    // The same with a cached but different master key.
    let mut c = client(verifying(), Some(clean_pub(&k.other_master)), Some(&k.sign));
    let fake = Fake {
        pub_sig_by: Some(k.other_sign.clone()),
        echo_token: false,
        ..Fake::new()
    };
    assert_eq!(
        exchange(&mut c, &fake).unwrap_err(),
        AuthError::PubSigInvalid
    );
}

#[test]
fn missing_verification_key_is_refused() {
    let mut c = client(verifying(), None, None);
    let fake = Fake {
        pub_sig_by: Some(keys().sign.clone()),
        ..Fake::new()
    };
    assert_eq!(
        exchange(&mut c, &fake).unwrap_err(),
        AuthError::SignKeyMissing("master_sign".into())
    );
}

#[test]
fn check_auth_deps_both_ways() {
    // Master signs, minion does not verify.
    let mut c = client(AuthSettings::new("m1"), None, None);
    let fake = Fake {
        pub_sig_by: Some(keys().sign.clone()),
        ..Fake::new()
    };
    assert_eq!(
        exchange(&mut c, &fake).unwrap_err(),
        AuthError::AuthDeps {
            master_signs: true,
            minion_verifies: false
        }
    );
    // Minion verifies, master does not sign.
    let mut c = client(verifying(), None, Some(&keys().sign));
    assert_eq!(
        exchange(&mut c, &Fake::new()).unwrap_err(),
        AuthError::AuthDeps {
            master_signs: false,
            minion_verifies: true
        }
    );
}

#[test]
fn always_verify_signature_checks_unchanged_key() {
    let k = keys();
    let settings = AuthSettings {
        always_verify_signature: true,
        ..verifying()
    };
    let mut c = client(settings.clone(), Some(clean_pub(&k.master)), Some(&k.sign));
    let bad = Fake {
        pub_sig_by: Some(k.other_sign.clone()),
        ..Fake::new()
    };
    assert_eq!(
        exchange(&mut c, &bad).unwrap_err(),
        AuthError::PubSigInvalid
    );
    let good = Fake {
        pub_sig_by: Some(k.sign.clone()),
        ..Fake::new()
    };
    let creds = accepted(exchange(&mut c, &good));
    assert!(creds.actions.is_empty());
}

#[test]
fn outer_signature_nonce_and_aes_sig_checks() {
    let k = keys();
    let mut c = client(AuthSettings::new("m1"), Some(clean_pub(&k.master)), None);
    let fake = Fake {
        outer_by: Some(k.other_master.clone()),
        ..Fake::new()
    };
    assert_eq!(exchange(&mut c, &fake).unwrap_err(), AuthError::Signature);
    let fake = Fake {
        nonce: "ffffffffffffffffffffffffffffffff",
        ..Fake::new()
    };
    assert_eq!(exchange(&mut c, &fake).unwrap_err(), AuthError::Nonce);
    let fake = Fake {
        aes_sig: false,
        ..Fake::new()
    };
    assert_eq!(
        exchange(&mut c, &fake).unwrap_err(),
        AuthError::AesSigMissing
    );
    let fake = Fake {
        aes_sig_by: Some(k.other_master.clone()),
        ..Fake::new()
    };
    assert_eq!(
        exchange(&mut c, &fake).unwrap_err(),
        AuthError::AesSigMismatch
    );
}

#[test]
fn tofu_reply_with_bad_outer_signature_pins_nothing() {
    let mut c = client(AuthSettings::new("m1"), None, None);
    let fake = Fake {
        outer_by: Some(keys().other_master.clone()),
        ..Fake::new()
    };
    assert_eq!(exchange(&mut c, &fake).unwrap_err(), AuthError::Signature);
    assert_eq!(c.cached_master_pub(), None);
}

#[test]
fn ret_values() {
    let mut c = client(AuthSettings::new("m1"), None, None);
    let pending = Fake {
        ret: Some(Value::Boolean(true)),
        ..Fake::new()
    };
    assert!(matches!(exchange(&mut c, &pending), Ok(AuthOutcome::Retry)));
    let rejected = Fake {
        ret: Some(Value::Boolean(false)),
        ..Fake::new()
    };
    assert_eq!(
        exchange(&mut c, &rejected).unwrap_err(),
        AuthError::Rejected
    );
    let full = Fake {
        ret: Some(Value::from("full")),
        ..Fake::new()
    };
    assert_eq!(exchange(&mut c, &full).unwrap_err(), AuthError::Full);
    let mut c = client(
        AuthSettings {
            rejected_retry: true,
            ..AuthSettings::new("m1")
        },
        None,
        None,
    );
    assert!(matches!(
        exchange(&mut c, &rejected),
        Ok(AuthOutcome::Retry)
    ));
    // A pending reply signed by a stranger is refused once the master key is cached.
    let mut c = client(
        AuthSettings::new("m1"),
        Some(clean_pub(&keys().master)),
        None,
    );
    let forged = Fake {
        outer_by: Some(keys().other_master.clone()),
        ..pending
    };
    assert_eq!(exchange(&mut c, &forged).unwrap_err(), AuthError::Signature);
}

#[test]
fn master_finger() {
    let k = keys();
    let finger = salt_pki::pem_finger(clean_pub(&k.master).as_bytes(), HashType::Sha256);
    let settings = AuthSettings {
        master_finger: Some(finger),
        ..AuthSettings::new("m1")
    };
    let mut c = client(settings, None, None);
    accepted(exchange(&mut c, &Fake::new()));
    let settings = AuthSettings {
        master_finger: Some("aa:bb".into()),
        ..AuthSettings::new("m1")
    };
    let mut c = client(settings, None, None);
    assert!(matches!(
        exchange(&mut c, &Fake::new()).unwrap_err(),
        AuthError::FingerMismatch { .. }
    ));
}

#[test]
fn malformed_and_algo_replies() {
    let mut c = client(AuthSettings::new("m1"), None, None);
    let (_, pending) = c.build_request(NONCE);
    assert_eq!(
        c.handle_reply(&pending, &Value::from("bad load"))
            .unwrap_err(),
        AuthError::Malformed
    );
    let algo = |r: &str| {
        Value::Map(vec![
            ("enc".into(), "clear".into()),
            ("load".into(), Value::Map(vec![("ret".into(), r.into())])),
        ])
    };
    assert_eq!(
        c.handle_reply(&pending, &algo("bad enc algo")).unwrap_err(),
        AuthError::BadEncAlgo
    );
    assert_eq!(
        c.handle_reply(&pending, &algo("bad sig algo")).unwrap_err(),
        AuthError::BadSigAlgo
    );
    let garbage = Value::Map(vec![
        ("load".into(), Value::Binary(vec![0xc1])),
        ("sig".into(), Value::Binary(vec![0])),
    ]);
    assert_eq!(
        c.handle_reply(&pending, &garbage).unwrap_err(),
        AuthError::InnerDecode
    );
}
