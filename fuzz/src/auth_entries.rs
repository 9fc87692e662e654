//! Fuzz entry points over the `_auth` handshake of `salt-proto`: the master's
//! decision on an arbitrary request (`auth_master`) and the minion's check of an
//! arbitrary reply (`auth_minion::AuthClient::handle_reply`).
//!
//! Shared like the other entry files: the `auth_master` / `auth_client` cargo-fuzz
//! targets call it, and `crates/proto/tests/fuzz_corpus.rs` includes it with
//! `#[path]` (together with `pki_entries.rs`, for the fixed keys) to replay the
//! corpora on stable. Depends only on `salt_proto`, `salt_pki` and `std`.

use std::sync::OnceLock;

use salt_pki::{HashType, PrivateKey, PublicKey, SigAlgo, Zeroizing};
use salt_proto::auth_master::{
    AcceptInner, Act, AuthRequest, AuthRet, KeyAction, KeyFacts, Pending, Policy, accept_inner,
    decide, fail_inner, signed_reply, valid_id,
};
use salt_proto::auth_minion::{AuthClient, AuthOutcome, AuthSettings};
use salt_proto::msg::{AuthResponse, SignedClearReply};
use salt_proto::{Value, decode, encode};

use super::keys::{KEY_STRING, NONCE, PRIVATE_PEM, SIGN_PRIVATE_PEM, SIGN_PUBLIC_PEM};

/// Python's `clean_key` as `salt-pki` implements it (the reference for comparisons).
fn clean(s: &str) -> String {
    salt_pki::clean_key(s)
}

/// The `_auth` load inside `v`: its `load` map if `v` is an envelope, else `v`.
fn auth_load(v: &Value) -> &Value {
    if let Value::Map(m) = v
        && let Some((_, load @ Value::Map(_))) = m.iter().find(|(k, _)| k.as_str() == Some("load"))
    {
        return load;
    }
    v
}

/// Target `auth_master`. Two selector bytes give the master's policy and what its key
/// directories hold for the id; the rest is a msgpack `_auth` request (an envelope or
/// its load). Checks the safety properties of [`decide`] and that every reply it
/// leads to reads back as the message the minion expects.
pub fn auth_master(data: &[u8]) {
    let [a, b, rest @ ..] = data else {
        return;
    };
    let Ok(v) = decode(rest) else {
        return;
    };
    let Ok(req) = AuthRequest::from_load(auth_load(&v)) else {
        return;
    };
    let policy = Policy {
        open_mode: a & 1 != 0,
        auto_sign: a & 2 != 0,
        auto_reject: a & 4 != 0,
        full: a & 8 != 0,
    };
    let other = "-----BEGIN PUBLIC KEY-----\nOTHER\n-----END PUBLIC KEY-----".to_owned();
    let stored = |sel: u8| match sel % 4 {
        0 => None,
        1 => Some(req.pub_key.clone()),
        2 => Some(format!("{}\r\n", req.pub_key)),
        _ => Some(other.clone()),
    };
    let facts = KeyFacts {
        rejected: a & 16 != 0,
        accepted: stored(a >> 5),
        pending: match b % 3 {
            0 => Pending::Absent,
            1 => stored(b >> 2).map_or(Pending::Directory, Pending::File),
            _ => Pending::Directory,
        },
    };
    let d = decide(&req, &facts, &policy);
    let presented = clean(&req.pub_key);

    // Nothing is ever written for an id that could leave the key directory.
    if !valid_id(&req.id) {
        assert_eq!(
            d.action,
            KeyAction::None,
            "key write for invalid id {:?}",
            req.id
        );
        assert!(d.outcome.is_err());
    }
    if policy.full {
        assert!(d.outcome.is_err() && d.action == KeyAction::None);
    }
    if d.outcome.is_ok() {
        assert_eq!(d.act, Act::Accept);
        if !policy.open_mode {
            // No sign-in with a rejected id or a key other than the accepted one.
            assert!(!facts.rejected, "accepted a rejected minion");
            if let Some(k) = &facts.accepted {
                assert_eq!(
                    clean(k),
                    presented,
                    "accepted a different key for a known id"
                );
            } else {
                assert!(
                    policy.auto_sign && !policy.auto_reject,
                    "accepted without policy"
                );
            }
        }
    }

    // The replies this decision leads to must read back as the minion reads them.
    let inner = match d.outcome {
        Err(ret) => {
            let bytes = fail_inner(&req.nonce, ret);
            let back = decode(&bytes).expect("own fail_inner decodes");
            let want = match ret {
                AuthRet::Rejected => Value::Boolean(false),
                AuthRet::Pending => Value::Boolean(true),
                AuthRet::Full => Value::from("full"),
            };
            assert_eq!(salt_compat::map_get(&back, "ret"), Some(&want));
            bytes
        }
        Ok(()) => {
            let token = req.token.as_deref();
            let bytes = accept_inner(&AcceptInner {
                pub_key: &presented,
                publish_port: u16::from(*b) << 8 | u16::from(*a),
                pub_sig: token,
                token,
                aes: rest,
                session: rest,
                sig: rest,
                nonce: &req.nonce,
            });
            let back = decode(&bytes).expect("own accept_inner decodes");
            assert_eq!(
                salt_compat::map_get(&back, "nonce").and_then(Value::as_str),
                Some(req.nonce.as_str())
            );
            bytes
        }
    };
    let reply = signed_reply(inner.clone(), rest.to_vec());
    let read = SignedClearReply::from_value(&reply).expect("own signed reply reads");
    assert_eq!(encode(&read.to_value()), encode(&reply));
    assert!(matches!(
        AuthResponse::from_bytes(&encode(&reply)),
        Ok(AuthResponse::Signed(_))
    ));
}

