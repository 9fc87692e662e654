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

mod decode;
mod encode;

pub use decode::{DecodeError, DecodeLimits, HARD_MAX_DEPTH, decode, decode_with_limits, raw_span};
pub use encode::{encode, encode_bin_type, encode_into, str_from_bytes, write_raw_header};

#[cfg(test)]
mod tests {
    use rmpv::Value;

    use super::*;

    fn enc(v: impl Into<Value>) -> Vec<u8> {
        encode(&v.into())
    }

    #[test]
    fn raw_span_finds_the_payload_of_one_raw() {
        for n in [0usize, 5, 31, 32, 255, 256, 70_000] {
            let payload = vec![0xeeu8; n];
            for doc in [encode(&Value::Binary(payload.clone())), {
                let mut v = Vec::new();
                write_raw_header(&mut v, n);
                v.extend_from_slice(&payload);
                v
            }] {
                let span = raw_span(&doc).unwrap();
                assert_eq!(&doc[span], &payload[..], "{n} bytes");
                // One byte short or one too many: not a whole raw.
                assert!(raw_span(&doc[..doc.len() - 1]).is_none() || n == 0);
                let mut long = doc.clone();
                long.push(0);
                assert!(raw_span(&long).is_none());
            }
        }
        assert!(raw_span(&enc(7)).is_none());
        assert!(raw_span(&[0xc6, 0, 0]).is_none());
        assert!(raw_span(&[]).is_none());
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
