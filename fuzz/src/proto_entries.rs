//! Fuzz entry points over `salt-proto`: everything a peer's bytes reach before any
//! cryptography (request envelopes, every message reader, publish payloads).
//!
//! This file is shared: the cargo-fuzz targets call it through the `salt-fuzz` crate,
//! and `crates/proto/tests/fuzz_corpus.rs` includes it with `#[path]` to replay the
//! committed corpora on stable `cargo test`. It must therefore depend on nothing but
//! `salt_proto` and `std`.
//!
//! Every entry returns normally on any input; a panic (including the invariant
//! assertions below) is a finding.

use salt_proto::fuzzing::{read_all, roundtrip_holds};
use salt_proto::msg::{
    AuthReply, AuthRequest, AuthResponse, AuthRet, ErrorReply, JobLoad, MineLoad, MinionEvent,
    PillarData, PillarReply, PillarRequest, PillarSignedData, Ping, PublishPayload,
    RequestEnvelope, RequestMeta, ReturnLoad, SignedClearReply, salt_version,
};
use salt_proto::replay::ts_is_fresh;
use salt_proto::{DecodeLimits, SerialGuard, Value, decode, decode_with_limits, encode};

/// Reads `$v` as `$t`; if accepted, the message's own encoding must read back and
/// re-encode to the same bytes (what we write, we can read). Compared as bytes, not
/// with `PartialEq`, so a NaN float inside a payload is not a false alarm.
macro_rules! reread {
    ($t:ty, $v:expr) => {{
        match <$t>::from_value($v) {
            Ok(m) => {
                let written = m.to_value();
                match <$t>::from_value(&written) {
                    Ok(back) => assert!(
                        encode(&back.to_value()) == encode(&written),
                        "{}: re-encoding is not stable",
                        stringify!($t)
                    ),
                    Err(e) => panic!("{}: cannot read its own output: {e}", stringify!($t)),
                }
                true
            }
            Err(_) => false,
        }
    }};
}

/// Number of message kinds [`messages`] selects from with its first byte.
pub const MESSAGE_KINDS: u8 = 20;

/// Target `envelope`: what the master's request server does with a frame — decode
/// (default limits and tight ones), read the envelope, and for a clear request run
/// every reader over its load. Also checks the codec's canonical-encoding invariant.
pub fn envelope(data: &[u8]) {
    assert!(roundtrip_holds(data), "codec re-encoding is not canonical");
    let tight = DecodeLimits {
        max_input: 4096,
        max_depth: 4,
        max_values: 64,
    };
    let _ = decode_with_limits(data, &tight);
    let Ok(v) = decode(data) else {
        // Undecodable input must be refused by the typed reader too.
        assert!(RequestEnvelope::from_bytes(data).is_err());
        return;
    };
    let _ = salt_version(&v);
    if reread!(RequestEnvelope, &v)
        && let Ok(env) = RequestEnvelope::from_value(&v)
    {
        let _ = (env.enc(), env.version());
        if let RequestEnvelope::Clear(clear) = &env {
            read_all(&clear.load);
            reread!(AuthRequest, &clear.load);
            reread!(Ping, &clear.load);
        }
    }
    let _ = RequestEnvelope::from_bytes(data);
}

