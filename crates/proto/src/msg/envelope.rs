//! The request envelope (minion → master on the request port) and the bare error
//! strings the master answers with (salt-wire-protocol.md §2.2–§2.4).

use rmpv::Value;

use super::fields::{Fields, InvalidMessage};
use super::{PROTOCOL_VERSION, decode_as};
use crate::value::{MapBuilder, ValueExt};

/// The `enc` field of envelopes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Enc {
    /// `"aes"`: `load` is a Crypticle ciphertext.
    Aes,
    /// `"clear"`: `load` is a plain map (or, in signed replies, msgpack bytes).
    Clear,
    /// `"pub"`: only inside a successful auth reply.
    Pub,
}

impl Enc {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Aes => "aes",
            Self::Clear => "clear",
            Self::Pub => "pub",
        }
    }

    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "aes" => Some(Self::Aes),
            "clear" => Some(Self::Clear),
            "pub" => Some(Self::Pub),
            _ => None,
        }
    }
}

/// The envelope `version` as the Python master reads it: `int(payload.get("version", 0))`,
/// with unparsable values counting as 0. Integers, floats (truncated), booleans and
/// decimal text are understood.
pub fn salt_version(envelope: &Value) -> i64 {
    match envelope.get("version") {
        None => 0,
        Some(Value::Integer(i)) => {
            i.as_i64()
                .unwrap_or(if i.as_u64().is_some() { i64::MAX } else { 0 })
        }
        Some(Value::Boolean(b)) => i64::from(*b),
        // `as` saturates, like a clamp; NaN gives 0.
        Some(Value::F64(f)) => *f as i64,
        Some(Value::F32(f)) => *f as i64,
        Some(v) => v
            .as_text()
            .and_then(|t| t.trim().parse::<i64>().ok())
            .unwrap_or(0),
    }
}

/// A clear request: `{"enc": "clear", "load": {...}, "version": 3}` (`_auth`, `ping`).
#[derive(Clone, Debug, PartialEq)]
pub struct ClearRequest {
    /// The load map.
    pub load: Value,
    /// Protocol version (see [`salt_version`]; 0 when absent).
    pub version: i64,
}

impl ClearRequest {
    /// A version-3 clear request around `load` (which should be a map).
    pub fn new(load: Value) -> Self {
        Self {
            load,
            version: PROTOCOL_VERSION,
        }
    }
}

/// An AES request: `{"enc": "aes", "load": <ciphertext>, "version": 3, "id", "enc_algo", "sig_algo"}`.
#[derive(Clone, Debug, PartialEq)]
pub struct AesRequest {
    /// The Crypticle ciphertext of the load (session key for v3).
    pub load: Vec<u8>,
    /// Protocol version (see [`salt_version`]; 0 when absent).
    pub version: i64,
    /// Envelope `id` (v3; absent from v2 peers).
    pub id: Option<String>,
    /// Envelope `enc_algo` (absent means the peer's default, `OAEP-SHA1`).
    pub enc_algo: Option<String>,
    /// Envelope `sig_algo` (absent means `PKCS1v15-SHA1`).
    pub sig_algo: Option<String>,
}

impl AesRequest {
    /// A version-3 AES request as a Salt minion sends it.
    pub fn new(load: Vec<u8>, id: &str, enc_algo: &str, sig_algo: &str) -> Self {
        Self {
            load,
            version: PROTOCOL_VERSION,
            id: Some(id.to_owned()),
            enc_algo: Some(enc_algo.to_owned()),
            sig_algo: Some(sig_algo.to_owned()),
        }
    }
}

/// Every request a minion (or CLI client) sends on the request port (§2.3).
#[derive(Clone, Debug, PartialEq)]
pub enum RequestEnvelope {
    /// `enc: "aes"`.
    Aes(AesRequest),
    /// `enc: "clear"`.
    Clear(ClearRequest),
}

impl RequestEnvelope {
    const MSG: &'static str = "RequestEnvelope";

    /// The `enc` of this envelope.
    pub fn enc(&self) -> Enc {
        match self {
            Self::Aes(_) => Enc::Aes,
            Self::Clear(_) => Enc::Clear,
        }
    }