fn minion_key() -> &'static PrivateKey {
    static K: OnceLock<PrivateKey> = OnceLock::new();
    K.get_or_init(|| PrivateKey::from_pem(SIGN_PRIVATE_PEM.as_bytes(), None).expect("vector key"))
}

fn master_key() -> &'static PrivateKey {
    static K: OnceLock<PrivateKey> = OnceLock::new();
    K.get_or_init(|| PrivateKey::from_pem(PRIVATE_PEM.as_bytes(), None).expect("vector key"))
}

fn sign_pub() -> &'static PublicKey {
    static K: OnceLock<PublicKey> = OnceLock::new();
    K.get_or_init(|| PublicKey::from_pem(SIGN_PUBLIC_PEM.as_bytes()).expect("vector key"))
}

/// Bytes of a str or bin value.
fn raw(v: &Value) -> Option<&[u8]> {
    match v {
        Value::String(s) => Some(s.as_bytes()),
        Value::Binary(b) => Some(b),
        _ => None,
    }
}

/// "Seals" a fuzzed inner reply as a real master would, so the fuzzer reaches the
/// checks after the cryptography: `aes`, `session` and `token` (given as plaintext)
/// are OAEP-encrypted to the minion's key, a `sig` of `"x931"` becomes the master's
/// X9.31 signature of sha256-hex(aes), and the whole is signed with the master key.
fn seal(inner: &Value) -> Value {
    let minion_pub = minion_key().public_key();
    let alg = salt_pki::EncAlgo::OaepSha1;
    let aes_plain = salt_compat::map_get(inner, "aes")
        .and_then(raw)
        .map(<[u8]>::to_vec);
    let mut sealed = inner.clone();
    if let Value::Map(m) = &mut sealed {
        for (k, v) in m.iter_mut() {
            match k.as_str() {
                Some("aes" | "session" | "token") => {
                    if let Some(ct) = raw(v).and_then(|p| minion_pub.encrypt_oaep(alg, p).ok()) {
                        *v = Value::Binary(ct);
                    }
                }
                Some("sig") if v.as_str() == Some("x931") => {
                    let digest = hex_sha256(aes_plain.as_deref().unwrap_or_default());
                    if let Ok(s) = master_key().x931_sign(digest.as_bytes()) {
                        *v = Value::Binary(s);
                    }
                }
                _ => {}
            }
        }
    }
    let inner_bytes = encode(&sealed);
    let sig = master_key()
        .sign(SigAlgo::Pkcs1v15Sha1, &inner_bytes)
        .unwrap_or_default();
    signed_reply(inner_bytes, sig)
}

fn hex_sha256(data: &[u8]) -> String {
    HashType::Sha256
        .digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Target `auth_client`. The selector byte chooses the minion's settings (cached
/// master key, `verify_master_pubkey_sign`, `always_verify_signature`, `open_mode`,
/// `rejected_retry`, `master_finger`) and whether the rest is a whole reply or an
/// inner load to [`seal`]. The minion's token is the vectors' Crypticle key string
/// and the request nonce is [`NONCE`], so sealed seeds can sign in for real.
///
/// Safety properties checked: a minion holding a cached master key (and not in open
/// mode / signed-key mode) never signs in with another master key, and any accepted
/// reply is signed by the key the minion ends up trusting. Returns whether the
/// minion signed in (the replay test checks the sealed seeds really do).
pub fn auth_client(data: &[u8]) -> bool {
    let Some((&sel, rest)) = data.split_first() else {
        return false;
    };
    let Ok(v) = decode(rest) else {
        return false;
    };
    let master_pub_text = clean(&master_key().public_key().to_pem());
    let mut settings = AuthSettings::new("fuzz-minion");
    settings.verify_master_pubkey_sign = sel & 2 != 0;
    settings.always_verify_signature = sel & 4 != 0;
    settings.open_mode = sel & 8 != 0;
    settings.rejected_retry = sel & 16 != 0;
    if sel & 32 != 0 {
        settings.master_finger = Some(salt_pki::pem_finger(
            master_pub_text.as_bytes(),
            HashType::Sha256,
        ));
    }
    let cached = (sel & 1 != 0).then(|| master_pub_text.clone());
    let sign_pub = settings
        .verify_master_pubkey_sign
        .then(|| sign_pub().clone());
    let pinned = cached.is_some() && !settings.open_mode && !settings.verify_master_pubkey_sign;
    let finger = settings.master_finger.is_some();
    let mut client = AuthClient::with_token(
        settings,
        minion_key().clone(),
        cached,
        sign_pub,
        Zeroizing::new(KEY_STRING.to_owned()),
    );
    let (_request, pending) = client.build_request(NONCE);
    let reply = if sel & 64 != 0 { seal(&v) } else { v };
    if let Ok(AuthOutcome::Accepted(creds)) = client.handle_reply(&pending, &reply) {
        let got = clean(&creds.master_pub.to_pem());
        if pinned || finger {
            assert_eq!(
                got, master_pub_text,
                "signed in with a different master key"
            );
        }
        let cached = client
            .cached_master_pub()
            .and_then(|pem| PublicKey::from_pem(pem.as_bytes()).ok())
            .map(|k| clean(&k.to_pem()));
        assert_eq!(
            cached.as_deref(),
            Some(got.as_str()),
            "trusted key != cached key"
        );
        return true;
    }
    false
}
