//! The `_auth` sign-in exchange (salt-wire-protocol.md §3.3, §3.5, §3.6).

use rmpv::Value;

use super::envelope::ClearRequest;
use super::fields::{Fields, InvalidMessage};
use super::{DEFAULT_ENC_ALGO, DEFAULT_SIG_ALGO, decode_as};
use crate::value::{MapBuilder, ValueExt};

/// The load of a minion's `_auth` request (§3.3).
#[derive(Clone, Debug, PartialEq)]
pub struct AuthRequest {
    /// Minion id.
    pub id: String,
    /// uuid4 hex nonce the reply must echo.
    pub nonce: String,
    /// RSA-OAEP algorithm the master must use towards this minion (absent on the
    /// wire means `OAEP-SHA1`).
    pub enc_algo: String,
    /// PKCS#1 v1.5 signature algorithm the master must sign with (absent means
    /// `PKCS1v15-SHA1`).
    pub sig_algo: String,
    /// Grain values for `autosign_grains` (a map), when the minion is configured so.
    pub autosign_grains: Option<Value>,
    /// OAEP-encrypted minion token, sent once the master key is cached.
    pub token: Option<Vec<u8>>,
    /// The minion public key PEM in `clean_key` form (wire key `pub`).
    pub pub_key: String,
}

impl AuthRequest {
    const MSG: &'static str = "AuthRequest";

    /// A request with the default algorithms and no optional parts.
    pub fn new(id: &str, nonce: &str, pub_key: &str) -> Self {
        Self {
            id: id.to_owned(),
            nonce: nonce.to_owned(),
            enc_algo: DEFAULT_ENC_ALGO.to_owned(),
            sig_algo: DEFAULT_SIG_ALGO.to_owned(),
            autosign_grains: None,
            token: None,
            pub_key: pub_key.to_owned(),
        }
    }

    /// The load map, keys in Salt's order
    /// (`cmd, id, nonce, enc_algo, sig_algo, [autosign_grains], [token], pub`).
    pub fn to_value(&self) -> Value {
        MapBuilder::new()
            .str("cmd", "_auth")
            .str("id", &self.id)
            .str("nonce", &self.nonce)
            .str("enc_algo", &self.enc_algo)
            .str("sig_algo", &self.sig_algo)
            .opt("autosign_grains", self.autosign_grains.clone())
            .opt(
                "token",
                self.token.as_ref().map(|t| Value::Binary(t.clone())),
            )
            .str("pub", &self.pub_key)
            .build()
    }

    /// The clear version-3 envelope carrying this load.
    pub fn to_envelope(&self) -> ClearRequest {
        ClearRequest::new(self.to_value())
    }

    /// Reads an `_auth` load. `cmd` must be `"_auth"`; `id`, `nonce` and `pub` are
    /// required text; `enc_algo`/`sig_algo` default as in Salt; `autosign_grains`
    /// must be a map and `token` bytes when present.
    ///
    /// # Errors
    /// [`InvalidMessage`] naming the first bad field.
    pub fn from_value(v: &Value) -> Result<Self, InvalidMessage> {
        let f = Fields::new(Self::MSG, v)?;
        f.expect_text("cmd", "_auth", "expected \"_auth\"")?;
        Ok(Self {
            id: f.text("id")?.to_owned(),
            nonce: f.text("nonce")?.to_owned(),
            enc_algo: f
                .opt_text("enc_algo")?
                .unwrap_or(DEFAULT_ENC_ALGO)
                .to_owned(),
            sig_algo: f
                .opt_text("sig_algo")?
                .unwrap_or(DEFAULT_SIG_ALGO)
                .to_owned(),
            autosign_grains: f.opt_map("autosign_grains")?.cloned(),
            token: f.opt_bytes("token")?.map(<[u8]>::to_vec),
            pub_key: f.text("pub")?.to_owned(),
        })
    }
}

/// The signed clear reply: `{"enc": "clear", "load": <msgpack bytes>, "sig": <bytes>}`
/// (§3.5). `sig` is a PKCS#1 v1.5 signature over exactly the `load` bytes, so keep
/// them as received and verify before decoding them ([`AuthReply::from_bytes`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SignedClearReply {
    /// msgpack of the inner reply, exactly as signed.
    pub load: Vec<u8>,
    /// Master signature over `load`.
    pub sig: Vec<u8>,
}

impl SignedClearReply {
    const MSG: &'static str = "SignedClearReply";

    /// The wire map (`enc, load, sig`).
    pub fn to_value(&self) -> Value {
        MapBuilder::new()
            .str("enc", "clear")
            .bytes("load", &self.load)
            .bytes("sig", &self.sig)
            .build()
    }

