//! Every way a request fails, and the one place that turns a failure into the reply Salt's
//! request server sends for it (`salt/channel/server.py` `handle_message`, `AESFuncs`), with
//! one rate-limited log line naming the command.
//!
//! Who is at fault is in the variant (in rustls' style): [`RequestError::Malformed`] and
//! [`RequestError::Refused`] are the peer's (bad bytes, or a request this master will not
//! take from it), [`RequestError::Command`] is a command whose load lacks what the command
//! needs (the peer's too, answered as Salt's handler answers), [`RequestError::Local`] is
//! ours.

use rmpv::Value;
use salt_pki::Crypticle;
use salt_proto::{InvalidMessage, encode};

use crate::shared::Shared;

/// What is wrong with the bytes of a request, before any command runs.
#[derive(Debug, thiserror::Error)]
pub enum Malformed {
    /// Not msgpack, or not an envelope map with `enc` and `load`.
    #[error("not a request envelope: {0}")]
    Envelope(InvalidMessage),
    /// `enc` is neither `clear` nor `aes`.
    #[error("unknown enc")]
    UnknownEnc,
    /// The load of an `aes` envelope is not bytes.
    #[error("aes load is not bytes")]
    AesLoadNotBytes,
    /// The (clear or decrypted) load is not a map.
    #[error("payload and load must be a dict")]
    LoadNotADict,
    /// The load's `id` contains a NUL byte.
    #[error("id contains a null byte")]
    IdNullByte,
    /// The load's `id` is not a string.
    #[error("id is not a string")]
    IdNotAString,
    /// The load's `tok` is neither str nor bin (it cannot validate).
    #[error("tok is not bytes")]
    TokNotBytes,
    /// The decrypted load has no `cmd`.
    #[error("no cmd in the load")]
    NoCmd,
}

/// A well-formed request this master refuses (all answered `"bad load"`).
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// `version` below `minimum_auth_version`.
    #[error("protocol version {version} < minimum_auth_version {min}")]
    VersionTooLow {
        /// The envelope's version.
        version: i64,
        /// `minimum_auth_version`.
        min: i64,
    },
    /// A v3 envelope's `id` is missing or not a valid minion id.
    #[error("invalid envelope id")]
    EnvelopeId,
    /// No session key for the envelope's id (the minion must sign in again).
    #[error("no session key for {0}")]
    NoSession(String),
    /// The load does not decrypt with the session (or publish) key.
    #[error("request does not decrypt with the session key")]
    Undecryptable,
    /// Older than `request_server_ttl`.
    #[error("request expired (request_server_ttl)")]
    Expired,
    /// The load's id is not the envelope's.
    #[error("request id mismatch")]
    IdMismatch,
    /// The load has no valid minion id.
    #[error("request has no valid id")]
    NoValidId,
    /// `tok` does not validate against the minion's accepted key.
    #[error("minion token did not validate: {0}")]
    BadToken(String),
    /// A v3 request without `tok`.
    #[error("request from {0} has no tok")]
    NoToken(String),
}

/// Every failure of one request.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The peer sent bytes that are not a request (its fault).
    #[error(transparent)]
    Malformed(#[from] Malformed),
    /// The peer is refused (its fault; a sign-in or key problem).
    #[error(transparent)]
    Refused(#[from] Refused),
    /// The load of `cmd` lacks a key Salt requires, or has a value Salt's handler raises on.
    #[error("{source}")]
    Command {
        /// The command.
        cmd: String,
        /// What the typed reader found.
        source: InvalidMessage,
    },
    /// Answering failed on our side.
    #[error("{what}")]
    Local {
        /// The command.
        cmd: &'static str,
        /// What failed.
        what: String,
    },
}

/// Who caused a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The peer.
    Peer,
    /// This master.
    Local,
}

/// A reply as it goes on the wire.
#[derive(Clone, Debug, PartialEq)]
pub enum Wire {
    /// A bare msgpack value (Salt's error strings, the `send_private` pillar reply).
    Plain(Value),
    /// A value encrypted with the request's key and nonce (Salt's `send`).
    Sealed(Value),
}

impl RequestError {
    /// Who is at fault.
    pub fn fault(&self) -> Fault {
        match self {
            Self::Local { .. } => Fault::Local,
            _ => Fault::Peer,
        }
    }

    /// The reply Salt sends for this failure.
    pub fn wire(&self) -> Wire {
        let text = |s: &str| Wire::Plain(Value::from(s));
        match self {
            Self::Malformed(Malformed::LoadNotADict) => text("payload and load must be a dict"),
            Self::Malformed(Malformed::IdNullByte) => text("bad load: id contains a null byte"),
            Self::Malformed(Malformed::NoCmd) => text("Some exception handling minion payload"),
            Self::Malformed(_) | Self::Refused(_) => text("bad load"),
            // A key `__verify_load` (or `store_job`) asks for is absent: the handler's
            // "refused" value. Anything else the handler raises on: `run_func` answers "".
            Self::Command {
                cmd,
                source: InvalidMessage::MissingField { .. },
            } => Wire::Sealed(match cmd.as_str() {
                "_return" | "_minion_event" => Value::Nil,
                "_pillar" | "_file_recv" => Value::Boolean(false),
                _ => Value::Map(Vec::new()),
            }),
            Self::Command { .. } => Wire::Sealed(Value::from("")),
            // `_pillar`'s `send_private` failing on our side (Salt's `{"error": ...}` shape).
            Self::Local { cmd: "_pillar", .. } => Wire::Plain(Value::Map(vec![(
                Value::from("error"),
                Value::from("bad load"),
            )])),
            Self::Local { .. } => Wire::Sealed(Value::from("")),
        }
    }

