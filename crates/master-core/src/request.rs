//! The request server's message handling (§2.4, §3, §10): bytes in, reply bytes out.
//!
//! [`handle`] is synchronous and CPU-bound (RSA, AES): the server runs it on the worker pool,
//! never on the socket loop. It never panics on peer input; every bad request gets one of
//! Salt's error strings (`"bad load"`, ...) and a rate-limited log line.

use std::time::Instant;

use rmpv::Value;
use salt_keystore::KeyState;
use salt_pki::{Crypticle, EncAlgo, PublicKey, SigAlgo, generate_key_string};
use salt_proto::auth_master::{
    self, AcceptInner, Act, AuthRequest, AuthRequestError, AuthRet, KeyAction, KeyFacts, Pending,
    Policy,
};
use salt_proto::{ReplayVerdict, decode, encode, map_get};

use crate::state::Shared;

const BAD_LOAD: &str = "bad load";

fn text(v: &str) -> Value {
    Value::from(v)
}

fn reply_str(s: &str) -> Vec<u8> {
    encode(&text(s))
}

fn get<'a>(map: &'a Value, key: &str) -> Option<&'a Value> {
    map_get(map, key)
}

fn get_str<'a>(map: &'a Value, key: &str) -> Option<&'a str> {
    match get(map, key)? {
        Value::String(s) => s.as_str(),
        Value::Binary(b) => std::str::from_utf8(b).ok(),
        _ => None,
    }
}

fn get_bytes<'a>(map: &'a Value, key: &str) -> Option<&'a [u8]> {
    match get(map, key)? {
        Value::String(s) => Some(s.as_bytes()),
        Value::Binary(b) => Some(b),
        _ => None,
    }
}

/// Remove `key` from a map value, returning its value.
fn pop(map: &mut Value, key: &str) -> Option<Value> {
    salt_proto::map_remove(map, key)
}

/// Handle one request body; `None` means "send nothing" (never used for valid framing:
/// Salt always answers, so we do too).
pub fn handle(shared: &Shared, body: &[u8]) -> Vec<u8> {
    let payload = match decode(body) {
        Ok(v) => v,
        Err(e) => {
            if shared.log_limit.allow("decode") {
                tracing::warn!("Bad load from minion: undecodable request: {e}");
            }
            return reply_str(BAD_LOAD);
        }
    };
    if !payload.is_map() || get(&payload, "enc").is_none() || get(&payload, "load").is_none() {
        if shared.log_limit.allow("envelope") {
            tracing::warn!("Bad load from minion: request is not an envelope map");
        }
        return reply_str(BAD_LOAD);
    }
    let version = match get(&payload, "version") {
        None | Some(Value::Nil) => 0,
        Some(v) => v.as_i64().unwrap_or(-1),
    };
    let min = i64::from(shared.cfg.minimum_auth_version);
    if min > 0 && version < min {
        if shared.log_limit.allow("version") {
            tracing::warn!(
                "Rejecting request with protocol version {version} < minimum_auth_version {min}"
            );
        }
        return reply_str(BAD_LOAD);
    }
    match get_str(&payload, "enc") {
        // A sign-in is RSA work: declined on the socket thread (server.rs), done by a worker.
        Some("clear") if salt_fileserver::inline::decline() => Vec::new(),
        Some("clear") => handle_clear(shared, &payload, version),
        Some("aes") => handle_aes(shared, &payload, version),
        _ => {
            if shared.log_limit.allow("enc") {
                tracing::warn!("Bad load from minion: unknown enc");
            }
            reply_str(BAD_LOAD)
        }
    }
}

fn check_id(load: &Value) -> Result<(), &'static str> {
    match get(load, "id") {
        None => Ok(()),
        Some(Value::String(s)) => match s.as_str() {
            Some(id) if id.contains('\0') => Err("bad load: id contains a null byte"),
            Some(_) => Ok(()),
            None => Err(BAD_LOAD),
        },
        Some(_) => Err(BAD_LOAD),
    }
}

fn handle_clear(shared: &Shared, payload: &Value, version: i64) -> Vec<u8> {
    let Some(load) = get(payload, "load").filter(|l| l.is_map()) else {
        return reply_str("payload and load must be a dict");
    };
    if let Err(e) = check_id(load) {
        return reply_str(e);
    }
    match get_str(load, "cmd") {
        Some("_auth") => handle_auth(shared, load, version),
        Some("ping") => encode(load),
        _ => encode(&Value::Map(vec![])),
    }
}

mod auth;
use auth::handle_auth;

// ---------------------------------------------------------------------------------------
// AES requests

