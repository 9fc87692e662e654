//! The encrypted request channel and the publish channel, as pure functions over bytes.
//!
//! * [`Session::aes_request`] wraps a command map the way Salt's
//!   `AsyncReqChannel._package_load` does for protocol v3 (salt-wire-protocol.md §2.3):
//!   `nonce`, `ts`, `tok`, `id` appended, encrypted with the session key, envelope
//!   `{enc: "aes", load, version: 3, id, enc_algo, sig_algo}`.
//! * [`Session::open_reply`] opens a `send` reply: the session key with the request nonce.
//! * [`Session::open_publish`] opens a publish: optional signature check, publish AES key,
//!   serial replay check (§4.3, §7.3).
//! * [`open_pillar`] decodes a `_pillar` `send_private` reply (§10.2).

use std::sync::Arc;

use rmpv::Value;
use salt_pki::{Crypticle, EncAlgo, PrivateKey, PublicKey, SigAlgo};

use crate::matcher::map_lookup;

/// Why an incoming message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    /// Not msgpack, or not the expected shape.
    #[error("malformed message: {0}")]
    Malformed(&'static str),
    /// The HMAC or padding did not check out with our key: the key is stale (re-auth).
    #[error("message did not decrypt with the current key")]
    Decrypt,
    /// The reply nonce is not ours.
    #[error("nonce verification error")]
    Nonce,
    /// `sign_pub_messages` is on and the publish signature is missing or invalid.
    #[error("publish signature missing or invalid")]
    Signature,
    /// The serial is not newer than the last one seen (replay).
    #[error("publish serial {0} replayed")]
    Replay(u64),
    /// The master answered with an error string (e.g. "bad load").
    #[error("master error reply: {0}")]
    MasterError(String),
}

/// Bytes of a str-family or bin value.
pub fn value_bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::String(s) => Some(s.as_bytes()),
        Value::Binary(b) => Some(b),
        _ => None,
    }
}

/// Keys and identity for one signed-in master connection.
#[derive(Clone)]
pub struct Session {
    /// Minion id.
    pub id: String,
    /// Publish AES key.
    pub aes: Crypticle,
    /// Session key.
    pub session: Crypticle,
    /// The master's public key.
    pub master_pub: PublicKey,
    /// X9.31 token over `b"salt"` (memoized like Salt).
    pub tok: Arc<Vec<u8>>,
    /// `encryption_algorithm`.
    pub enc_algo: EncAlgo,
    /// `signing_algorithm`.
    pub sig_algo: SigAlgo,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Salt's minion token: X9.31 "private encrypt" of `b"salt"` with the minion key.
pub fn minion_tok(key: &PrivateKey) -> Result<Vec<u8>, salt_pki::Error> {
    key.x931_sign(b"salt")
}

impl Session {
    /// Build the AES request envelope for command map `load` (a map), with `nonce`
    /// (32 hex chars) and `ts` (unix seconds).
    pub fn aes_request(&self, load: &Value, nonce: &str, ts: u64) -> Vec<u8> {
        let mut m = match load {
            Value::Map(m) => m.clone(),
            _ => Vec::new(),
        };
        let mut set =
            |k: &str, v: Value| match m.iter_mut().find(|(key, _)| key.as_str() == Some(k)) {
                Some(slot) => slot.1 = v,
                None => m.push((Value::from(k), v)),
            };
        set("nonce", Value::from(nonce));
        set("ts", Value::from(ts));
        set("tok", Value::Binary(self.tok.as_ref().clone()));
        set("id", Value::from(self.id.as_str()));
        let body = salt_proto::encode(&Value::Map(m));
        let ct = self.session.dumps(&body, None);
        let env = Value::Map(vec![
            ("enc".into(), "aes".into()),
            ("load".into(), Value::Binary(ct)),
            ("version".into(), 3.into()),
            ("id".into(), self.id.as_str().into()),
            ("enc_algo".into(), self.enc_algo.as_str().into()),
            ("sig_algo".into(), self.sig_algo.as_str().into()),
        ]);
        salt_proto::encode(&env)
    }

    /// Open the reply to an AES request sent with `nonce`.
    pub fn open_reply(&self, reply: &[u8], nonce: &str) -> Result<Value, ChannelError> {
        let v = salt_proto::decode(reply).map_err(|_| ChannelError::Malformed("reply"))?;
        let ct = value_bytes(&v).ok_or(ChannelError::Malformed("reply is not bytes"))?;
        let body = self.session.loads(ct, Some(nonce)).map_err(|e| match e {
            salt_pki::Error::NonceMismatch => ChannelError::Nonce,
            _ => match std::str::from_utf8(ct) {
                // Error replies are bare strings ("bad load"): show them.
                Ok(s) if s.len() < 200 => ChannelError::MasterError(s.to_owned()),
                _ => ChannelError::Decrypt,
            },
        })?;
        if body.is_empty() {
            // Salt's loads returns {} when the "pickle::" marker is missing.
            return Ok(Value::Map(Vec::new()));
        }
        salt_proto::decode(&body).map_err(|_| ChannelError::Malformed("reply body"))
    }