    /// The rate-limit class of the log line.
    fn kind(&self) -> &'static str {
        match self {
            Self::Malformed(Malformed::Envelope(_)) => "envelope",
            Self::Malformed(Malformed::UnknownEnc) => "enc",
            Self::Malformed(Malformed::AesLoadNotBytes) => "aes-load",
            Self::Malformed(
                Malformed::LoadNotADict | Malformed::IdNullByte | Malformed::IdNotAString,
            ) => "load",
            Self::Malformed(Malformed::NoCmd) => "cmd",
            Self::Refused(Refused::VersionTooLow { .. }) => "version",
            Self::Refused(Refused::EnvelopeId) => "aes-id",
            Self::Refused(Refused::NoSession(_)) => "aes-session",
            Self::Refused(Refused::Undecryptable) => "aes-decrypt",
            Self::Refused(Refused::Expired) => "aes-ttl",
            Self::Refused(Refused::IdMismatch) => "aes-idmatch",
            Self::Refused(Refused::NoValidId) => "aes-loadid",
            Self::Refused(Refused::BadToken(_) | Refused::NoToken(_))
            | Self::Malformed(Malformed::TokNotBytes) => "aes-tok",
            Self::Command { .. } => "command",
            Self::Local { .. } => "local",
        }
    }
}

/// The key and nonce an AES request is answered with.
pub struct Seal<'a> {
    /// The session key (or the publish key for v1/v2 peers).
    pub crypticle: &'a Crypticle,
    /// The request's nonce.
    pub nonce: Option<&'a str>,
}

/// Seals `value` as Salt's `send` does: `encode(Binary(dumps(encode(value), nonce)))`.
pub fn seal(seal: &Seal<'_>, value: &Value) -> Vec<u8> {
    encode(&Value::Binary(
        seal.crypticle.dumps(&encode(value), seal.nonce),
    ))
}

/// The one mapping from a failure to reply bytes, with one log line (rate-limited per kind)
/// naming the command (`request` before the command is known). `seal` is the request's key
/// once it decrypted; a sealed reply without one falls back to `"bad load"`.
pub fn reply(
    shared: &Shared,
    cmd: Option<&str>,
    err: &RequestError,
    seal_with: Option<&Seal<'_>>,
) -> Vec<u8> {
    if shared.log_limit.allow(err.kind()) {
        let cmd: String = cmd.unwrap_or("request").chars().take(80).collect();
        match err.fault() {
            Fault::Peer => tracing::warn!("Bad load from minion ({cmd}): {err}"),
            Fault::Local => tracing::error!("{cmd}: {err}"),
        }
    }
    match (err.wire(), seal_with) {
        (Wire::Plain(v), _) => encode(&v),
        (Wire::Sealed(v), Some(s)) => seal(s, &v),
        (Wire::Sealed(_), None) => encode(&Value::from("bad load")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn missing(cmd: &str, field: &'static str) -> RequestError {
        RequestError::Command {
            cmd: cmd.to_owned(),
            source: InvalidMessage::MissingField { msg: "X", field },
        }
    }

    #[test]
    fn each_failure_gets_salts_reply() {
        let plain = |s: &str| Wire::Plain(Value::from(s));
        assert_eq!(
            RequestError::from(Malformed::LoadNotADict).wire(),
            plain("payload and load must be a dict")
        );
        assert_eq!(
            RequestError::from(Malformed::IdNullByte).wire(),
            plain("bad load: id contains a null byte")
        );
        assert_eq!(
            RequestError::from(Malformed::NoCmd).wire(),
            plain("Some exception handling minion payload")
        );
        assert_eq!(
            RequestError::from(Refused::Expired).wire(),
            plain("bad load")
        );
        assert_eq!(
            RequestError::from(Malformed::UnknownEnc).wire(),
            plain("bad load")
        );
        assert_eq!(missing("_return", "jid").wire(), Wire::Sealed(Value::Nil));
        assert_eq!(
            missing("_pillar", "grains").wire(),
            Wire::Sealed(Value::Boolean(false))
        );
        assert_eq!(
            missing("_mine_get", "fun").wire(),
            Wire::Sealed(Value::Map(vec![]))
        );
        let wrong = RequestError::Command {
            cmd: "_pillar".to_owned(),
            source: InvalidMessage::WrongType {
                msg: "PillarRequest",
                field: "grains",
                expected: "a map",
            },
        };
        assert_eq!(wrong.wire(), Wire::Sealed(Value::from("")));
        assert_eq!(wrong.fault(), Fault::Peer);
        let local = RequestError::Local {
            cmd: "_pillar",
            what: "signing failed".to_owned(),
        };
        assert_eq!(local.fault(), Fault::Local);
        assert!(matches!(local.wire(), Wire::Plain(Value::Map(_))));
    }
}
