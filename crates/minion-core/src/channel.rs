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
//!
//! Every message is read and written by `salt_proto::msg` ([`PublishPayload`],
//! [`JobLoad`], [`RequestMeta`], [`AesRequest`], [`PillarReply`], ...): no map lookups here.

use std::sync::Arc;

use rmpv::Value;
use salt_pki::{Crypticle, EncAlgo, PrivateKey, PublicKey, SigAlgo};
use salt_proto::msg::{
    AesRequest, ErrorReply, InvalidMessage, JobLoad, PillarData, PillarReply, PillarSignedData,
    PublishPayload, RequestEnvelope, RequestMeta,
};
use salt_proto::{SerialGuard, SerialVerdict};

/// Why an incoming message was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
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
    /// The publish decrypted but is not a job load Salt would run (`tgt`, `jid`, `fun`,
    /// `arg` missing or of the wrong type).
    #[error("publish load: {0}")]
    Job(InvalidMessage),
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
    /// `minion_sign_messages`: the minion key every request load is signed with (`sig`).
    pub signer: Option<PrivateKey>,
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
        let mut load = if load.is_map() {
            load.clone()
        } else {
            Value::Map(Vec::new())
        };
        RequestMeta {
            nonce: nonce.to_owned(),
            ts: Some(i64::try_from(ts).unwrap_or(i64::MAX)),
            tok: self.tok.as_ref().clone(),
            id: self.id.clone(),
        }
        .apply(&mut load);
        if let Some(key) = &self.signer
            && let Err(e) = salt_proto::msg::sign_load(&mut load, key, self.sig_algo)
        {
            tracing::error!("Unable to sign the request to the master: {e}");
        }
        let ct = self.session.dumps(&salt_proto::encode(&load), None);
        let env = AesRequest::new(ct, &self.id, self.enc_algo.as_str(), self.sig_algo.as_str());
        salt_proto::encode(&RequestEnvelope::Aes(env).to_value())
    }

    /// Open the reply to an AES request sent with `nonce` (the `_return` ack, a module's
    /// file-server answer, ...). The ciphertext is checked and decrypted where it lies in
    /// `reply` (a 1 MiB file chunk is not copied twice more and wiped on the way).
    pub fn open_reply(&self, reply: &mut [u8], nonce: &str) -> Result<Value, ChannelError> {
        let Some(span) = salt_proto::raw_span(reply) else {
            return Err(match salt_proto::decode(reply) {
                Ok(_) => ChannelError::Malformed("reply is not bytes"),
                Err(_) => ChannelError::Malformed("reply"),
            });
        };
        let body = match self
            .session
            .open_in_place(&mut reply[span.clone()], Some(nonce))
        {
            Ok(body) => body,
            Err(salt_pki::Error::NonceMismatch) => return Err(ChannelError::Nonce),
            // The MAC is checked before anything is decrypted: the reply is as it came.
            // Error replies are bare strings ("bad load"): show them.
            Err(salt_pki::Error::BadMac) => {
                let err = salt_proto::decode(reply).map(|v| ErrorReply::from_value(&v));
                return Err(match err {
                    Ok(Ok(err)) if err.as_str().len() < 200 => {
                        ChannelError::MasterError(err.as_str().to_owned())
                    }
                    _ => ChannelError::Decrypt,
                });
            }
            Err(_) => return Err(ChannelError::Decrypt),
        };
        if body.is_empty() {
            // Salt's loads returns {} when the "pickle::" marker is missing.
            return Ok(Value::Map(Vec::new()));
        }
        salt_proto::decode(body).map_err(|_| ChannelError::Malformed("reply body"))
    }

    /// Open a publish message (the frames received on SUB). `serial` is the guard of the
    /// current AES key (Salt's publish `serial` check). Returns the job load with `serial`
    /// consumed, or `Ok(None)` for a message not meant for us (filtered topic, non-`aes`
    /// enc, an empty body).
    pub fn open_publish(
        &self,
        frames: &[Vec<u8>],
        my_topic: &str,
        check_sig: bool,
        serial: &mut SerialGuard,
    ) -> Result<Option<JobLoad>, ChannelError> {
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
        let payload = match PublishPayload::from_bytes(payload) {
            Ok(p) => p,
            // Not an `aes` publish (or not a map): a Python minion ignores it.
            Err(
                InvalidMessage::NotAMap { .. }
                | InvalidMessage::MissingField { field: "enc", .. }
                | InvalidMessage::WrongType { field: "enc", .. }
                | InvalidMessage::BadValue { field: "enc", .. },
            ) => return Ok(None),
            Err(InvalidMessage::Decode { .. }) => return Err(ChannelError::Malformed("publish")),
            Err(_) => return Err(ChannelError::Malformed("publish load")),
        };
        if check_sig {
            let sig = payload.sig.as_deref().ok_or(ChannelError::Signature)?;
            let alg = payload
                .sig_algo
                .as_deref()
                .and_then(|a| a.parse::<SigAlgo>().ok())
                .unwrap_or(SigAlgo::Pkcs1v15Sha1);
            self.master_pub
                .verify(alg, &payload.load, sig)
                .map_err(|_| ChannelError::Signature)?;
        }
        let body = self
            .aes
            .loads(&payload.load, None)
            .map_err(|_| ChannelError::Decrypt)?;
        if body.is_empty() {
            return Ok(None);
        }
        let mut job =
            salt_proto::decode(&body).map_err(|_| ChannelError::Malformed("publish body"))?;
        match serial.check(&mut job) {
            SerialVerdict::Accepted(_) | SerialVerdict::NoSerial => {}
            SerialVerdict::Invalid => return Err(ChannelError::Malformed("publish serial")),
            SerialVerdict::Replayed { serial, .. } => {
                return Err(ChannelError::Replay(
                    u64::try_from(serial).unwrap_or_default(),
                ));
            }
        }
        JobLoad::from_value(&job)
            .map(Some)
            .map_err(ChannelError::Job)
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
    if let Some(e) = PillarReply::master_error(&v) {
        return Err(ChannelError::MasterError(e));
    }
    let r = PillarReply::from_value(&v).map_err(|e| match e {
        InvalidMessage::MissingField { field: "key", .. }
        | InvalidMessage::WrongType { field: "key", .. } => {
            ChannelError::Malformed("pillar reply key")
        }
        _ => ChannelError::Malformed("pillar reply pillar"),
    })?;
    let k = key
        .decrypt_oaep(enc_algo, &r.key)
        .map_err(|_| ChannelError::Decrypt)?;
    let ks = std::str::from_utf8(&k).map_err(|_| ChannelError::Decrypt)?;
    let c = Crypticle::from_key_string(ks).map_err(|_| ChannelError::Decrypt)?;
    let body = c
        .loads(&r.pillar, None)
        .map_err(|_| ChannelError::Decrypt)?;
    let outer = salt_proto::decode(&body).map_err(|_| ChannelError::Malformed("pillar body"))?;
    let signed = PillarSignedData::from_value(&outer).map_err(|e| match e {
        InvalidMessage::MissingField { field: "sig", .. }
        | InvalidMessage::WrongType { field: "sig", .. } => ChannelError::Signature,
        _ => ChannelError::Malformed("pillar data"),
    })?;
    master_pub
        .verify(sig_algo, &signed.data, &signed.sig)
        .map_err(|_| ChannelError::Signature)?;
    let data = PillarData::from_bytes(&signed.data).map_err(|e| match e {
        InvalidMessage::MissingField { field: "nonce", .. }
        | InvalidMessage::WrongType { field: "nonce", .. } => ChannelError::Nonce,
        InvalidMessage::MissingField { field: "key", .. }
        | InvalidMessage::WrongType { field: "key", .. } => {
            ChannelError::Malformed("pillar key mismatch")
        }
        InvalidMessage::MissingField {
            field: "pillar", ..
        }
        | InvalidMessage::WrongType {
            field: "pillar", ..
        } => ChannelError::Malformed("pillar is not a map"),
        _ => ChannelError::Malformed("pillar data"),
    })?;
    if data.key != r.key {
        return Err(ChannelError::Malformed("pillar key mismatch"));
    }
    if data.nonce != nonce {
        return Err(ChannelError::Nonce);
    }
    Ok(data.pillar)
}

/// The `zmq_filtering` topic of a minion: lowercase hex SHA-1 of its id.
pub fn topic_for(id: &str) -> String {
    use sha1::Digest;
    hex::encode(sha1::Sha1::digest(id.as_bytes()))
}