fn handle_aes(shared: &Shared, payload: &Value, version: i64) -> Vec<u8> {
    let bad = |kind: &'static str, msg: &str| {
        if shared.log_limit.allow(kind) {
            tracing::warn!("Bad load from minion: {msg}");
        }
        reply_str(BAD_LOAD)
    };
    let Some(ct) = get_bytes(payload, "load") else {
        return bad("aes-load", "aes load is not bytes");
    };
    let (crypticle, env_id) = if version > 2 {
        let Some(id) = get_str(payload, "id").filter(|id| auth_master::valid_id(id)) else {
            return bad("aes-id", "invalid envelope id");
        };
        match shared.sessions.existing(id) {
            Some(c) => (c, Some(id.to_owned())),
            None => return bad("aes-session", &format!("no session key for {id}")),
        }
    } else {
        (shared.aes.current().crypticle.clone(), None)
    };
    // Within the grace window after a rotation, a request encrypted with the previous
    // publish key is still taken (and answered with that key); the token check below still
    // refuses a minion whose key was deleted or rejected.
    let decrypted = crypticle
        .loads(ct, None)
        .map(|p| (p, crypticle))
        .or_else(|e| match env_id {
            None => shared
                .aes
                .previous_within(shared.cfg.aes_rotation_grace, Instant::now())
                .and_then(|prev| {
                    let c = prev.crypticle.clone();
                    c.loads(ct, None).ok().map(|p| (p, c))
                })
                .ok_or(e),
            Some(_) => Err(e),
        });
    let (plain, crypticle) = match decrypted {
        Ok(pc) => pc,
        Err(_) => {
            return bad(
                "aes-decrypt",
                "request does not decrypt with the session key",
            );
        }
    };
    let mut load = match decode(&plain) {
        Ok(v) if v.is_map() => v,
        _ => return reply_str("payload and load must be a dict"),
    };
    if let Err(e) = check_id(&load) {
        return reply_str(e);
    }
    if salt_fileserver::inline::declines_cmd(get_str(&load, "cmd")) {
        return Vec::new(); // not a quick file-server command: for a worker (server.rs)
    }
    let nonce = if version > 1 {
        pop(&mut load, "nonce").and_then(|n| n.as_str().map(str::to_owned))
    } else {
        None
    };
    let load_id = get_str(&load, "id").map(str::to_owned);
    if version > 2 {
        if let Some(ttl) = shared.cfg.request_server_ttl.filter(|t| !t.is_zero()) {
            let ts = get(&load, "ts").and_then(Value::as_f64).unwrap_or(0.0);
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0);
            if now - ts > ttl.as_secs_f64() {
                return bad("aes-ttl", "request expired (request_server_ttl)");
            }
        }
        if load_id != env_id {
            return bad("aes-idmatch", "request id mismatch");
        }
    }
    let tok = pop(&mut load, "tok");
    let Some(id) = load_id.filter(|id| auth_master::valid_id(id)) else {
        return bad("aes-loadid", "request has no valid id");
    };
    match tok {
        Some(tok) if !crate::tokens::token_valid(shared, &id, &tok) => {
            return bad("aes-tok", &format!("minion token did not validate: {id}"));
        }
        Some(_) => {}
        None if version > 2 => return bad("aes-tok", &format!("request from {id} has no tok")),
        None => {}
    }
    let enc_algo = get_str(payload, "enc_algo")
        .and_then(|a| a.parse().ok())
        .unwrap_or(EncAlgo::OaepSha1);
    let sig_algo = get_str(payload, "sig_algo")
        .and_then(|a| a.parse().ok())
        .unwrap_or(SigAlgo::Pkcs1v15Sha1);
    let ret = match get_str(&load, "cmd") {
        None => return reply_str("Some exception handling minion payload"),
        Some("_return") => {
            handle_return(shared, &id, load);
            Value::Nil
        }
        Some("_minion_event") => {
            log_event(&id, &load);
            shared.events.fire_minion_events(&load);
            Value::Nil
        }
        Some(cmd @ ("_mine" | "_mine_get" | "_mine_delete" | "_mine_flush")) => {
            crate::mine::handle(shared, &id, cmd, &load)
        }
        Some("_serve_file") => match serve_file_sealed(shared, &load, &crypticle, nonce.as_deref())
        {
            Ok(reply) => return reply,
            Err(ret) => ret,
        },
        Some(cmd) if salt_fileserver::FileServer::serves(cmd) => {
            shared.files.handle(cmd, &load, &id).unwrap_or(Value::Nil)
        }
        Some("_pillar") => match crate::pillar::answer(shared, &id, &load) {
            Some(pillar) => {
                let reply = pillar_reply(shared, &id, nonce.as_deref(), enc_algo, sig_algo, pillar);
                return encode(&reply);
            }
            None => Value::Boolean(false),
        },
        Some(other) => crate::unsupported::reply(other, &id, &load),
    };
    let body = encode(&ret);
    encode(&Value::Binary(crypticle.dumps(&body, nonce.as_deref())))
}

