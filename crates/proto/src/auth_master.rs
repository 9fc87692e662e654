//! Master side of the `_auth` handshake (salt-wire-protocol.md §3.4, §3.5), sans-IO.
//!
//! The master daemon feeds three things in and gets a decision out:
//! 1. [`AuthRequest::from_load`] parses the clear `_auth` load;
//! 2. the daemon reads the key-state files into [`KeyFacts`] and its policy into [`Policy`]
//!    (auto-accept, autosign/autoreject matches, whether the master is full);
//! 3. [`decide`] returns a [`Decision`]: what to write into the key directories and which
//!    reply to send. Nothing here touches a file, a socket or the clock.
//!
//! Replies: [`fail_inner`] / [`accept_inner`] produce the msgpack bytes of INNER in
//! Python's key order; the caller signs them (PKCS#1 v1.5, master.pem, the request's
//! `sig_algo`) and wraps both with [`signed_reply`] into
//! `{"enc": "clear", "load": INNER bytes, "sig": signature}`, the form 3006.30/3007.17
//! minions require. Like the rest of this crate, no cryptography happens here: the
//! ciphertexts and signatures come in as bytes.

use rmpv::Value;

/// `encryption_algorithm` names Salt accepts.
pub const ENC_ALGOS: [&str; 2] = ["OAEP-SHA1", "OAEP-SHA224"];
/// `signing_algorithm` names Salt accepts.
pub const SIG_ALGOS: [&str; 2] = ["PKCS1v15-SHA1", "PKCS1v15-SHA224"];

/// Salt's `clean_key` (`"\n".join(key.strip().splitlines())`, with Python's whitespace and
/// line breaks): the one implementation in `salt-pki`, so the key-state decision and the
/// key files can never disagree (fuzz finding 3 in docs/security.md).
pub use salt_pki::clean_key;

/// A parsed `_auth` load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthRequest {
    /// Minion id (not yet validated: see [`valid_id`]).
    pub id: String,
    /// Request nonce, echoed in every signed reply.
    pub nonce: String,
    /// OAEP algorithm for `aes`, `session`, `token` (one of [`ENC_ALGOS`]).
    pub enc_algo: String,
    /// PKCS#1 v1.5 algorithm for the reply signature and `pub_sig` (one of [`SIG_ALGOS`]).
    pub sig_algo: String,
    /// RSA-OAEP ciphertext of the minion's token, present once it caches our key.
    pub token: Option<Vec<u8>>,
    /// The minion's public key PEM text exactly as received.
    pub pub_key: String,
}

/// Why an `_auth` load cannot be handled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthRequestError {
    /// The load is not a map.
    #[error("auth load is not a map")]
    NotAMap,
    /// A required field is missing or has the wrong type.
    #[error("auth load has no valid {0}")]
    Missing(&'static str),
    /// `enc_algo` names an algorithm we do not implement (reply "bad enc algo").
    #[error("unsupported enc_algo {0:?}")]
    BadEncAlgo(String),
    /// `sig_algo` names an algorithm we do not implement (reply "bad sig algo").
    #[error("unsupported sig_algo {0:?}")]
    BadSigAlgo(String),
}

/// The `ret` of a failed (or pending) sign-in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthRet {
    /// Rejected, denied or invalid: `ret: False` (the minion exits 77 unless `rejected_retry`).
    Refused,
    /// Pending acceptance: `ret: True` (the minion retries).
    Pending,
    /// `max_minions` reached: `ret: "full"`.
    Full,
}

/// What the master knows about the id's key files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyFacts {
    /// `minions_rejected/<id>` exists.
    pub rejected: bool,
    /// Text of `minions/<id>` if it exists.
    pub accepted: Option<String>,
    /// `minions_pre/<id>`.
    pub pending: Pending,
}

/// State of `minions_pre/<id>`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Pending {
    /// No such entry.
    #[default]
    Absent,
    /// A file with this key text.
    File(String),
    /// A directory (Salt refuses the id).
    Directory,
}

/// The master's acceptance policy for this request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// `open_mode: True`: accept everything, overwrite stored keys.
    pub open_mode: bool,
    /// `auto_accept`, an `autosign_file` match, or a fresh `minions_autosign` stub.
    pub auto_sign: bool,
    /// An `autoreject_file` match.
    pub auto_reject: bool,
    /// `max_minions` is reached and this id is not among the connected ones.
    pub full: bool,
}

