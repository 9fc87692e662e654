//! Master side of the `_auth` handshake (salt-wire-protocol.md §3.4, §3.5), sans-IO.
//!
//! The master daemon feeds three things in and gets a decision out:
//! 1. [`AuthRequest::from_load`] parses the clear `_auth` load (the one reader,
//!    [`crate::msg::AuthRequest`], plus the algorithm checks Salt answers unsigned);
//! 2. the daemon reads the key-state files into [`KeyFacts`] and its policy into [`Policy`]
//!    (auto-accept, autosign/autoreject matches, whether the master is full);
//! 3. [`decide`] returns a [`Decision`]: what to write into the key directories and which
//!    reply to send. Nothing here touches a file, a socket or the clock.
//!
//! Replies: [`fail_reply`] / [`accept_reply`] build the signed clear reply
//! `{"enc": "clear", "load": INNER bytes, "sig": signature}` (the form 3006.30/3007.17
//! minions require) through [`crate::msg`]'s `AuthFailure` / `AuthSuccess` /
//! `SignedClearReply`. Every RSA operation (token decryption, encryption to the minion,
//! the PKCS#1 signature) goes through the [`KeyPairOps`] the caller passes: the same
//! trait the minion's half ([`crate::auth_minion`]) takes. No cryptography happens here.

use rmpv::Value;

use crate::msg::InvalidMessage;
use crate::msg::fields::Fields;

mod reply;

pub use crate::msg::{AuthRequest, AuthRet};
pub use reply::{
    AcceptInner, AcceptKeys, accept_inner, accept_reply, enc_algo_of, fail_inner, fail_reply,
    sig_algo_of, signed_reply, unsigned_reply,
};

/// `encryption_algorithm` names Salt accepts.
pub const ENC_ALGOS: [&str; 2] = ["OAEP-SHA1", "OAEP-SHA224"];
/// `signing_algorithm` names Salt accepts.
pub const SIG_ALGOS: [&str; 2] = ["PKCS1v15-SHA1", "PKCS1v15-SHA224"];

/// Salt's `clean_key` (`"\n".join(key.strip().splitlines())`, with Python's whitespace and
/// line breaks): the one implementation in `salt-pki`, so the key-state decision and the
/// key files can never disagree (fuzz finding 3 in docs/security.md).
pub use salt_pki::clean_key;

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
    /// Parse the clear `load` of an `_auth` request (the caller already checked `cmd`):
    /// `id`, `nonce` and `pub` first (a missing one is answered `"bad load"`), then the
    /// algorithms (answered unsigned, [`unsigned_reply`]), then the rest through
    /// [`AuthRequest::from_value`].
    pub fn from_load(load: &Value) -> Result<Self, AuthRequestError> {
        let f = Fields::new("AuthRequest", load).map_err(|_| AuthRequestError::NotAMap)?;
        for key in ["id", "nonce", "pub"] {
            f.text(key).map_err(|_| AuthRequestError::Missing(key))?;
        }
        let algo = |key: &str, valid: &[&str]| -> Result<(), String> {
            match f.present(key) {
                None => Ok(()),
                Some(v) => {
                    let s = crate::ValueExt::as_text(v).unwrap_or_default();
                    if valid.contains(&s) {
                        Ok(())
                    } else {
                        Err(s.to_owned())
                    }
                }
            }
        };
        algo("sig_algo", &SIG_ALGOS).map_err(AuthRequestError::BadSigAlgo)?;
        algo("enc_algo", &ENC_ALGOS).map_err(AuthRequestError::BadEncAlgo)?;
        AuthRequest::from_value(load).map_err(|e| match e {
            InvalidMessage::MissingField { field, .. }
            | InvalidMessage::WrongType { field, .. }
            | InvalidMessage::BadValue { field, .. } => AuthRequestError::Missing(field),
            _ => AuthRequestError::NotAMap,
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
        return fail(KeyAction::None, AuthRet::Rejected, Act::Invalid);
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
        return fail(KeyAction::None, AuthRet::Rejected, Act::Reject);
    }
    if let Some(stored) = &facts.accepted {
        return if clean_key(stored) == presented {
            accept(KeyAction::None)
        } else {
            fail(KeyAction::WriteDenied, AuthRet::Rejected, Act::Denied)
        };
    }
    match &facts.pending {
        Pending::Directory => fail(KeyAction::None, AuthRet::Rejected, Act::Invalid),
        Pending::Absent => {
            if policy.auto_reject {
                fail(KeyAction::WriteRejected, AuthRet::Rejected, Act::Reject)
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
                    AuthRet::Rejected,
                    Act::Reject,
                )
            } else if !same {
                fail(KeyAction::WriteDenied, AuthRet::Rejected, Act::Denied)
            } else if !policy.auto_sign {
                fail(KeyAction::None, AuthRet::Pending, Act::Pend)
            } else {
                accept(KeyAction::PendingToAccepted)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Value {
        Value::from(v)
    }

    const KEY_A: &str = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----";
    const KEY_B: &str = "-----BEGIN PUBLIC KEY-----\nBBBB\n-----END PUBLIC KEY-----";

    fn req(id: &str, key: &str) -> AuthRequest {
        AuthRequest {
            id: id.into(),
            nonce: "0123456789abcdef0123456789abcdef".into(),
            enc_algo: "OAEP-SHA1".into(),
            sig_algo: "PKCS1v15-SHA1".into(),
            autosign_grains: None,
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
            d(
                KeyAction::WriteRejected,
                Err(AuthRet::Rejected),
                Act::Reject
            )
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
            d(KeyAction::WriteDenied, Err(AuthRet::Rejected), Act::Denied)
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
            d(KeyAction::WriteDenied, Err(AuthRet::Rejected), Act::Denied)
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
                Err(AuthRet::Rejected),
                Act::Reject
            )
        );
        let dir = KeyFacts {
            pending: Pending::Directory,
            ..KeyFacts::default()
        };
        assert_eq!(
            decide(&req("m1", KEY_A), &dir, &auto),
            d(KeyAction::None, Err(AuthRet::Rejected), Act::Invalid)
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
            d(KeyAction::None, Err(AuthRet::Rejected), Act::Reject)
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
        assert_eq!(salt_compat::map_get(&reply, "enc"), Some(&s("clear")));
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
