//! msgpack exactly as Salt puts it on the wire.
//!
//! Salt serialises every ZeroMQ message with `salt.payload.dumps`, i.e. Python
//! `msgpack.packb(obj, use_bin_type=False)`: both Python `str` and `bytes` are
//! written with the *str* family (fixstr, str16, str32; never str8, never bin),
//! integers in their smallest form, floats as float64, maps in insertion order.
//! [`encode`] reproduces that byte for byte, so a message built here and one built
//! by Python Salt from the same data are identical.
//!
//! On the way in, Salt decodes with `raw=True` and then turns every byte string
//! that is valid UTF-8 into text; anything else stays bytes. Ciphertexts and
//! signatures therefore travel as msgpack *str* holding invalid UTF-8. [`decode`]
//! accepts every msgpack form (str8, bin, float32, ext, ...) and keeps invalid
//! UTF-8 str payloads as [`Value::String`] whose [`rmpv::Utf8String`] holds the
//! raw bytes (use [`crate::ValueExt::as_bytes`] to read either kind).
//!
//! Decoding is defensive: input size, nesting depth and the total number of
//! values are limited ([`DecodeLimits`]), container lengths are checked against
//! the bytes actually left (a 6-byte frame claiming 2^32 elements is refused
//! before anything is allocated), trailing bytes are an error, and no input makes
//! the decoder panic.

use rmp::Marker;
use rmpv::{Utf8String, Value};

/// Hard ceiling on [`DecodeLimits::max_depth`]: the decoder recurses once per
/// nesting level, so the depth must stay far below what the stack can hold.
pub const HARD_MAX_DEPTH: usize = 512;

/// Limits applied by [`decode_with_limits`]. [`Default`] gives the values [`decode`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Largest accepted input, in bytes. Default 64 MiB (well above Salt's real
    /// messages; big job returns are the largest).
    pub max_input: usize,
    /// Deepest accepted nesting of arrays and maps (a scalar is depth 0, `[[1]]`
    /// is depth 2). Default 64. Values above [`HARD_MAX_DEPTH`] are clamped to it.
    pub max_depth: usize,
    /// Largest accepted total number of values (every scalar, container, key and
    /// map value counts one). A decoded [`Value`] takes about 40 bytes per value
    /// whatever its wire size, so this bounds memory use. Default 8 Mi.
    pub max_values: usize,
}

impl DecodeLimits {
    /// Default maximum input size: 64 MiB.
    pub const DEFAULT_MAX_INPUT: usize = 64 * 1024 * 1024;
    /// Default maximum nesting depth.
    pub const DEFAULT_MAX_DEPTH: usize = 64;
    /// Default maximum total number of values.
    pub const DEFAULT_MAX_VALUES: usize = 8 * 1024 * 1024;
}

impl Default for DecodeLimits {
    fn default() -> Self {
        Self {
            max_input: Self::DEFAULT_MAX_INPUT,
            max_depth: Self::DEFAULT_MAX_DEPTH,
            max_values: Self::DEFAULT_MAX_VALUES,
        }
    }
}

/// Why a byte string is not one acceptable msgpack document.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The input is larger than [`DecodeLimits::max_input`].
    #[error("msgpack input of {len} bytes exceeds the limit of {max} bytes")]
    InputTooLarge {
        /// Input length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The input ends in the middle of a value (an empty input included).
    #[error("msgpack input truncated at offset {offset}")]
    Truncated {
        /// Where more bytes were needed.
        offset: usize,
    },
    /// A complete value was read but bytes follow it.
    #[error("{remaining} trailing bytes after the msgpack value at offset {offset}")]
    TrailingBytes {
        /// Offset of the first trailing byte.
        offset: usize,
        /// Number of trailing bytes.
        remaining: usize,
    },
    /// Arrays/maps are nested deeper than [`DecodeLimits::max_depth`].
    #[error("msgpack nesting deeper than {max} at offset {offset}")]
    TooDeep {
        /// Offset of the container that went too deep.
        offset: usize,
        /// The limit.
        max: usize,
    },
    /// More values than [`DecodeLimits::max_values`].
    #[error("more than {max} msgpack values")]
    TooManyValues {
        /// The limit.
        max: usize,
    },
    /// A length prefix claims more than the bytes left could hold.
    #[error("length {claimed} at offset {offset} exceeds the {remaining} bytes left")]
    LengthExceedsInput {
        /// Offset of the length's marker.
        offset: usize,
        /// The claimed length (elements or bytes).
        claimed: u64,
        /// Bytes left after the header.
        remaining: usize,
    },
    /// The marker byte 0xc1, which msgpack never uses.
    #[error("reserved msgpack marker 0xc1 at offset {offset}")]
    ReservedMarker {
        /// Offset of the marker.
        offset: usize,
    },
}