/// Change to make in the key directories before replying.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyAction {
    /// Nothing to write.
    None,
    /// Write the presented key to `minions_pre/<id>`.
    WritePending,
    /// Write the presented key to `minions_denied/<id>`.
    WriteDenied,
    /// Write the presented key to `minions_rejected/<id>`.
    WriteRejected,
    /// Move `minions_pre/<id>` to `minions_rejected/<id>`.
    MovePendingToRejected,
    /// Write the presented key to `minions/<id>` (overwriting in open mode).
    WriteAccepted,
    /// Remove `minions_pre/<id>` and write the key to `minions/<id>`.
    PendingToAccepted,
}

/// Outcome label as Salt's `salt/auth` event `act` field says it (for logs and events).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// Signed in.
    Accept,
    /// Waiting for acceptance.
    Pend,
    /// Rejected (stored or by `autoreject_file`).
    Reject,
    /// A different key for a known id.
    Denied,
    /// `max_minions` reached.
    Full,
    /// Invalid id.
    Invalid,
}

/// The decision for one `_auth` request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Key-directory change to make first.
    pub action: KeyAction,
    /// `Ok(())` = build [`accept_reply`]; `Err(ret)` = build [`fail_reply`] with `ret`.
    pub outcome: Result<(), AuthRet>,
    /// Event/log label.
    pub act: Act,
}

impl AuthRequest {
    /// Parse the clear `load` of an `_auth` request (the caller already checked `cmd`).
    pub fn from_load(load: &Value) -> Result<Self, AuthRequestError> {
        let map = load.as_map().ok_or(AuthRequestError::NotAMap)?;
        let get = |key: &str| {
            map.iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v)
        };
        let text = |key: &'static str| -> Result<String, AuthRequestError> {
            match get(key) {
                Some(Value::String(s)) => s
                    .as_str()
                    .map(str::to_owned)
                    .ok_or(AuthRequestError::Missing(key)),
                _ => Err(AuthRequestError::Missing(key)),
            }
        };
        let id = text("id")?;
        let nonce = text("nonce")?;
        let pub_key = text("pub")?;
        let algo = |key: &str, valid: &[&str], default: &str| -> Result<String, String> {
            match get(key) {
                None | Some(Value::Nil) => Ok(default.to_owned()),
                Some(v) => {
                    let s = v.as_str().unwrap_or_default();
                    if valid.contains(&s) {
                        Ok(s.to_owned())
                    } else {
                        Err(s.to_owned())
                    }
                }
            }
        };
        let sig_algo =
            algo("sig_algo", &SIG_ALGOS, SIG_ALGOS[0]).map_err(AuthRequestError::BadSigAlgo)?;
        let enc_algo =
            algo("enc_algo", &ENC_ALGOS, ENC_ALGOS[0]).map_err(AuthRequestError::BadEncAlgo)?;
        let token = match get("token") {
            Some(Value::String(s)) => Some(s.as_bytes().to_vec()),
            Some(Value::Binary(b)) => Some(b.clone()),
            _ => None,
        };
        Ok(AuthRequest {
            id,
            nonce,
            enc_algo,
            sig_algo,
            token,
            pub_key,
        })
    }
}

/// Salt's `valid_id`: the one minion-id rule, `salt_compat::id`.
pub use salt_compat::id::valid_id;