/// `_serve_file` built in one buffer: the chunk read straight into the msgpack reply,
/// which is encrypted in place and framed as a msgpack raw string, the bytes the ordinary path
/// (`encode(Binary(dumps(encode(reply))))`) would send, without its four copies of the chunk.
/// `Err` carries the reply to send the ordinary way (a miss, an error, `gzip`).
fn serve_file_sealed(
    shared: &Shared,
    load: &Value,
    crypticle: &Crypticle,
    nonce: Option<&str>,
) -> Result<Vec<u8>, Value> {
    // str32 header, IV, "pickle::", nonce, map and key headers, padding and MAC.
    const SLACK: usize = 5 + 16 + 8 + 32 + 32 + 16 + 32;
    let chunk = usize::try_from(shared.cfg.fileserver.file_buffer_size).unwrap_or(0);
    let mut buf = Vec::with_capacity(SLACK + chunk.min(64 << 20) + 256);
    buf.extend_from_slice(&[0u8; 5]);
    let start = Crypticle::begin_dumps(&mut buf, nonce);
    shared.files.serve_file_into(load, &mut buf)?;
    crypticle.seal(&mut buf, start);
    Ok(frame_bin(buf))
}

/// `buf[5..]` framed as a msgpack raw string as `encode` writes it, its header written
/// into the five bytes reserved at the front (the unused ones dropped).
fn frame_bin(mut buf: Vec<u8>) -> Vec<u8> {
    let mut head = Vec::with_capacity(5);
    salt_proto::codec::write_raw_header(&mut head, buf.len().saturating_sub(5));
    let skip = 5 - head.len().min(5);
    buf[skip..5].copy_from_slice(&head);
    buf.drain(..skip);
    buf
}

fn log_event(id: &str, load: &Value) {
    let tags: Vec<String> = match get(load, "events") {
        Some(Value::Array(evs)) => evs
            .iter()
            .filter_map(|e| get_str(e, "tag").map(str::to_owned))
            .collect(),
        _ => get_str(load, "tag")
            .map(str::to_owned)
            .into_iter()
            .collect(),
    };
    tracing::debug!("Event from {id}: {}", tags.join(", "));
}

fn handle_return(shared: &Shared, id: &str, mut load: Value) {
    pop(&mut load, "cmd");
    let jid = match get_str(&load, "jid") {
        Some("req") | None => shared.jids.next(),
        Some(j) => j.to_owned(),
    };
    shared.events.fire_return(&jid, id, &load);
    shared.metrics.returns.inc();
    if !shared.cfg.job_cache {
        shared.jobs.deliver(&jid, id, &load);
        return;
    }
    match shared.jobs.store_return(&jid, id, &load) {
        Ok(()) => tracing::debug!("Got return from {id} for job {jid}"),
        Err(e) => {
            if shared.log_limit.allow("return-store") {
                tracing::warn!("Return from {id} for job {jid} not stored: {e}");
            }
        }
    }
}

/// `_pillar` reply (send_private, §10.2).
fn pillar_reply(
    shared: &Shared,
    id: &str,
    nonce: Option<&str>,
    enc_algo: EncAlgo,
    sig_algo: SigAlgo,
    pillar: Value,
) -> Value {
    let err = |m: &str| Value::Map(vec![(text("error"), text(m))]);
    let Some(nonce) = nonce else {
        return err("Nonce not included in request");
    };
    let Ok(Some(pem)) = shared.store.read_key(KeyState::Accepted, id) else {
        return err("AES key not found");
    };
    let Ok(minion_pub) = PublicKey::from_pem(pem.as_bytes()) else {
        return err(BAD_LOAD);
    };
    let k = generate_key_string();
    let (Ok(pcrypt), Ok(key)) = (
        Crypticle::from_key_string(&k),
        minion_pub.encrypt_oaep(enc_algo, k.as_bytes()),
    ) else {
        return err(BAD_LOAD);
    };
    let data = encode(&Value::Map(vec![
        (text("key"), Value::Binary(key.clone())),
        (text("pillar"), pillar),
        (text("nonce"), text(nonce)),
    ]));
    let Ok(sig) = shared.keys.key.sign(sig_algo, &data) else {
        return err(BAD_LOAD);
    };
    let signed = encode(&Value::Map(vec![
        (text("data"), Value::Binary(data)),
        (text("sig"), Value::Binary(sig)),
    ]));
    Value::Map(vec![
        (text("key"), Value::Binary(key)),
        (text("pillar"), Value::Binary(pcrypt.dumps(&signed, None))),
    ])
}
