//! The encoder: Salt's `salt.payload.dumps` byte for byte.

use rmp::Marker;
use rmpv::{Utf8String, Value};

/// Builds a [`Utf8String`] holding bytes that are not valid UTF-8.
///
/// `rmpv` offers no public constructor for that case, so the bytes are wrapped in a
/// str32 header and read back with `rmpv`'s borrowing reader. Falls back to a lossy
/// conversion if that ever failed (it cannot for a well-formed header).
pub(super) fn invalid_utf8_string(data: &[u8]) -> Utf8String {
    let mut wire = Vec::with_capacity(data.len().saturating_add(5));
    write_str_header(&mut wire, data.len());
    wire.extend_from_slice(data);
    read_str_ref(&wire).unwrap_or_else(|| Utf8String::from(String::from_utf8_lossy(data)))
}

/// Reads one msgpack str (header and body) with rmpv's borrowing reader.
pub(super) fn read_str_ref(mut wire: &[u8]) -> Option<Utf8String> {
    match rmpv::decode::read_value_ref(&mut wire) {
        Ok(rmpv::ValueRef::String(s)) => Some(Utf8String::from(s)),
        _ => None,
    }
}

/// Makes a msgpack "str" value from arbitrary bytes: valid UTF-8 becomes a normal
/// string, anything else a [`Value::String`] keeping the raw bytes (what [`decode`]
/// produces for such input). Both encode identically; prefer [`Value::Binary`] when
/// building messages, since it says what the data is.
pub fn str_from_bytes(data: Vec<u8>) -> Value {
    match String::from_utf8(data) {
        Ok(s) => Value::String(Utf8String::from(s)),
        Err(e) => Value::String(invalid_utf8_string(e.as_bytes())),
    }
}

/// Encodes a value exactly as Python `salt.payload.dumps` (msgpack with
/// `use_bin_type=False`) would encode the equivalent Python object:
///
/// * [`Value::String`] (valid or not) and [`Value::Binary`] → fixstr / str16 / str32;
/// * integers → the smallest form (positive fixint, uint8..64 for non-negative,
///   negative fixint, int8..64 for negative);
/// * [`Value::F32`] and [`Value::F64`] → float64 (Python has no float32);
/// * arrays and maps → fix/16/32 forms, map entries in the order given;
/// * [`Value::Ext`] → passed through (fixext when the length allows, as msgpack-python).
///
/// Lengths above `u32::MAX` cannot be represented in msgpack; such a value would be
/// nonsense (4 GiB in one string) and is written with its length truncated to
/// `u32::MAX` elements/bytes so the output stays a valid document.
pub fn encode(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(value, &mut out);
    out
}

/// Like [`encode`] but appends to `out`.
pub fn encode_into(value: &Value, out: &mut Vec<u8>) {
    encode_styled(value, out, Style::Payload);
}

/// Encodes a value as Salt's `salt.serializers.msgpack.serialize` re-serializes a load it
/// received (msgpack-python's default `use_bin_type=True`, after `salt.payload.loads` turned
/// every string that is valid UTF-8 into `str` and kept the rest as `bytes`): strings and
/// binaries that are valid UTF-8 → fixstr / str8 / str16 / str32, anything else → bin8 /
/// bin16 / bin32; everything else as [`encode`]. These are the bytes a 3008 minion signs
/// with `minion_sign_messages` and the master verifies.
pub fn encode_bin_type(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode_styled(value, &mut out, Style::BinType);
    out
}

/// Which msgpack-python string convention to write.
#[derive(Clone, Copy)]
enum Style {
    /// `salt.payload.dumps`: `use_bin_type=False`.
    Payload,
    /// `use_bin_type=True` over decoded text/bytes.
    BinType,
}

fn encode_styled(value: &Value, out: &mut Vec<u8>, style: Style) {
    match value {
        Value::Nil => out.push(Marker::Null.to_u8()),
        Value::Boolean(true) => out.push(Marker::True.to_u8()),
        Value::Boolean(false) => out.push(Marker::False.to_u8()),
        Value::Integer(i) => {
            if let Some(u) = i.as_u64() {
                write_uint(out, u);
            } else if let Some(s) = i.as_i64() {
                write_sint(out, s);
            }
        }
        Value::F32(f) => write_f64(out, f64::from(*f)),
        Value::F64(f) => write_f64(out, *f),
        Value::String(s) => write_text(out, s.as_bytes(), style),
        Value::Binary(b) => write_text(out, b, style),
        Value::Array(items) => {
            let n = clamp_len(items.len());
            write_container_header(out, n, Marker::FixArray, Marker::Array16, Marker::Array32);
            for item in items.iter().take(n) {
                encode_styled(item, out, style);
            }
        }
        Value::Map(entries) => {
            let n = clamp_len(entries.len());
            write_container_header(out, n, Marker::FixMap, Marker::Map16, Marker::Map32);
            for (k, v) in entries.iter().take(n) {
                encode_styled(k, out, style);
                encode_styled(v, out, style);
            }
        }
        Value::Ext(ty, data) => {
            let n = clamp_len(data.len());
            let data = data.get(..n).unwrap_or(data);
            match n {
                1 => out.push(Marker::FixExt1.to_u8()),
                2 => out.push(Marker::FixExt2.to_u8()),
                4 => out.push(Marker::FixExt4.to_u8()),
                8 => out.push(Marker::FixExt8.to_u8()),
                16 => out.push(Marker::FixExt16.to_u8()),
                _ => {
                    if let Ok(n8) = u8::try_from(n) {
                        out.push(Marker::Ext8.to_u8());
                        out.push(n8);
                    } else if let Ok(n16) = u16::try_from(n) {
                        out.push(Marker::Ext16.to_u8());
                        out.extend_from_slice(&n16.to_be_bytes());
                    } else {
                        out.push(Marker::Ext32.to_u8());
                        out.extend_from_slice(&len_u32(n).to_be_bytes());
                    }
                }
            }
            out.extend_from_slice(&ty.to_be_bytes());
            out.extend_from_slice(data);
        }
    }
}