/// Decide an `_auth` request, in Salt's order (§3.4).
pub fn decide(req: &AuthRequest, facts: &KeyFacts, policy: &Policy) -> Decision {
    let fail = |action, ret, act| Decision {
        action,
        outcome: Err(ret),
        act,
    };
    let accept = |action| Decision {
        action,
        outcome: Ok(()),
        act: Act::Accept,
    };
    if !valid_id(&req.id) {
        return fail(KeyAction::None, AuthRet::Refused, Act::Invalid);
    }
    if policy.full {
        return fail(KeyAction::None, AuthRet::Full, Act::Full);
    }
    let presented = clean_key(&req.pub_key);
    if policy.open_mode {
        let same = facts
            .accepted
            .as_deref()
            .is_some_and(|k| clean_key(k) == presented);
        return accept(if same {
            KeyAction::None
        } else {
            KeyAction::WriteAccepted
        });
    }
    if facts.rejected {
        return fail(KeyAction::None, AuthRet::Refused, Act::Reject);
    }
    if let Some(stored) = &facts.accepted {
        return if clean_key(stored) == presented {
            accept(KeyAction::None)
        } else {
            fail(KeyAction::WriteDenied, AuthRet::Refused, Act::Denied)
        };
    }
    match &facts.pending {
        Pending::Directory => fail(KeyAction::None, AuthRet::Refused, Act::Invalid),
        Pending::Absent => {
            if policy.auto_reject {
                fail(KeyAction::WriteRejected, AuthRet::Refused, Act::Reject)
            } else if !policy.auto_sign {
                fail(KeyAction::WritePending, AuthRet::Pending, Act::Pend)
            } else {
                accept(KeyAction::WriteAccepted)
            }
        }
        Pending::File(stored) => {
            let same = clean_key(stored) == presented;
            if policy.auto_reject {
                fail(
                    KeyAction::MovePendingToRejected,
                    AuthRet::Refused,
                    Act::Reject,
                )
            } else if !same {
                fail(KeyAction::WriteDenied, AuthRet::Refused, Act::Denied)
            } else if !policy.auto_sign {
                fail(KeyAction::None, AuthRet::Pending, Act::Pend)
            } else {
                accept(KeyAction::PendingToAccepted)
            }
        }
    }
}

/// The fields of a successful sign-in reply, crypto already done by the caller.
#[derive(Clone, Copy, Debug)]
pub struct AcceptInner<'a> {
    /// `clean_key(master.pub)`.
    pub pub_key: &'a str,
    /// `publish_port`.
    pub publish_port: u16,
    /// `pub_sig` (base64 + "\n" for `master_sign_pubkey`, the file text otherwise).
    pub pub_sig: Option<&'a [u8]>,
    /// The request token re-encrypted to the minion (present iff the request had one
    /// that decrypted).
    pub token: Option<&'a [u8]>,
    /// Publish AES key string, OAEP-encrypted to the minion.
    pub aes: &'a [u8],
    /// Session key string, OAEP-encrypted to the minion.
    pub session: &'a [u8],
    /// X9.31 signature by master.pem over hex(sha256(publish key string)).
    pub sig: &'a [u8],
    /// The request nonce.
    pub nonce: &'a str,
}

fn s(v: &str) -> Value {
    Value::from(v)
}

/// INNER bytes of a failure reply: `{"ret": ret, "nonce": nonce}` (§3.5).
pub fn fail_inner(nonce: &str, ret: AuthRet) -> Vec<u8> {
    let ret = match ret {
        AuthRet::Refused => Value::Boolean(false),
        AuthRet::Pending => Value::Boolean(true),
        AuthRet::Full => s("full"),
    };
    crate::encode(&Value::Map(vec![(s("ret"), ret), (s("nonce"), s(nonce))]))
}

/// INNER bytes of a success reply (§3.5), in Python's key order:
/// `enc, pub_key, publish_port, [pub_sig], [token], aes, session, sig, nonce`.
pub fn accept_inner(f: &AcceptInner<'_>) -> Vec<u8> {
    let mut inner = vec![
        (s("enc"), s("pub")),
        (s("pub_key"), s(f.pub_key)),
        (s("publish_port"), Value::from(f.publish_port)),
    ];
    if let Some(sig) = f.pub_sig {
        inner.push((s("pub_sig"), Value::Binary(sig.to_vec())));
    }
    if let Some(tok) = f.token {
        inner.push((s("token"), Value::Binary(tok.to_vec())));
    }
    inner.push((s("aes"), Value::Binary(f.aes.to_vec())));
    inner.push((s("session"), Value::Binary(f.session.to_vec())));
    inner.push((s("sig"), Value::Binary(f.sig.to_vec())));
    inner.push((s("nonce"), s(f.nonce)));
    crate::encode(&Value::Map(inner))
}