    /// The protocol version.
    pub fn version(&self) -> i64 {
        match self {
            Self::Aes(r) => r.version,
            Self::Clear(r) => r.version,
        }
    }

    /// The wire map, keys in Salt's order.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Clear(r) => MapBuilder::new()
                .str("enc", "clear")
                .insert("load", r.load.clone())
                .insert("version", r.version)
                .build(),
            Self::Aes(r) => MapBuilder::new()
                .str("enc", "aes")
                .bytes("load", &r.load)
                .insert("version", r.version)
                .opt("id", r.id.as_deref())
                .opt("enc_algo", r.enc_algo.as_deref())
                .opt("sig_algo", r.sig_algo.as_deref())
                .build(),
        }
    }

    /// Reads an envelope. Requires a map with text `enc` of `"clear"` (then `load`
    /// must be a map) or `"aes"` (then `load` must be bytes). The Python master
    /// answers `"bad load"` to bodies that fail the first checks; see [`ErrorReply`].
    ///
    /// # Errors
    /// [`InvalidMessage`] naming the first field that is missing or wrong.
    pub fn from_value(v: &Value) -> Result<Self, InvalidMessage> {
        let f = Fields::new(Self::MSG, v)?;
        let enc = f.text("enc")?;
        f.req("load")?;
        let version = salt_version(v);
        match Enc::parse(enc) {
            Some(Enc::Clear) => Ok(Self::Clear(ClearRequest {
                load: f.map("load")?.clone(),
                version,
            })),
            Some(Enc::Aes) => Ok(Self::Aes(AesRequest {
                load: f.bytes("load")?.to_vec(),
                version,
                id: f.opt_text("id")?.map(str::to_owned),
                enc_algo: f.opt_text("enc_algo")?.map(str::to_owned),
                sig_algo: f.opt_text("sig_algo")?.map(str::to_owned),
            })),
            _ => Err(f.bad("enc", "expected \"clear\" or \"aes\"")),
        }
    }

    /// Decodes msgpack bytes and reads them with [`Self::from_value`].
    ///
    /// # Errors
    /// [`InvalidMessage::Decode`] for undecodable bytes, else as [`Self::from_value`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, InvalidMessage> {
        decode_as(Self::MSG, bytes, Self::from_value)
    }
}

/// The bare-string error replies of the Python request server (§2.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorReply {
    /// `"bad load"`: undecodable, wrong version, failed decryption, bad token, ...
    BadLoad,
    /// `"bad load: id contains a null byte"`.
    IdNullByte,
    /// `"payload and load must be a dict"`.
    NotADict,
    /// `"Server-side exception handling payload"`.
    ServerException,
    /// `"Some exception handling minion payload"`.
    SomeException,
    /// Any other string reply.
    Other(String),
}

impl ErrorReply {
    /// The wire text.
    pub fn as_str(&self) -> &str {
        match self {
            Self::BadLoad => "bad load",
            Self::IdNullByte => "bad load: id contains a null byte",
            Self::NotADict => "payload and load must be a dict",
            Self::ServerException => "Server-side exception handling payload",
            Self::SomeException => "Some exception handling minion payload",
            Self::Other(s) => s,
        }
    }

    /// The wire value (a msgpack str).
    pub fn to_value(&self) -> Value {
        Value::from(self.as_str())
    }

    /// Reads a reply that is a bare text string. A reply that is bytes but not valid
    /// UTF-8 is a ciphertext, not an error, and is refused here.
    ///
    /// # Errors
    /// [`InvalidMessage::WrongType`] if the value is not text.
    pub fn from_value(v: &Value) -> Result<Self, InvalidMessage> {
        let s = v.as_text().ok_or(InvalidMessage::WrongType {
            msg: "ErrorReply",
            field: "(reply)",
            expected: "text",
        })?;
        Ok(match s {
            "bad load" => Self::BadLoad,
            "bad load: id contains a null byte" => Self::IdNullByte,
            "payload and load must be a dict" => Self::NotADict,
            "Server-side exception handling payload" => Self::ServerException,
            "Some exception handling minion payload" => Self::SomeException,
            other => Self::Other(other.to_owned()),
        })
    }
}