/// Decodes one msgpack document with the default [`DecodeLimits`].
///
/// Every msgpack form is accepted; str payloads that are not valid UTF-8 are kept
/// as [`Value::String`] with the raw bytes; bytes after the document are an error.
///
/// # Errors
/// [`DecodeError`] for malformed, truncated, oversized or too deeply nested input.
pub fn decode(bytes: &[u8]) -> Result<Value, DecodeError> {
    decode_with_limits(bytes, &DecodeLimits::default())
}

/// Decodes one msgpack document with explicit limits. See [`decode`].
///
/// # Errors
/// [`DecodeError`] for malformed, truncated, oversized or too deeply nested input.
pub fn decode_with_limits(bytes: &[u8], limits: &DecodeLimits) -> Result<Value, DecodeError> {
    if bytes.len() > limits.max_input {
        return Err(DecodeError::InputTooLarge {
            len: bytes.len(),
            max: limits.max_input,
        });
    }
    let mut rd = Reader {
        buf: bytes,
        pos: 0,
        values: 0,
        max_values: limits.max_values,
        max_depth: limits.max_depth.min(HARD_MAX_DEPTH),
    };
    let value = rd.value(0)?;
    if rd.pos != bytes.len() {
        return Err(DecodeError::TrailingBytes {
            offset: rd.pos,
            remaining: bytes.len().saturating_sub(rd.pos),
        });
    }
    Ok(value)
}