/// The signed clear reply `{"enc": "clear", "load": inner, "sig": sig}`.
pub fn signed_reply(inner: Vec<u8>, sig: Vec<u8>) -> Value {
    Value::Map(vec![
        (s("enc"), s("clear")),
        (s("load"), Value::Binary(inner)),
        (s("sig"), Value::Binary(sig)),
    ])
}

/// The unsigned replies Salt sends when it cannot use the requested algorithm:
/// `{"enc": "clear", "load": {"ret": "bad enc algo" | "bad sig algo"}}`.
pub fn unsigned_reply(ret: &str) -> Value {
    Value::Map(vec![
        (s("enc"), s("clear")),
        (s("load"), Value::Map(vec![(s("ret"), s(ret))])),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_A: &str = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----";
    const KEY_B: &str = "-----BEGIN PUBLIC KEY-----\nBBBB\n-----END PUBLIC KEY-----";

    fn req(id: &str, key: &str) -> AuthRequest {
        AuthRequest {
            id: id.into(),
            nonce: "0123456789abcdef0123456789abcdef".into(),
            enc_algo: "OAEP-SHA1".into(),
            sig_algo: "PKCS1v15-SHA1".into(),
            token: None,
            pub_key: key.into(),
        }
    }

    fn d(action: KeyAction, outcome: Result<(), AuthRet>, act: Act) -> Decision {
        Decision {
            action,
            outcome,
            act,
        }
    }

    #[test]
    fn new_minion_pends_or_autosigns_or_autorejects() {
        let r = req("m1", KEY_A);
        let none = KeyFacts::default();
        assert_eq!(
            decide(&r, &none, &Policy::default()),
            d(KeyAction::WritePending, Err(AuthRet::Pending), Act::Pend)
        );
        let auto = Policy {
            auto_sign: true,
            ..Policy::default()
        };
        assert_eq!(
            decide(&r, &none, &auto),
            d(KeyAction::WriteAccepted, Ok(()), Act::Accept)
        );
        let rej = Policy {
            auto_reject: true,
            auto_sign: true,
            ..Policy::default()
        };
        assert_eq!(
            decide(&r, &none, &rej),
            d(KeyAction::WriteRejected, Err(AuthRet::Refused), Act::Reject)
        );
    }

    #[test]
    fn accepted_key_must_match() {
        // Trailing newline / CRLF differences do not matter (clean_key on both sides).
        let facts = KeyFacts {
            accepted: Some(format!("{}\r\n", KEY_A.replace('\n', "\r\n"))),
            ..KeyFacts::default()
        };
        assert_eq!(
            decide(&req("m1", KEY_A), &facts, &Policy::default()),
            d(KeyAction::None, Ok(()), Act::Accept)
        );
        assert_eq!(
            decide(&req("m1", KEY_B), &facts, &Policy::default()),
            d(KeyAction::WriteDenied, Err(AuthRet::Refused), Act::Denied)
        );
    }

    #[test]
    fn pending_states() {
        let facts = KeyFacts {
            pending: Pending::File(KEY_A.into()),
            ..KeyFacts::default()
        };
        assert_eq!(
            decide(&req("m1", KEY_A), &facts, &Policy::default()),
            d(KeyAction::None, Err(AuthRet::Pending), Act::Pend)
        );
        assert_eq!(
            decide(&req("m1", KEY_B), &facts, &Policy::default()),
            d(KeyAction::WriteDenied, Err(AuthRet::Refused), Act::Denied)
        );
        let auto = Policy {
            auto_sign: true,
            ..Policy::default()
        };
        assert_eq!(
            decide(&req("m1", KEY_A), &facts, &auto),
            d(KeyAction::PendingToAccepted, Ok(()), Act::Accept)
        );
        let rej = Policy {
            auto_reject: true,
            ..Policy::default()
        };
        assert_eq!(
            decide(&req("m1", KEY_A), &facts, &rej),
            d(
                KeyAction::MovePendingToRejected,
                Err(AuthRet::Refused),
                Act::Reject
            )
        );
        let dir = KeyFacts {
            pending: Pending::Directory,
            ..KeyFacts::default()
        };
        assert_eq!(
            decide(&req("m1", KEY_A), &dir, &auto),
            d(KeyAction::None, Err(AuthRet::Refused), Act::Invalid)
        );
    }

    #[test]
    fn rejected_full_invalid_open() {
        let rejected = KeyFacts {
            rejected: true,
            accepted: Some(KEY_A.into()),
            ..KeyFacts::default()
        };
        assert_eq!(
            decide(&req("m1", KEY_A), &rejected, &Policy::default()),
            d(KeyAction::None, Err(AuthRet::Refused), Act::Reject)
        );
        let full = Policy {
            full: true,
            auto_sign: true,
            ..Policy::default()
        };
        assert_eq!(
            decide(&req("m1", KEY_A), &KeyFacts::default(), &full),
            d(KeyAction::None, Err(AuthRet::Full), Act::Full)
        );
        for bad in ["", ".", "..", "a/b", "a\\b", "a\0b"] {
            assert_eq!(
                decide(&req(bad, KEY_A), &KeyFacts::default(), &full).act,
                Act::Invalid
            );
        }
        let open = Policy {
            open_mode: true,
            ..Policy::default()
        };
        let other = KeyFacts {
            accepted: Some(KEY_B.into()),
            ..KeyFacts::default()
        };
        assert_eq!(
            decide(&req("m1", KEY_A), &other, &open),
            d(KeyAction::WriteAccepted, Ok(()), Act::Accept)
        );
        assert_eq!(decide(&req("m1", KEY_A), &rejected, &open).outcome, Ok(()));
    }

    #[test]
    fn inner_maps_in_python_order() {
        let inner = crate::decode(&fail_inner("n1", AuthRet::Full)).unwrap();
        assert_eq!(
            inner,
            Value::Map(vec![(s("ret"), s("full")), (s("nonce"), s("n1"))])
        );
        let f = AcceptInner {
            pub_key: "PK",
            publish_port: 4505,
            pub_sig: Some(b"c2ln\n"),
            token: None,
            aes: &[1],
            session: &[2],
            sig: &[3],
            nonce: "n2",
        };
        let inner = crate::decode(&accept_inner(&f)).unwrap();
        let keys: Vec<&str> = inner
            .as_map()
            .unwrap()
            .iter()
            .map(|(k, _)| k.as_str().unwrap())
            .collect();
        assert_eq!(
            keys,
            [
                "enc",
                "pub_key",
                "publish_port",
                "pub_sig",
                "aes",
                "session",
                "sig",
                "nonce"
            ]
        );
        let reply = signed_reply(vec![9], vec![8]);
        assert_eq!(crate::map_get(&reply, "enc"), Some(&s("clear")));
        assert_eq!(clean_key(" a\r\nb\n\n"), "a\nb");
        // Python's splitlines also breaks on \x0b, \x0c, \x1c-\x1e, \x85, \u2028...
        assert_eq!(clean_key("a\x0cb\u{2028}c\x0b"), "a\nb\nc");
    }

    #[test]
    fn parse_load() {
        let load = Value::Map(vec![
            (s("cmd"), s("_auth")),
            (s("id"), s("m1")),
            (s("nonce"), s("n")),
            (s("enc_algo"), s("OAEP-SHA224")),
            (s("sig_algo"), s("PKCS1v15-SHA224")),
            (s("token"), Value::Binary(vec![0xff, 1])),
            (s("pub"), s(KEY_A)),
        ]);
        let r = AuthRequest::from_load(&load).unwrap();
        assert_eq!(r.enc_algo, "OAEP-SHA224");
        assert_eq!(r.sig_algo, "PKCS1v15-SHA224");
        assert_eq!(r.token.as_deref(), Some(&[0xff, 1][..]));
        let no_nonce = Value::Map(vec![(s("id"), s("m1")), (s("pub"), s(KEY_A))]);
        assert_eq!(
            AuthRequest::from_load(&no_nonce),
            Err(AuthRequestError::Missing("nonce"))
        );
        let bad = Value::Map(vec![
            (s("id"), s("m1")),
            (s("nonce"), s("n")),
            (s("pub"), s(KEY_A)),
            (s("enc_algo"), s("RSA-NOPE")),
        ]);
        assert_eq!(
            AuthRequest::from_load(&bad),
            Err(AuthRequestError::BadEncAlgo("RSA-NOPE".into()))
        );
        assert_eq!(
            AuthRequest::from_load(&s("x")),
            Err(AuthRequestError::NotAMap)
        );
    }
}
