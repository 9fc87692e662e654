//! AES requests (§2.4): the session key, decryption, the channel fields of the load
//! ([`AesMeta`]: ttl, id match, `tok`), then the typed command ([`Command::read`]) to
//! [`dispatch`](super::dispatch).

use std::time::Instant;

use rmpv::Value;
use salt_fileserver::inline::Budget;
use salt_pki::{Crypticle, EncAlgo, SigAlgo};
use salt_proto::auth_master;
use salt_proto::msg::{AesMeta, AesRequest, Command};
use salt_proto::{InvalidMessage, decode, encode};

use super::dispatch::{self, Answer, Ctx};
use super::error::{self, Malformed, Refused, RequestError, Seal};
use crate::shared::Shared;

/// Answers one AES request within `budget`.
pub(super) fn handle(shared: &Shared, req: AesRequest, budget: &Budget) -> Vec<u8> {
    // On the socket thread, a load that names a command other than a quick file-server one
    // (a `_return`, an event) goes to a worker without being opened here first: the worker
    // opens it anyway (before, every such request was decrypted and decoded twice).
    if budget.is_quick()
        && peek_cmd(shared, &req).is_some_and(|cmd| budget.declines_cmd(Some(&cmd)))
    {
        return Vec::new();
    }
    let (mut load, crypticle) = match open(shared, &req) {
        Ok(v) => v,
        Err(e) => return error::reply(shared, None, &e, None),
    };
    let meta = match AesMeta::take(&mut load, req.version) {
        Ok(m) => m,
        Err(e) => return error::reply(shared, None, &load_error(e), None),
    };
    if budget.declines_cmd(meta.cmd.as_deref()) {
        return Vec::new(); // not a quick file-server command: for a worker
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
    let sig_algo = req
        .sig_algo
        .as_deref()
        .and_then(|a| a.parse().ok())
        .unwrap_or(SigAlgo::Pkcs1v15Sha1);
    if cmd == "_return" && !super::signed::return_admitted(shared, &id, &mut load, sig_algo) {
        return error::seal(&seal, &Value::Boolean(false));
    }
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
        sig_algo,
        budget,
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

/// The command a load names as its first key (where Salt's minions and ours put `cmd`),
/// read from its first blocks without the MAC check: only a routing hint, the request is
/// then opened and checked in full. `None` when it cannot tell (the full path decides).
fn peek_cmd(shared: &Shared, req: &AesRequest) -> Option<String> {
    let crypticle = if req.version > 2 {
        let id = req.id.as_deref().filter(|id| auth_master::valid_id(id))?;
        shared.sessions.existing(id)?
    } else {
        shared.aes.current().crypticle.clone()
    };
    let start = crypticle.peek_body(req.load.as_slice(), 48)?;
    first_cmd(&start).map(str::to_owned)
}

/// `cmd`'s value when a msgpack map starts with the key `"cmd"` and a string value.
fn first_cmd(p: &[u8]) -> Option<&str> {
    let rest = match *p.first()? {
        0x80..=0x8f => p.get(1..)?,
        0xde => p.get(3..)?,
        0xdf => p.get(5..)?,
        _ => return None,
    };
    let rest = rest.strip_prefix(b"\xa3cmd")?;
    let (len, rest) = match *rest.first()? {
        b @ 0xa0..=0xbf => (usize::from(b & 0x1f), rest.get(1..)?),
        0xd9 => (usize::from(*rest.get(1)?), rest.get(2..)?),
        0xda => (
            usize::from(u16::from_be_bytes([*rest.get(1)?, *rest.get(2)?])),
            rest.get(3..)?,
        ),
        _ => return None,
    };
    std::str::from_utf8(rest.get(..len)?).ok()
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
        Some(tok)
            if !shared
                .tokens
                .valid(&shared.store, &id, &Value::Binary(tok.clone())) =>
        {
            Err(Refused::BadToken(id).into())
        }
        Some(_) => Ok(id),
        None if req.version > 2 => Err(Refused::NoToken(id).into()),
        None => Ok(id),
    }
}

#[cfg(test)]
mod tests {
    use super::first_cmd;
    use rmpv::Value;

    #[test]
    fn first_cmd_reads_a_leading_cmd_only() {
        let map = |pairs: Vec<(&str, Value)>| {
            salt_proto::encode(&Value::Map(
                pairs
                    .into_iter()
                    .map(|(k, v)| (Value::from(k), v))
                    .collect(),
            ))
        };
        let ret = map(vec![("cmd", "_return".into()), ("id", "m1".into())]);
        assert_eq!(first_cmd(&ret), Some("_return"));
        let long = "_file_hash_and_stat_but_longer_than_31";
        assert_eq!(first_cmd(&map(vec![("cmd", long.into())])), Some(long));
        // `cmd` not first (Salt's file client puts it last): the full path decides.
        let file = map(vec![
            ("path", "top.sls".into()),
            ("cmd", "_serve_file".into()),
        ]);
        assert_eq!(first_cmd(&file), None);
        assert_eq!(first_cmd(&map(vec![("cmd", 3.into())])), None);
        assert_eq!(first_cmd(&ret[..6]), None, "cut short");
        assert_eq!(first_cmd(b""), None);
    }
}