    /// Reads the signed reply: `load` and `sig` bytes. `enc` is not checked, as the
    /// Python minion's `handle_signin_response` does not check it.
    ///
    /// # Errors
    /// [`InvalidMessage`] naming the first bad field.
    pub fn from_value(v: &Value) -> Result<Self, InvalidMessage> {
        let f = Fields::new(Self::MSG, v)?;
        Ok(Self {
            load: f.bytes("load")?.to_vec(),
            sig: f.bytes("sig")?.to_vec(),
        })
    }
}

/// Everything the master may answer to an `_auth` request (the outer message).
#[derive(Clone, Debug, PartialEq)]
pub enum AuthResponse {
    /// Unsigned `{"enc": "clear", "load": {"ret": "bad enc algo"}}`: the master cannot
    /// use the requested OAEP hash.
    BadEncAlgo,
    /// Unsigned `{"enc": "clear", "load": {"ret": "bad sig algo"}}`.
    BadSigAlgo,
    /// The normal, signed reply.
    Signed(SignedClearReply),
}

impl AuthResponse {
    const MSG: &'static str = "AuthResponse";

    /// The wire map.
    pub fn to_value(&self) -> Value {
        let bad = |ret: &str| {
            MapBuilder::new()
                .str("enc", "clear")
                .insert("load", MapBuilder::new().str("ret", ret).build())
                .build()
        };
        match self {
            Self::BadEncAlgo => bad("bad enc algo"),
            Self::BadSigAlgo => bad("bad sig algo"),
            Self::Signed(s) => s.to_value(),
        }
    }

    /// Reads an auth response: a map whose `load` is bytes (signed) or a map with
    /// `ret` = `"bad enc algo"` / `"bad sig algo"`. Other shapes (including the
    /// legacy unsigned replies of protocol < 2) are refused.
    ///
    /// # Errors
    /// [`InvalidMessage`] naming the first bad field.
    pub fn from_value(v: &Value) -> Result<Self, InvalidMessage> {
        let f = Fields::new(Self::MSG, v)?;
        let load = f.req("load")?;
        if load.is_map() {
            return match load.get("ret").and_then(ValueExt::as_text) {
                Some("bad enc algo") => Ok(Self::BadEncAlgo),
                Some("bad sig algo") => Ok(Self::BadSigAlgo),
                _ => Err(f.bad("load", "unsigned reply other than bad enc/sig algo")),
            };
        }
        SignedClearReply::from_value(v).map(Self::Signed)
    }

    /// Decodes msgpack bytes and reads them with [`Self::from_value`].
    ///
    /// # Errors
    /// [`InvalidMessage::Decode`] for undecodable bytes, else as [`Self::from_value`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, InvalidMessage> {
        decode_as(Self::MSG, bytes, Self::from_value)
    }
}

/// The inner success reply (§3.5), keys in Salt's order
/// `enc, pub_key, publish_port, [pub_sig], [token], aes, session, sig, nonce`.
#[derive(Clone, PartialEq)]
pub struct AuthSuccess {
    /// Master public key PEM, `clean_key` form.
    pub pub_key: String,
    /// Master publish port.
    pub publish_port: u16,
    /// Signature of `pub_key` by the master signing key (base64 + `"\n"`), present
    /// only with `master_sign_pubkey`.
    pub pub_sig: Option<Vec<u8>>,
    /// The minion's token re-encrypted to the minion key, present iff the request
    /// carried a token (and the master could decrypt it).
    pub token: Option<Vec<u8>>,
    /// Publish AES key string, OAEP-encrypted to the minion key.
    pub aes: Vec<u8>,
    /// Per-minion session key string, OAEP-encrypted to the minion key.
    pub session: Vec<u8>,
    /// X9.31 signature (master key) of hex SHA-256 of the publish key string.
    /// Optional here so the handshake can report its absence as a failed check.
    pub sig: Option<Vec<u8>>,
    /// Echo of the request nonce. Optional here so the handshake can report a
    /// missing nonce as a nonce mismatch.
    pub nonce: Option<String>,
}

impl std::fmt::Debug for AuthSuccess {
    // The fields are ciphertexts or public data, but keep logs short.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthSuccess")
            .field("publish_port", &self.publish_port)
            .field("pub_sig", &self.pub_sig.as_ref().map(Vec::len))
            .field("token", &self.token.as_ref().map(Vec::len))
            .field("aes", &self.aes.len())
            .field("session", &self.session.len())
            .field("sig", &self.sig.as_ref().map(Vec::len))
            .field("nonce", &self.nonce)
            .finish_non_exhaustive()
    }
}