/// Containers larger than this are not preallocated in one go; the vector grows
/// as elements actually arrive.
const PREALLOC_MAX: usize = 4096;

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    values: usize,
    max_values: usize,
    max_depth: usize,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let truncated = DecodeError::Truncated { offset: self.pos };
        let end = self.pos.checked_add(n).ok_or(truncated.clone())?;
        let out = self.buf.get(self.pos..end).ok_or(truncated)?;
        self.pos = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        let b = self.take(1)?;
        b.first()
            .copied()
            .ok_or(DecodeError::Truncated { offset: self.pos })
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let offset = self.pos;
        let b = self.take(N)?;
        b.try_into().map_err(|_| DecodeError::Truncated { offset })
    }

    fn be_u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    fn be_u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn be_u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    /// Checks a length prefix against the bytes left: each element needs at least
    /// `min_bytes_each` bytes. Returns the length as `usize`.
    fn checked_len(
        &self,
        marker_at: usize,
        claimed: u64,
        min_bytes_each: u64,
    ) -> Result<usize, DecodeError> {
        let remaining = self.remaining();
        let need = claimed.saturating_mul(min_bytes_each);
        match usize::try_from(need) {
            Ok(need) if need <= remaining => {
                usize::try_from(claimed).map_err(|_| DecodeError::LengthExceedsInput {
                    offset: marker_at,
                    claimed,
                    remaining,
                })
            }
            _ => Err(DecodeError::LengthExceedsInput {
                offset: marker_at,
                claimed,
                remaining,
            }),
        }
    }

    fn count_value(&mut self) -> Result<(), DecodeError> {
        self.values = self.values.saturating_add(1);
        if self.values > self.max_values {
            return Err(DecodeError::TooManyValues {
                max: self.max_values,
            });
        }
        Ok(())
    }

    fn value(&mut self, depth: usize) -> Result<Value, DecodeError> {
        self.count_value()?;
        let at = self.pos;
        let marker = Marker::from_u8(self.u8()?);
        let v = match marker {
            Marker::FixPos(n) => Value::from(n),
            Marker::FixNeg(n) => Value::from(n),
            Marker::Null => Value::Nil,
            Marker::True => Value::Boolean(true),
            Marker::False => Value::Boolean(false),
            Marker::U8 => Value::from(self.u8()?),
            Marker::U16 => Value::from(self.be_u16()?),
            Marker::U32 => Value::from(self.be_u32()?),
            Marker::U64 => Value::from(self.be_u64()?),
            Marker::I8 => Value::from(i8::from_be_bytes(self.array()?)),
            Marker::I16 => Value::from(i16::from_be_bytes(self.array()?)),
            Marker::I32 => Value::from(i32::from_be_bytes(self.array()?)),
            Marker::I64 => Value::from(i64::from_be_bytes(self.array()?)),
            Marker::F32 => Value::F32(f32::from_be_bytes(self.array()?)),
            Marker::F64 => Value::F64(f64::from_be_bytes(self.array()?)),
            Marker::FixStr(n) => self.str(at, u64::from(n))?,
            Marker::Str8 => {
                let n = self.u8()?;
                self.str(at, u64::from(n))?
            }
            Marker::Str16 => {
                let n = self.be_u16()?;
                self.str(at, u64::from(n))?
            }
            Marker::Str32 => {
                let n = self.be_u32()?;
                self.str(at, u64::from(n))?
            }
            Marker::Bin8 => {
                let n = self.u8()?;
                self.bin(at, u64::from(n))?
            }
            Marker::Bin16 => {
                let n = self.be_u16()?;
                self.bin(at, u64::from(n))?
            }
            Marker::Bin32 => {
                let n = self.be_u32()?;
                self.bin(at, u64::from(n))?
            }
            Marker::FixArray(n) => self.seq(at, u64::from(n), depth)?,
            Marker::Array16 => {
                let n = self.be_u16()?;
                self.seq(at, u64::from(n), depth)?
            }
            Marker::Array32 => {
                let n = self.be_u32()?;
                self.seq(at, u64::from(n), depth)?
            }
            Marker::FixMap(n) => self.map(at, u64::from(n), depth)?,
            Marker::Map16 => {
                let n = self.be_u16()?;
                self.map(at, u64::from(n), depth)?
            }
            Marker::Map32 => {
                let n = self.be_u32()?;
                self.map(at, u64::from(n), depth)?
            }
            Marker::FixExt1 => self.ext(at, 1)?,
            Marker::FixExt2 => self.ext(at, 2)?,
            Marker::FixExt4 => self.ext(at, 4)?,
            Marker::FixExt8 => self.ext(at, 8)?,
            Marker::FixExt16 => self.ext(at, 16)?,
            Marker::Ext8 => {
                let n = self.u8()?;
                self.ext(at, u64::from(n))?
            }
            Marker::Ext16 => {
                let n = self.be_u16()?;
                self.ext(at, u64::from(n))?
            }
            Marker::Ext32 => {
                let n = self.be_u32()?;
                self.ext(at, u64::from(n))?
            }
            Marker::Reserved => return Err(DecodeError::ReservedMarker { offset: at }),
        };
        Ok(v)
    }

    fn str(&mut self, at: usize, len: u64) -> Result<Value, DecodeError> {
        let n = self.checked_len(at, len, 1)?;
        let data = self.take(n)?;
        Ok(Value::String(match std::str::from_utf8(data) {
            Ok(s) => Utf8String::from(s),
            // Keep the raw bytes, as Salt does for non-UTF-8 "str" payloads. Re-read
            // the str (header included) from the input with rmpv, the only way to
            // build such a Utf8String, copying the bytes once.
            Err(_) => match self.buf.get(at..self.pos).map(read_str_ref) {
                Some(Some(s)) => s,
                _ => invalid_utf8_string(data),
            },
        }))
    }

    fn bin(&mut self, at: usize, len: u64) -> Result<Value, DecodeError> {
        let n = self.checked_len(at, len, 1)?;
        Ok(Value::Binary(self.take(n)?.to_vec()))
    }

    fn ext(&mut self, at: usize, len: u64) -> Result<Value, DecodeError> {
        // One type byte, then the data.
        let n = self
            .checked_len(at, len.saturating_add(1), 1)?
            .saturating_sub(1);
        let ty = i8::from_be_bytes(self.array()?);
        Ok(Value::Ext(ty, self.take(n)?.to_vec()))
    }

    fn enter(&self, at: usize, depth: usize) -> Result<usize, DecodeError> {
        let depth = depth.saturating_add(1);
        if depth > self.max_depth {
            return Err(DecodeError::TooDeep {
                offset: at,
                max: self.max_depth,
            });
        }
        Ok(depth)
    }

    fn seq(&mut self, at: usize, len: u64, depth: usize) -> Result<Value, DecodeError> {
        let depth = self.enter(at, depth)?;
        let n = self.checked_len(at, len, 1)?;
        let mut items = Vec::with_capacity(n.min(PREALLOC_MAX));
        for _ in 0..n {
            items.push(self.value(depth)?);
        }
        Ok(Value::Array(items))
    }

    fn map(&mut self, at: usize, len: u64, depth: usize) -> Result<Value, DecodeError> {
        let depth = self.enter(at, depth)?;
        let n = self.checked_len(at, len, 2)?;
        let mut entries = Vec::with_capacity(n.min(PREALLOC_MAX));
        for _ in 0..n {
            let k = self.value(depth)?;
            let v = self.value(depth)?;
            entries.push((k, v));
        }
        Ok(Value::Map(entries))
    }
}