    /// Open a publish message (the frames received on SUB). `serial` is the last serial
    /// seen with the current AES key (updated on success). Returns the job load with
    /// `serial` removed, or `Ok(None)` for a message not meant for us (filtered topic,
    /// non-`aes` enc).
    pub fn open_publish(
        &self,
        frames: &[Vec<u8>],
        my_topic: &str,
        check_sig: bool,
        serial: &mut u64,
    ) -> Result<Option<Value>, ChannelError> {
        let payload = match frames {
            [one] => one,
            [topic, payload] => {
                if topic.as_slice() != b"broadcast" && topic.as_slice() != my_topic.as_bytes() {
                    return Ok(None);
                }
                payload
            }
            _ => return Err(ChannelError::Malformed("publish frame count")),
        };
        let v = salt_proto::decode(payload).map_err(|_| ChannelError::Malformed("publish"))?;
        if map_lookup(&v, "enc").and_then(Value::as_str) != Some("aes") {
            return Ok(None);
        }
        let load = map_lookup(&v, "load")
            .and_then(value_bytes)
            .ok_or(ChannelError::Malformed("publish load"))?;
        if check_sig {
            let sig = map_lookup(&v, "sig")
                .and_then(value_bytes)
                .ok_or(ChannelError::Signature)?;
            let alg = map_lookup(&v, "sig_algo")
                .and_then(Value::as_str)
                .and_then(|a| a.parse::<SigAlgo>().ok())
                .unwrap_or(SigAlgo::Pkcs1v15Sha1);
            self.master_pub
                .verify(alg, load, sig)
                .map_err(|_| ChannelError::Signature)?;
        }
        let body = self
            .aes
            .loads(load, None)
            .map_err(|_| ChannelError::Decrypt)?;
        if body.is_empty() {
            return Ok(None);
        }
        let mut job =
            salt_proto::decode(&body).map_err(|_| ChannelError::Malformed("publish body"))?;
        if let Value::Map(m) = &mut job
            && let Some(pos) = m.iter().position(|(k, _)| k.as_str() == Some("serial"))
        {
            let (_, s) = m.remove(pos);
            let s = s.as_u64().unwrap_or(0);
            if s <= *serial {
                return Err(ChannelError::Replay(s));
            }
            *serial = s;
        }
        Ok(Some(job))
    }
}

/// Decode a `_pillar` reply (`send_private`, §10.2) for request `nonce`: decrypt the
/// one-off key with the minion key, open `pillar`, check the master's signature over
/// `data`, then `data.key == reply.key` and `data.nonce == nonce`. Returns the pillar map.
pub fn open_pillar(
    reply: &[u8],
    nonce: &str,
    key: &PrivateKey,
    master_pub: &PublicKey,
    enc_algo: EncAlgo,
    sig_algo: SigAlgo,
) -> Result<Value, ChannelError> {
    let v = salt_proto::decode(reply).map_err(|_| ChannelError::Malformed("pillar reply"))?;
    if let Some(e) = map_lookup(&v, "error") {
        return Err(ChannelError::MasterError(crate::matcher::py_str(e)));
    }
    let wrapped = map_lookup(&v, "key")
        .and_then(value_bytes)
        .ok_or(ChannelError::Malformed("pillar reply key"))?;
    let pillar_ct = map_lookup(&v, "pillar")
        .and_then(value_bytes)
        .ok_or(ChannelError::Malformed("pillar reply pillar"))?;
    let k = key
        .decrypt_oaep(enc_algo, wrapped)
        .map_err(|_| ChannelError::Decrypt)?;
    let ks = std::str::from_utf8(&k).map_err(|_| ChannelError::Decrypt)?;
    let c = Crypticle::from_key_string(ks).map_err(|_| ChannelError::Decrypt)?;
    let body = c
        .loads(pillar_ct, None)
        .map_err(|_| ChannelError::Decrypt)?;
    let outer = salt_proto::decode(&body).map_err(|_| ChannelError::Malformed("pillar body"))?;
    let data = map_lookup(&outer, "data")
        .and_then(value_bytes)
        .ok_or(ChannelError::Malformed("pillar data"))?;
    let sig = map_lookup(&outer, "sig")
        .and_then(value_bytes)
        .ok_or(ChannelError::Signature)?;
    master_pub
        .verify(sig_algo, data, sig)
        .map_err(|_| ChannelError::Signature)?;
    let inner = salt_proto::decode(data).map_err(|_| ChannelError::Malformed("pillar data"))?;
    if map_lookup(&inner, "key").and_then(value_bytes) != Some(wrapped) {
        return Err(ChannelError::Malformed("pillar key mismatch"));
    }
    if map_lookup(&inner, "nonce").and_then(Value::as_str) != Some(nonce) {
        return Err(ChannelError::Nonce);
    }
    match map_lookup(&inner, "pillar") {
        Some(p @ Value::Map(_)) => Ok(p.clone()),
        _ => Err(ChannelError::Malformed("pillar is not a map")),
    }
}

/// The `zmq_filtering` topic of a minion: lowercase hex SHA-1 of its id.
pub fn topic_for(id: &str) -> String {
    use sha1::Digest;
    hex::encode(sha1::Sha1::digest(id.as_bytes()))
}
