//! AES requests (§2.4): the session key, decryption, the channel fields of the load
//! ([`AesMeta`]: ttl, id match, `tok`), then the typed command ([`Command::read`]) to
//! [`dispatch`](super::dispatch).

use std::time::Instant;

use rmpv::Value;
use salt_pki::{Crypticle, EncAlgo, SigAlgo};
use salt_proto::auth_master;
use salt_proto::msg::{AesMeta, AesRequest, Command};
use salt_proto::{InvalidMessage, decode, encode};

use super::dispatch::{self, Answer, Ctx};
use super::error::{self, Malformed, Refused, RequestError, Seal};
use crate::state::Shared;

/// Answers one AES request.
pub(super) fn handle(shared: &Shared, req: AesRequest) -> Vec<u8> {
    let (mut load, crypticle) = match open(shared, &req) {
        Ok(v) => v,
        Err(e) => return error::reply(shared, None, &e, None),
    };
    let meta = match AesMeta::take(&mut load, req.version) {
        Ok(m) => m,
        Err(e) => return error::reply(shared, None, &load_error(e), None),
    };
    if salt_fileserver::inline::declines_cmd(meta.cmd.as_deref()) {
        return Vec::new(); // not a quick file-server command: for a worker (server.rs)
    }
    let cmd = meta.cmd.clone();
    let seal = Seal {
        crypticle: &crypticle,
        nonce: meta.nonce.as_deref(),
    };
    let id = match admit(shared, &req, &meta) {
        Ok(id) => id,
        Err(e) => return error::reply(shared, cmd.as_deref(), &e, None),
    };
    let Some(cmd) = cmd else {
        return error::reply(shared, None, &Malformed::NoCmd.into(), None);
    };
    let command = match Command::read(&cmd, load) {
        Ok(c) => c,
        Err(source) => {
            let e = RequestError::Command { cmd, source };
            return error::reply(shared, e_cmd(&e), &e, Some(&seal));
        }
    };
    let ctx = Ctx {
        id: &id,
        seal: &seal,
        enc_algo: req
            .enc_algo
            .as_deref()
            .and_then(|a| a.parse().ok())
            .unwrap_or(EncAlgo::OaepSha1),
        sig_algo: req
            .sig_algo
            .as_deref()
            .and_then(|a| a.parse().ok())
            .unwrap_or(SigAlgo::Pkcs1v15Sha1),
    };
    match dispatch::run(shared, &ctx, command) {
        Ok(Answer::Seal(v)) => error::seal(&seal, &v),
        Ok(Answer::Plain(v)) => encode(&v),
        Ok(Answer::Bytes(b)) => b,
        Err(e) => error::reply(shared, Some(&cmd), &e, Some(&seal)),
    }
}

fn e_cmd(e: &RequestError) -> Option<&str> {
    match e {
        RequestError::Command { cmd, .. } => Some(cmd),
        _ => None,
    }
}

fn load_error(e: InvalidMessage) -> RequestError {
    match e {
        InvalidMessage::NotAMap { .. } => Malformed::LoadNotADict,
        InvalidMessage::BadValue { field: "id", .. } => Malformed::IdNullByte,
        InvalidMessage::WrongType { field: "id", .. } => Malformed::IdNotAString,
        // `tok` is the only other field `AesMeta` types: not bytes, it cannot validate.
        _ => Malformed::TokNotBytes,
    }
    .into()
}

/// The session key (v3: the envelope id's; older: the publish key), and the decrypted load.
/// Within the grace window after a rotation, a request encrypted with the previous publish
/// key is still taken (and answered with that key); the token check still refuses a minion
/// whose key was deleted or rejected.
fn open(shared: &Shared, req: &AesRequest) -> Result<(Value, Crypticle), RequestError> {
    let ct = req.load.as_slice();
    let (crypticle, v3) = if req.version > 2 {
        let Some(id) = req.id.as_deref().filter(|id| auth_master::valid_id(id)) else {
            return Err(Refused::EnvelopeId.into());
        };
        match shared.sessions.existing(id) {
            Some(c) => (c, true),
            None => return Err(Refused::NoSession(id.to_owned()).into()),
        }
    } else {
        (shared.aes.current().crypticle.clone(), false)
    };
    let decrypted = crypticle
        .loads(ct, None)
        .map(|p| (p, crypticle))
        .or_else(|e| {
            if v3 {
                return Err(e);
            }
            shared
                .aes
                .previous_within(shared.cfg.aes_rotation_grace, Instant::now())
                .and_then(|prev| {
                    let c = prev.crypticle.clone();
                    c.loads(ct, None).ok().map(|p| (p, c))
                })
                .ok_or(e)
        });
    let (plain, crypticle) = decrypted.map_err(|_| Refused::Undecryptable)?;
    match decode(&plain) {
        Ok(v) if v.is_map() => Ok((v, crypticle)),
        _ => Err(Malformed::LoadNotADict.into()),
    }
}

/// Salt's checks before dispatch: `request_server_ttl` and the id match (v3), a valid load
/// id, the `tok`. Returns the (authenticated) minion id.
fn admit(shared: &Shared, req: &AesRequest, meta: &AesMeta) -> Result<String, RequestError> {
    if req.version > 2 {
        if let Some(ttl) = shared.cfg.request_server_ttl.filter(|t| !t.is_zero()) {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0);
            if now - meta.ts.unwrap_or(0.0) > ttl.as_secs_f64() {
                return Err(Refused::Expired.into());
            }
        }
        if meta.id != req.id {
            return Err(Refused::IdMismatch.into());
        }
    }
    let Some(id) = meta.id.clone().filter(|id| auth_master::valid_id(id)) else {
        return Err(Refused::NoValidId.into());
    };
    match &meta.tok {
        Some(tok) if !crate::tokens::token_valid(shared, &id, &Value::Binary(tok.clone())) => {
            Err(Refused::BadToken(id).into())
        }
        Some(_) => Ok(id),
        None if req.version > 2 => Err(Refused::NoToken(id).into()),
        None => Ok(id),
    }
}
