//! Property tests: the codec round-trips arbitrary values and never panics.

#![allow(clippy::unwrap_used)] // tests may unwrap

use proptest::prelude::*;
use salt_proto::fuzzing::{read_all, roundtrip_holds};
use salt_proto::{DecodeError, Value, decode, encode, str_from_bytes};

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Nil),
        any::<bool>().prop_map(Value::Boolean),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::F64),
        any::<f32>().prop_map(Value::F32),
        ".{0,40}".prop_map(Value::from),
        // Mostly invalid UTF-8: what ciphertexts and signatures look like on the wire.
        prop::collection::vec(any::<u8>(), 0..300).prop_map(str_from_bytes),
        prop::collection::vec(any::<u8>(), 0..40).prop_map(Value::Binary),
        (any::<i8>(), prop::collection::vec(any::<u8>(), 0..20))
            .prop_map(|(t, d)| Value::Ext(t, d)),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 256, 20, |inner| {
        let key = prop_oneof![
            "[a-z_]{0,12}".prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            prop::collection::vec(any::<u8>(), 0..8).prop_map(str_from_bytes),
            inner.clone(),
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..20).prop_map(Value::Array),
            prop::collection::vec((key, inner), 0..12).prop_map(Value::Map),
        ]
    })
}

/// What a value becomes after a trip through the wire: bin → str, float32 → float64.
/// Floats are compared by bits so NaN payloads count.
fn same_after_wire(sent: &Value, got: &Value) -> bool {
    match (sent, got) {
        (Value::Binary(b), Value::String(s)) => b.as_slice() == s.as_bytes(),
        (Value::String(a), Value::String(b)) => a.as_bytes() == b.as_bytes(),
        (Value::F32(a), Value::F64(b)) => f64::from(*a).to_bits() == b.to_bits(),
        (Value::F64(a), Value::F64(b)) => a.to_bits() == b.to_bits(),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_after_wire(x, y))
        }
        (Value::Map(a), Value::Map(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((k1, v1), (k2, v2))| same_after_wire(k1, k2) && same_after_wire(v1, v2))
        }
        (a, b) => a == b,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn encode_decode_roundtrip(v in value()) {
        let bytes = encode(&v);
        let back = decode(&bytes).unwrap();
        prop_assert!(same_after_wire(&v, &back), "{v:?} came back as {back:?}");
        prop_assert_eq!(encode(&back), bytes);
    }

    #[test]
    fn prefixes_are_truncated_and_suffixes_trailing(v in value(), extra in any::<u8>()) {
        let bytes = encode(&v);
        // Check a handful of cut points (all of them for short encodings).
        let step = (bytes.len() / 64).max(1);
        for cut in (0..bytes.len()).step_by(step) {
            let err = decode(&bytes[..cut]).unwrap_err();
            prop_assert!(matches!(err, DecodeError::Truncated { .. } | DecodeError::LengthExceedsInput { .. }), "cut {cut}: {err:?}");
        }
        let mut longer = bytes.clone();
        longer.push(extra);
        let is_trailing = matches!(decode(&longer), Err(DecodeError::TrailingBytes { .. }));
        prop_assert!(is_trailing);
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..512)) {
        prop_assert!(roundtrip_holds(&data));
        if let Ok(v) = decode(&data) {
            read_all(&v);
        }
    }

    #[test]
    fn readers_never_panic_on_arbitrary_values(v in value()) {
        read_all(&v);
    }

    #[test]
    fn readers_never_panic_on_salt_shaped_maps(
        fields in prop::collection::vec((
            prop::sample::select(vec![
                "cmd", "enc", "load", "version", "id", "nonce", "pub", "token", "aes", "session",
                "sig", "ret", "pub_key", "publish_port", "fun", "arg", "tgt", "jid", "return",
                "serial", "tag", "data", "events", "key", "pillar", "tok", "ts", "grains",
            ]),
            leaf(),
        ), 0..16),
        cmd in prop::sample::select(vec!["_auth", "_return", "_minion_event", "_pillar", "_mine", "ping"]),
    ) {
        let mut entries: Vec<(Value, Value)> = vec![(Value::from("cmd"), Value::from(cmd))];
        entries.extend(fields.into_iter().map(|(k, v)| (Value::from(k), v)));
        read_all(&Value::Map(entries));
    }
}
