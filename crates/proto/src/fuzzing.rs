//! Entry points for fuzz targets (kept public and un-gated so a `fuzz/` crate can
//! call them without special cfg flags). None of them panics on any input; the
//! return values let a fuzz target assert the invariants it cares about.

use crate::msg::{
    AuthReply, AuthRequest, AuthResponse, ErrorReply, JobLoad, MineLoad, MinionEvent, PillarData,
    PillarReply, PillarRequest, PillarSignedData, Ping, PublishPayload, RequestEnvelope,
    RequestMeta, ReturnLoad, SignedClearReply,
};
use crate::{SerialGuard, Value, decode, encode};

/// Decodes `data` and runs every typed reader over the result. Returns the decoded
/// value, or `None` if `data` is not a single acceptable msgpack document.
pub fn decode_any(data: &[u8]) -> Option<Value> {
    let v = decode(data).ok()?;
    read_all(&v);
    Some(v)
}

/// Runs every `from_value` reader (and the stateful helpers) over `v`, discarding
/// the results. Returns how many readers accepted the value.
pub fn read_all(v: &Value) -> usize {
    let oks = [
        RequestEnvelope::from_value(v).is_ok(),
        AuthRequest::from_value(v).is_ok(),
        AuthResponse::from_value(v).is_ok(),
        SignedClearReply::from_value(v).is_ok(),
        AuthReply::from_value(v).is_ok(),
        ErrorReply::from_value(v).is_ok(),
        PublishPayload::from_value(v).is_ok(),
        JobLoad::from_value(v).is_ok(),
        ReturnLoad::from_value(v).is_ok(),
        MinionEvent::from_value(v).is_ok(),
        PillarRequest::from_value(v).is_ok(),
        PillarReply::from_value(v).is_ok(),
        PillarSignedData::from_value(v).is_ok(),
        PillarData::from_value(v).is_ok(),
        Ping::from_value(v).is_ok(),
        MineLoad::from_value(v).is_ok(),
        RequestMeta::take(&mut v.clone()).is_ok(),
        SerialGuard::new().check(&mut v.clone()).is_accepted(),
    ];
    oks.iter().filter(|ok| **ok).count()
}

/// The codec invariant: if `data` decodes, re-encoding it and decoding again gives
/// a value that encodes to the same bytes (encoding is canonical). Returns `false`
/// only if that invariant is broken; `true` for undecodable input.
pub fn roundtrip_holds(data: &[u8]) -> bool {
    let Ok(v) = decode(data) else {
        return true;
    };
    let once = encode(&v);
    match decode(&once) {
        Ok(v2) => encode(&v2) == once,
        Err(_) => false,
    }
}