impl AuthSuccess {
    /// The inner map.
    pub fn to_value(&self) -> Value {
        MapBuilder::new()
            .str("enc", "pub")
            .str("pub_key", &self.pub_key)
            .insert("publish_port", self.publish_port)
            .opt(
                "pub_sig",
                self.pub_sig.as_ref().map(|s| Value::Binary(s.clone())),
            )
            .opt(
                "token",
                self.token.as_ref().map(|s| Value::Binary(s.clone())),
            )
            .bytes("aes", &self.aes)
            .bytes("session", &self.session)
            .opt("sig", self.sig.as_ref().map(|s| Value::Binary(s.clone())))
            .opt("nonce", self.nonce.as_deref())
            .build()
    }

    fn read(f: &Fields<'_>) -> Result<Self, InvalidMessage> {
        let port = f.int("publish_port")?;
        Ok(Self {
            pub_key: f.text("pub_key")?.to_owned(),
            publish_port: u16::try_from(port)
                .map_err(|_| f.bad("publish_port", "not a TCP port"))?,
            pub_sig: f.opt_bytes("pub_sig")?.map(<[u8]>::to_vec),
            token: f.opt_bytes("token")?.map(<[u8]>::to_vec),
            aes: f.bytes("aes")?.to_vec(),
            session: f.bytes("session")?.to_vec(),
            sig: f.opt_bytes("sig")?.map(<[u8]>::to_vec),
            nonce: f.opt_text("nonce")?.map(str::to_owned),
        })
    }
}

/// The `ret` of a failed sign-in, read with the Python minion's rules (§3.6 step 6):
/// `"full"` is [`AuthRet::Full`], any other truthy value [`AuthRet::Pending`], any
/// falsy value [`AuthRet::Rejected`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AuthRet {
    /// `"full"`: `max_minions` reached.
    Full,
    /// `True`: key pending acceptance; retry later.
    Pending,
    /// `False`: rejected, denied or invalid id.
    Rejected,
}

impl AuthRet {
    /// The value the Python master sends.
    pub fn to_value(self) -> Value {
        match self {
            Self::Full => Value::from("full"),
            Self::Pending => Value::Boolean(true),
            Self::Rejected => Value::Boolean(false),
        }
    }

    /// Classifies any `ret` value as the Python minion does.
    pub fn from_value(v: &Value) -> Self {
        if v.as_text() == Some("full") {
            Self::Full
        } else if v.is_truthy() {
            Self::Pending
        } else {
            Self::Rejected
        }
    }
}

/// The inner failure reply `{"ret": False | True | "full", "nonce": N}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthFailure {
    /// What happened.
    pub ret: AuthRet,
    /// Echo of the request nonce (absent in legacy replies).
    pub nonce: Option<String>,
}

impl AuthFailure {
    /// The inner map (`ret, nonce`).
    pub fn to_value(&self) -> Value {
        MapBuilder::new()
            .insert("ret", self.ret.to_value())
            .opt("nonce", self.nonce.as_deref())
            .build()
    }
}

/// The inner auth reply carried (as msgpack bytes) in [`SignedClearReply::load`].
#[derive(Clone, Debug, PartialEq)]
pub enum AuthReply {
    /// Key accepted: keys and session follow.
    Accepted(AuthSuccess),
    /// Not accepted (pending, rejected, full).
    Failed(AuthFailure),
}

impl AuthReply {
    const MSG: &'static str = "AuthReply";

    /// The inner map.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Accepted(s) => s.to_value(),
            Self::Failed(f) => f.to_value(),
        }
    }

    /// Reads the inner map. As in the Python minion, a map with `pub_key` is a
    /// success (then `publish_port`, `aes`, `session` are required), else one
    /// with `ret` is a failure.
    ///
    /// # Errors
    /// [`InvalidMessage`] naming the first bad field; `MissingField("ret")` when
    /// neither `pub_key` nor `ret` is present.
    pub fn from_value(v: &Value) -> Result<Self, InvalidMessage> {
        let f = Fields::new(Self::MSG, v)?;
        if f.raw("pub_key").is_some() {
            return AuthSuccess::read(&f).map(Self::Accepted);
        }
        let ret = f.req("ret")?;
        Ok(Self::Failed(AuthFailure {
            ret: AuthRet::from_value(ret),
            nonce: f.opt_text("nonce")?.map(str::to_owned),
        }))
    }

    /// Decodes the signed `load` bytes and reads them with [`Self::from_value`].
    ///
    /// # Errors
    /// [`InvalidMessage::Decode`] for undecodable bytes, else as [`Self::from_value`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, InvalidMessage> {
        decode_as(Self::MSG, bytes, Self::from_value)
    }

    /// The echoed nonce, whichever the outcome.
    pub fn nonce(&self) -> Option<&str> {
        match self {
            Self::Accepted(s) => s.nonce.as_deref(),
            Self::Failed(f) => f.nonce.as_deref(),
        }
    }
}
