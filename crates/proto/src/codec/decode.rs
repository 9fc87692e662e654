//! The defensive decoder: limits, errors and the reader.

use rmp::Marker;
use rmpv::{Utf8String, Value};

use super::encode::{invalid_utf8_string, read_str_ref};

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

/// Where the payload of `bytes` lies when all of `bytes` is one msgpack raw (a str or bin
/// of any width): an encrypted reply, whose ciphertext can then be opened in place
/// without decoding (copying) it first. `None` for any other document.
pub fn raw_span(bytes: &[u8]) -> Option<std::ops::Range<usize>> {
    let (head, len) = match *bytes.first()? {
        m @ 0xa0..=0xbf => (1, usize::from(m & 0x1f)),
        0xc4 | 0xd9 => (2, usize::from(*bytes.get(1)?)),
        0xc5 | 0xda => (
            3,
            usize::from(u16::from_be_bytes([*bytes.get(1)?, *bytes.get(2)?])),
        ),
        0xc6 | 0xdb => {
            let n: [u8; 4] = bytes.get(1..5)?.try_into().ok()?;
            (5, usize::try_from(u32::from_be_bytes(n)).ok()?)
        }
        _ => return None,
    };
    (bytes.len().checked_sub(head)? == len).then_some(head..bytes.len())
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