/// Builds a [`Utf8String`] holding bytes that are not valid UTF-8.
///
/// `rmpv` offers no public constructor for that case, so the bytes are wrapped in a
/// str32 header and read back with `rmpv`'s borrowing reader. Falls back to a lossy
/// conversion if that ever failed (it cannot for a well-formed header).
fn invalid_utf8_string(data: &[u8]) -> Utf8String {
    let mut wire = Vec::with_capacity(data.len().saturating_add(5));
    write_str_header(&mut wire, data.len());
    wire.extend_from_slice(data);
    read_str_ref(&wire).unwrap_or_else(|| Utf8String::from(String::from_utf8_lossy(data)))
}

/// Reads one msgpack str (header and body) with rmpv's borrowing reader.
fn read_str_ref(mut wire: &[u8]) -> Option<Utf8String> {
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
        Value::String(s) => write_raw(out, s.as_bytes()),
        Value::Binary(b) => write_raw(out, b),
        Value::Array(items) => {
            let n = clamp_len(items.len());
            write_container_header(out, n, Marker::FixArray, Marker::Array16, Marker::Array32);
            for item in items.iter().take(n) {
                encode_into(item, out);
            }
        }
        Value::Map(entries) => {
            let n = clamp_len(entries.len());
            write_container_header(out, n, Marker::FixMap, Marker::Map16, Marker::Map32);
            for (k, v) in entries.iter().take(n) {
                encode_into(k, out);
                encode_into(v, out);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: impl Into<Value>) -> Vec<u8> {
        encode(&v.into())
    }

    #[test]
    fn ints_use_smallest_form() {
        assert_eq!(enc(0u8), [0x00]);
        assert_eq!(enc(127u8), [0x7f]);
        assert_eq!(enc(128u8), [0xcc, 0x80]);
        assert_eq!(enc(256u16), [0xcd, 0x01, 0x00]);
        assert_eq!(enc(65536u32), [0xce, 0, 1, 0, 0]);
        assert_eq!(
            enc(u64::MAX),
            [0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
        assert_eq!(enc(-1i8), [0xff]);
        assert_eq!(enc(-32i8), [0xe0]);
        assert_eq!(enc(-33i8), [0xd0, 0xdf]);
        assert_eq!(enc(-129i16), [0xd1, 0xff, 0x7f]);
        assert_eq!(enc(-32769i32), [0xd2, 0xff, 0xff, 0x7f, 0xff]);
        assert_eq!(enc(i64::MIN)[0], 0xd3);
        // A positive value stored as i64 still uses the unsigned forms.
        assert_eq!(encode(&Value::from(200i64)), [0xcc, 200]);
    }

    #[test]
    fn strings_and_bytes_use_str_family_without_str8() {
        assert_eq!(enc("ab"), [0xa2, b'a', b'b']);
        let s31 = "x".repeat(31);
        assert_eq!(enc(s31.as_str())[0], 0xbf);
        let s32 = "x".repeat(32);
        assert_eq!(enc(s32.as_str())[..3], [0xda, 0x00, 0x20]);
        let b = encode(&Value::Binary(vec![0xff; 40]));
        assert_eq!(b[..3], [0xda, 0x00, 40]);
        let big = encode(&Value::Binary(vec![0; 65536]));
        assert_eq!(big[..5], [0xdb, 0, 1, 0, 0]);
    }

    #[test]
    fn floats_are_float64() {
        assert_eq!(encode(&Value::F32(1.5))[0], 0xcb);
        assert_eq!(encode(&Value::F64(1.5)), {
            let mut v = vec![0xcb];
            v.extend_from_slice(&1.5f64.to_be_bytes());
            v
        });
    }

    #[test]
    fn ext_uses_fixext_when_possible() {
        assert_eq!(
            encode(&Value::Ext(78, vec![1, 2, 3, 4])),
            [0xd6, 78, 1, 2, 3, 4]
        );
        assert_eq!(encode(&Value::Ext(5, vec![9; 3])), [0xc7, 3, 5, 9, 9, 9]);
        assert_eq!(encode(&Value::Ext(-1, vec![])), [0xc7, 0, 0xff]);
    }

    #[test]
    fn invalid_utf8_str_is_kept() {
        let v = decode(&[0xa3, 0xff, 0xfe, b'a']).unwrap();
        match &v {
            Value::String(s) => {
                assert!(s.is_err());
                assert_eq!(s.as_bytes(), [0xff, 0xfe, b'a']);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(encode(&v), [0xa3, 0xff, 0xfe, b'a']);
        assert_eq!(str_from_bytes(vec![0xff, 0xfe, b'a']), v);
    }

    #[test]
    fn accepts_str8_bin_and_float32() {
        assert_eq!(decode(&[0xd9, 1, b'z']).unwrap(), Value::from("z"));
        assert_eq!(decode(&[0xc4, 1, 7]).unwrap(), Value::Binary(vec![7]));
        assert_eq!(decode(&[0xca, 0x3f, 0xc0, 0, 0]).unwrap(), Value::F32(1.5));
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(decode(&[]), Err(DecodeError::Truncated { offset: 0 }));
        assert_eq!(
            decode(&[0xc0, 0xc0]),
            Err(DecodeError::TrailingBytes {
                offset: 1,
                remaining: 1
            })
        );
        assert_eq!(
            decode(&[0xc1]),
            Err(DecodeError::ReservedMarker { offset: 0 })
        );
        assert!(matches!(
            decode(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0]),
            Err(DecodeError::LengthExceedsInput {
                claimed: 0xffff_ffff,
                ..
            })
        ));
        assert!(matches!(
            decode(&[0xdf, 0xff, 0xff, 0xff, 0xff]),
            Err(DecodeError::LengthExceedsInput { .. })
        ));
        assert!(matches!(
            decode(&[0xc9, 0xff, 0xff, 0xff, 0xff, 1]),
            Err(DecodeError::LengthExceedsInput { .. })
        ));
        let deep = [0x91u8; 65]
            .iter()
            .copied()
            .chain([0xc0])
            .collect::<Vec<_>>();
        assert!(matches!(
            decode(&deep),
            Err(DecodeError::TooDeep { max: 64, .. })
        ));
        let ok = [0x91u8; 64]
            .iter()
            .copied()
            .chain([0xc0])
            .collect::<Vec<_>>();
        assert!(decode(&ok).is_ok());
        let limits = DecodeLimits {
            max_input: 3,
            ..DecodeLimits::default()
        };
        assert!(matches!(
            decode_with_limits(&[0x93, 1, 2, 3], &limits),
            Err(DecodeError::InputTooLarge { len: 4, max: 3 })
        ));
        let limits = DecodeLimits {
            max_values: 3,
            ..DecodeLimits::default()
        };
        assert!(matches!(
            decode_with_limits(&[0x93, 1, 2, 3], &limits),
            Err(DecodeError::TooManyValues { max: 3 })
        ));
    }

    #[test]
    fn huge_depth_limit_is_clamped() {
        let limits = DecodeLimits {
            max_depth: usize::MAX,
            ..DecodeLimits::default()
        };
        let deep = vec![0x91u8; 100_000];
        assert!(matches!(
            decode_with_limits(&deep, &limits),
            Err(DecodeError::TooDeep {
                max: HARD_MAX_DEPTH,
                ..
            })
        ));
    }
}
