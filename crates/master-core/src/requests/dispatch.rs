//! What each typed AES command does, and its answer (§7.4, §10).

use rmpv::Value;
use salt_keystore::KeyState;
use salt_pki::{Crypticle, EncAlgo, PublicKey, SigAlgo, generate_key_string};
use salt_proto::encode;
use salt_proto::msg::{
    Command, EventBody, FileLoad, MinionEvent, PillarData, PillarReply, PillarSignedData, Return,
    ServeFile,
};

use salt_fileserver::inline::Budget;

use super::error::{RequestError, Seal};
use crate::shared::Shared;

/// What a command answers.
pub(super) enum Answer {
    /// Encrypted with the request's key and nonce (Salt's `send`).
    Seal(Value),
    /// A bare value (`send_private`'s pillar reply and its errors).
    Plain(Value),
    /// Reply bytes built already (`_serve_file`'s one-buffer path).
    Bytes(Vec<u8>),
}

/// The request a command runs for.
pub(super) struct Ctx<'a> {
    /// The authenticated minion id.
    pub id: &'a str,
    /// The request's key and nonce.
    pub seal: &'a Seal<'a>,
    /// Envelope `enc_algo` (the pillar key's OAEP).
    pub enc_algo: EncAlgo,
    /// Envelope `sig_algo` (the pillar signature).
    pub sig_algo: SigAlgo,
    /// How much work the request may do where it is handled (a socket thread or a worker).
    pub budget: &'a Budget,
}

/// Runs one command.
pub(super) fn run(
    shared: &Shared,
    ctx: &Ctx<'_>,
    command: Command,
) -> Result<Answer, RequestError> {
    let id = ctx.id;
    Ok(Answer::Seal(match command {
        Command::Return(ret) => {
            handle_return(shared, id, ret);
            Value::Nil
        }
        Command::MinionEvent(ev, load) => {
            log_event(shared, id, &ev);
            shared.events.fire_minion_events(&ev, &load);
            Value::Nil
        }
        Command::Mine(m) => super::mine::store(shared, id, &m),
        Command::MineGet(g) => super::mine::get(shared, id, &g),
        Command::MineDelete(d) => super::mine::delete(shared, id, &d),
        Command::MineFlush => super::mine::flush(shared, id),
        Command::Pillar(req) => {
            let pillar = crate::pillar::answer(shared, id, &req);
            return pillar_reply(shared, ctx, pillar).map(Answer::Plain);
        }
        Command::File(f) => match f.typed() {
            Some(FileLoad::Serve(req)) => match serve_file_sealed(shared, &req, ctx) {
                Ok(reply) => return Ok(Answer::Bytes(reply)),
                Err(ret) => ret,
            },
            Some(req) => shared.files.answer(req, id, ctx.budget),
            None => Value::Nil,
        },
        Command::Other { cmd, load } if cmd == "_register_resources" => {
            super::resources::register(shared, id, &load)
        }
        Command::Other { cmd, load } => super::unsupported::reply(&cmd, id, &load),
    }))
}

/// `_serve_file` built in one buffer: the chunk read straight into the msgpack reply,
/// which is encrypted in place and framed as a msgpack raw string, the bytes the ordinary path
/// (`encode(Binary(dumps(encode(reply))))`) would send, without its four copies of the chunk.
/// `Err` carries the reply to send the ordinary way (a miss, an error, `gzip`).
fn serve_file_sealed(
    shared: &Shared,
    load: &ServeFile<'_>,
    ctx: &Ctx<'_>,
) -> Result<Vec<u8>, Value> {
    let seal = ctx.seal;
    // str32 header, IV, "pickle::", nonce, map and key headers, padding and MAC.
    const SLACK: usize = 5 + 16 + 8 + 32 + 32 + 16 + 32;
    let chunk = usize::try_from(shared.cfg.fileserver.file_buffer_size).unwrap_or(0);
    let mut buf = Vec::with_capacity(SLACK + chunk.min(64 << 20) + 256);
    buf.extend_from_slice(&[0u8; 5]);
    let start = Crypticle::begin_dumps(&mut buf, seal.nonce);
    shared.files.serve_file_into(load, &mut buf, ctx.budget)?;
    seal.crypticle.seal(&mut buf, start);
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

fn log_event(shared: &Shared, id: &str, ev: &MinionEvent) {
    if let EventBody::Batch(evs) = &ev.body {
        for (tag, _) in evs {
            if !crate::events::bus::valid_minion_tag(tag) && shared.log_limit.allow("event-tag") {
                tracing::warn!("Filtering blacklisted event tag {tag} (from {id})");
            }
        }
    }
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let tags: Vec<&str> = match &ev.body {
        EventBody::Batch(evs) => evs.iter().map(|(tag, _)| tag.as_str()).collect(),
        EventBody::Single { tag, .. } => vec![tag.as_str()],
    };
    tracing::debug!("Event from {id}: {}", tags.join(", "));
}

/// A return, handed to the job cache and the waiting commands (`jid: "req"`: a new jid).
fn handle_return(shared: &Shared, id: &str, ret: Return) {
    let Return { jid, mut load, .. } = ret;
    let Some(id) = super::resources::return_id(shared, id, &mut load) else {
        return;
    };
    let id = id.as_str();
    let jid = if jid == "req" {
        // Salt's `prep_jid(nocache=load.get("nocache", False))`.
        let jid = shared.jids.next();
        let nocache = salt_compat::map_get(&load, "nocache")
            .is_some_and(|v| !matches!(v, Value::Nil | Value::Boolean(false)));
        if shared.cfg.job_cache
            && let Err(e) = shared.jobs.prep_jid(&jid, nocache)
        {
            tracing::warn!("Job cache: cannot prepare job {jid} for {id}'s return: {e}");
        }
        jid
    } else {
        jid
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

/// `_pillar` reply (`send_private`, §10.2): the pillar signed with the master key and
/// encrypted with a one-off key, itself OAEP-encrypted to the minion's key.
fn pillar_reply(shared: &Shared, ctx: &Ctx<'_>, pillar: Value) -> Result<Value, RequestError> {
    let err = |m: &str| Ok(Value::Map(vec![(Value::from("error"), Value::from(m))]));
    let local = |what: String| RequestError::Local {
        cmd: "_pillar",
        what,
    };
    let Some(nonce) = ctx.seal.nonce else {
        return err("Nonce not included in request");
    };
    let Ok(Some(pem)) = shared.store.read_key(KeyState::Accepted, ctx.id) else {
        return err("AES key not found");
    };
    let minion_pub = PublicKey::from_pem(pem.as_bytes()).map_err(|e| {
        local(format!(
            "the accepted key of {} does not parse: {e}",
            ctx.id
        ))
    })?;
    let k = generate_key_string();
    let pcrypt = Crypticle::from_key_string(&k).map_err(|e| local(format!("one-off key: {e}")))?;
    let key = minion_pub
        .encrypt_oaep(ctx.enc_algo, k.as_bytes())
        .map_err(|e| local(format!("encrypting the one-off key: {e}")))?;
    let data = encode(
        &PillarData {
            key: key.clone(),
            pillar,
            nonce: nonce.to_owned(),
        }
        .to_value(),
    );
    let sig = shared
        .keys
        .key
        .sign(ctx.sig_algo, &data)
        .map_err(|e| local(format!("signing the pillar: {e}")))?;
    let signed = encode(&PillarSignedData { data, sig }.to_value());
    Ok(PillarReply {
        key,
        pillar: pcrypt.dumps(&signed, None),
    }
    .to_value())
}