fn clamp_len(n: usize) -> usize {
    n.min(u32::MAX as usize)
}

fn len_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn write_uint(out: &mut Vec<u8>, u: u64) {
    if let Ok(b) = u8::try_from(u) {
        if b < 0x80 {
            out.push(Marker::FixPos(b).to_u8());
        } else {
            out.push(Marker::U8.to_u8());
            out.push(b);
        }
    } else if let Ok(v) = u16::try_from(u) {
        out.push(Marker::U16.to_u8());
        out.extend_from_slice(&v.to_be_bytes());
    } else if let Ok(v) = u32::try_from(u) {
        out.push(Marker::U32.to_u8());
        out.extend_from_slice(&v.to_be_bytes());
    } else {
        out.push(Marker::U64.to_u8());
        out.extend_from_slice(&u.to_be_bytes());
    }
}

/// Negative integers only (non-negative ones go through [`write_uint`]).
fn write_sint(out: &mut Vec<u8>, s: i64) {
    if s >= -32 {
        // -32..=-1: negative fixint.
        out.extend_from_slice(&(s as i8).to_be_bytes());
    } else if let Ok(v) = i8::try_from(s) {
        out.push(Marker::I8.to_u8());
        out.extend_from_slice(&v.to_be_bytes());
    } else if let Ok(v) = i16::try_from(s) {
        out.push(Marker::I16.to_u8());
        out.extend_from_slice(&v.to_be_bytes());
    } else if let Ok(v) = i32::try_from(s) {
        out.push(Marker::I32.to_u8());
        out.extend_from_slice(&v.to_be_bytes());
    } else {
        out.push(Marker::I64.to_u8());
        out.extend_from_slice(&s.to_be_bytes());
    }
}

fn write_f64(out: &mut Vec<u8>, f: f64) {
    out.push(Marker::F64.to_u8());
    out.extend_from_slice(&f.to_be_bytes());
}

/// The str-family header Python writes with `use_bin_type=False`: no str8.
fn write_str_header(out: &mut Vec<u8>, len: usize) {
    if len < 32 {
        // len < 32 fits the fixstr marker's 5 bits.
        out.push(Marker::FixStr(len as u8).to_u8());
    } else if let Ok(n) = u16::try_from(len) {
        out.push(Marker::Str16.to_u8());
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(Marker::Str32.to_u8());
        out.extend_from_slice(&len_u32(len).to_be_bytes());
    }
}

/// Appends the header [`encode`] writes before `len` raw bytes (fixstr / str16 / str32, as
/// `use_bin_type=False`), for replies assembled in place around their data.
pub fn write_raw_header(out: &mut Vec<u8>, len: usize) {
    write_str_header(out, clamp_len(len));
}

/// A string or binary in `style`'s convention.
fn write_text(out: &mut Vec<u8>, data: &[u8], style: Style) {
    match style {
        Style::Payload => write_raw(out, data),
        Style::BinType => {
            let n = clamp_len(data.len());
            let data = data.get(..n).unwrap_or(data);
            let text = std::str::from_utf8(data).is_ok();
            match (text, u8::try_from(n), u16::try_from(n)) {
                (true, _, _) if n < 32 => out.push(Marker::FixStr(n as u8).to_u8()),
                (true, Ok(n8), _) => out.extend_from_slice(&[Marker::Str8.to_u8(), n8]),
                (true, _, Ok(n16)) => {
                    out.push(Marker::Str16.to_u8());
                    out.extend_from_slice(&n16.to_be_bytes());
                }
                (true, _, _) => {
                    out.push(Marker::Str32.to_u8());
                    out.extend_from_slice(&len_u32(n).to_be_bytes());
                }
                (false, Ok(n8), _) => out.extend_from_slice(&[Marker::Bin8.to_u8(), n8]),
                (false, _, Ok(n16)) => {
                    out.push(Marker::Bin16.to_u8());
                    out.extend_from_slice(&n16.to_be_bytes());
                }
                (false, _, _) => {
                    out.push(Marker::Bin32.to_u8());
                    out.extend_from_slice(&len_u32(n).to_be_bytes());
                }
            }
            out.extend_from_slice(data);
        }
    }
}

fn write_raw(out: &mut Vec<u8>, data: &[u8]) {
    let n = clamp_len(data.len());
    write_str_header(out, n);
    out.extend_from_slice(data.get(..n).unwrap_or(data));
}

fn write_container_header(
    out: &mut Vec<u8>,
    n: usize,
    fix: fn(u8) -> Marker,
    m16: Marker,
    m32: Marker,
) {
    if n < 16 {
        // n < 16 fits the fixarray/fixmap marker's 4 bits.
        out.push(fix(n as u8).to_u8());
    } else if let Ok(v) = u16::try_from(n) {
        out.push(m16.to_u8());
        out.extend_from_slice(&v.to_be_bytes());
    } else {
        out.push(m32.to_u8());
        out.extend_from_slice(&len_u32(n).to_be_bytes());
    }
}