/// Target `messages`: the first byte selects one message reader, the rest is decoded
/// and given to it (so each reader gets the fuzzer's full attention in turn).
pub fn messages(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let Ok(v) = decode(rest) else {
        return;
    };
    match sel % MESSAGE_KINDS {
        0 => {
            reread!(RequestEnvelope, &v);
        }
        1 => {
            reread!(AuthRequest, &v);
        }
        2 => {
            if reread!(AuthResponse, &v) {
                assert!(AuthResponse::from_bytes(rest).is_ok());
            }
        }
        3 => {
            reread!(SignedClearReply, &v);
        }
        4 => {
            if reread!(AuthReply, &v)
                && let Ok(r) = AuthReply::from_value(&v)
            {
                let _ = r.nonce();
            }
        }
        5 => {
            if let Ok(e) = ErrorReply::from_value(&v) {
                let _ = e.as_str();
                assert_eq!(ErrorReply::from_value(&e.to_value()).ok(), Some(e));
            }
        }
        6 => {
            reread!(PublishPayload, &v);
        }
        7 => {
            if reread!(JobLoad, &v)
                && let Ok(j) = JobLoad::from_value(&v)
            {
                let _ = (j.tgt_type(), j.extra_get("kwarg"));
            }
        }
        8 => {
            if reread!(ReturnLoad, &v)
                && let Ok(r) = ReturnLoad::from_value(&v)
            {
                let _ = r.is_success();
            }
        }
        9 => {
            reread!(MinionEvent, &v);
        }
        10 => {
            reread!(PillarRequest, &v);
        }
        11 => {
            reread!(PillarReply, &v);
        }
        12 => {
            reread!(PillarSignedData, &v);
        }
        13 => {
            reread!(PillarData, &v);
        }
        14 => {
            reread!(Ping, &v);
        }
        15 => {
            reread!(MineLoad, &v);
        }
        16 => request_meta(&v),
        17 => {
            let mut guard = SerialGuard::new();
            let mut load = v.clone();
            let first = guard.check(&mut load);
            // The same load again must never be accepted with a serial.
            let mut again = v.clone();
            let second = guard.check(&mut again);
            if first.is_accepted() && matches!(first, salt_proto::SerialVerdict::Accepted(_)) {
                assert!(matches!(second, salt_proto::SerialVerdict::Replayed { .. }));
            }
        }
        18 => {
            let r = AuthRet::from_value(&v);
            assert_eq!(AuthRet::from_value(&r.to_value()), r);
        }
        _ => {
            let _ = ts_is_fresh(&v, 1_700_000_000, 60);
            let _ = ts_is_fresh(&v, i64::MIN, i64::MAX);
            let _ = ts_is_fresh(&v, i64::MAX, i64::MIN);
            read_all(&v);
        }
    }
}

/// `RequestMeta::take` then `apply`: what the master strips, the minion can put back.
fn request_meta(v: &Value) {
    let mut load = v.clone();
    if let Ok(meta) = RequestMeta::take(&mut load) {
        let mut fresh = Value::Map(Vec::new());
        assert!(meta.apply(&mut fresh));
        let back = RequestMeta::take(&mut fresh);
        assert_eq!(back.ok(), Some(meta));
    } else {
        // Compared as bytes: a NaN float in the load is not equal to itself.
        assert!(encode(&load) == encode(v), "take changed the load on error");
    }
}

/// Target `publish`: what a minion's SUB socket handler does — read a publish
/// payload; its `load` (and the input itself) read as a job load, as if decrypted;
/// the serial check on the decoded load.
pub fn publish(data: &[u8]) {
    if let Ok(p) = PublishPayload::from_bytes(data)
        && let Ok(j) = JobLoad::from_bytes(&p.load)
    {
        let _ = JobLoad::from_value(&j.to_value());
    }
    if let Ok(j) = JobLoad::from_bytes(data) {
        let _ = (j.tgt_type(), j.extra_get("ret"));
    }
    if let Ok(mut v) = decode(data) {
        reread!(PublishPayload, &v);
        reread!(JobLoad, &v);
        let mut guard = SerialGuard::new();
        let _ = guard.check(&mut v);
        let _ = JobLoad::from_value(&v);
    }
}

/// Target `clear`: Salt's clear-text commands on the request port (unauthenticated input,
/// as CVE-2020-11651 showed): the reader the master calls, on raw bytes and on any decoded
/// value. Invariants: a load that reads keeps a bounded command name, and never a secret
/// in its `Debug` text.
pub fn clear(data: &[u8]) {
    use salt_proto::clear::{ClearCommand, MAX_NAME};
    if let Ok(cmd) = ClearCommand::decode(data) {
        assert!(cmd.name().len() <= MAX_NAME, "unbounded command name");
        let shown = format!("{cmd:?}");
        assert!(
            !shown.contains("password: Some(\""),
            "a secret in Debug output"
        );
    }
    if let Ok(v) = decode(data) {
        let _ = ClearCommand::from_load(&v);
        if let Some(load) = v.as_map().and_then(|m| {
            m.iter()
                .find(|(k, _)| k.as_str() == Some("load"))
                .map(|(_, l)| l)
        }) {
            let _ = ClearCommand::from_load(load);
        }
    }
}
