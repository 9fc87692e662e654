//! Malformed input: every decoder and every `from_value` returns an error — never
//! panics — on truncated frames, oversized length claims, wrong types and deep nesting.

#![allow(clippy::unwrap_used)] // tests may unwrap

use salt_proto::fuzzing::{decode_any, read_all};
use salt_proto::msg::{
    AuthReply, AuthRequest, AuthResponse, ErrorReply, InvalidMessage, JobLoad, MineLoad,
    MinionEvent, PillarData, PillarReply, PillarRequest, PillarSignedData, Ping, PublishPayload,
    RequestEnvelope, RequestMeta, ReturnLoad, SignedClearReply,
};
use salt_proto::{DecodeError, MapBuilder, Value, decode, encode};

fn wire_vectors() -> Vec<(String, Vec<u8>)> {
    let json: serde_json::Value =
        serde_json::from_str(include_str!("vectors/payload.json")).unwrap();
    json["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| {
            Some((
                v["name"].as_str()?.to_owned(),
                hex::decode(v.get("hex")?.as_str()?).unwrap(),
            ))
        })
        .collect()
}

type BytesReader = fn(&[u8]) -> bool;

/// Every reader that takes raw bytes.
const BYTES_READERS: &[(&str, BytesReader)] = &[
    ("RequestEnvelope", |b| {
        RequestEnvelope::from_bytes(b).is_ok()
    }),
    ("AuthResponse", |b| AuthResponse::from_bytes(b).is_ok()),
    ("AuthReply", |b| AuthReply::from_bytes(b).is_ok()),
    ("PublishPayload", |b| PublishPayload::from_bytes(b).is_ok()),
    ("JobLoad", |b| JobLoad::from_bytes(b).is_ok()),
    ("PillarReply", |b| PillarReply::from_bytes(b).is_ok()),
    ("PillarData", |b| PillarData::from_bytes(b).is_ok()),
];

type ValueReader = fn(&Value) -> Result<(), InvalidMessage>;

/// Every `from_value`.
const VALUE_READERS: &[(&str, ValueReader)] = &[
    ("RequestEnvelope", |v| {
        RequestEnvelope::from_value(v).map(drop)
    }),
    ("AuthRequest", |v| AuthRequest::from_value(v).map(drop)),
    ("AuthResponse", |v| AuthResponse::from_value(v).map(drop)),
    ("SignedClearReply", |v| {
        SignedClearReply::from_value(v).map(drop)
    }),
    ("AuthReply", |v| AuthReply::from_value(v).map(drop)),
    ("PublishPayload", |v| {
        PublishPayload::from_value(v).map(drop)
    }),
    ("JobLoad", |v| JobLoad::from_value(v).map(drop)),
    ("ReturnLoad", |v| ReturnLoad::from_value(v).map(drop)),
    ("MinionEvent", |v| MinionEvent::from_value(v).map(drop)),
    ("PillarRequest", |v| PillarRequest::from_value(v).map(drop)),
    ("PillarReply", |v| PillarReply::from_value(v).map(drop)),
    ("PillarSignedData", |v| {
        PillarSignedData::from_value(v).map(drop)
    }),
    ("PillarData", |v| PillarData::from_value(v).map(drop)),
    ("Ping", |v| Ping::from_value(v).map(drop)),
    ("MineLoad", |v| MineLoad::from_value(v).map(drop)),
    ("RequestMeta", |v| {
        RequestMeta::take(&mut v.clone()).map(drop)
    }),
];

#[test]
fn truncated_frames_are_errors_everywhere() {
    for (name, wire) in wire_vectors() {
        for cut in 0..wire.len() {
            let prefix = &wire[..cut];
            assert!(decode(prefix).is_err(), "{name} cut at {cut} decoded");
            assert!(decode_any(prefix).is_none());
            for (reader, read) in BYTES_READERS {
                assert!(!read(prefix), "{reader} accepted {name} cut at {cut}");
            }
        }
    }
}

#[test]
fn oversized_length_claims_are_refused_without_allocating() {
    let claims: &[&[u8]] = &[
        &[0xdb, 0xff, 0xff, 0xff, 0xff, b'a'],       // str32
        &[0xda, 0xff, 0xff],                         // str16
        &[0xd9, 0xff],                               // str8
        &[0xc6, 0xff, 0xff, 0xff, 0xff],             // bin32
        &[0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0, 0xc0], // array32
        &[0xdc, 0xff, 0xff, 0xc0],                   // array16
        &[0xdf, 0xff, 0xff, 0xff, 0xff, 0xc0, 0xc0], // map32
        &[0xde, 0x80, 0x00, 0xc0, 0xc0],             // map16
        &[0xc9, 0xff, 0xff, 0xff, 0xff, 0x01],       // ext32
        // Nested: a map whose value claims 2^32-1 elements.
        &[0x81, 0xa1, b'k', 0xdd, 0xff, 0xff, 0xff, 0xff],
    ];
    for c in claims {
        let err = decode(c).unwrap_err();
        assert!(
            matches!(err, DecodeError::LengthExceedsInput { .. }),
            "{c:02x?}: {err:?}"
        );
        for (reader, read) in BYTES_READERS {
            assert!(!read(c), "{reader} accepted {c:02x?}");
        }
    }
    // A map of N entries needs at least 2N bytes.
    assert!(matches!(
        decode(&[0x82, 0xc0, 0xc0, 0xc0]),
        Err(DecodeError::LengthExceedsInput { claimed: 2, .. })
    ));
}

#[test]
fn deep_nesting_is_refused_without_overflowing_the_stack() {
    for open in [0x91u8, 0xdc] {
        // 100k levels of [[[[...]]]] (fixarray or array16 headers).
        let mut deep = Vec::new();
        for _ in 0..100_000 {
            deep.push(open);
            if open == 0xdc {
                deep.extend_from_slice(&[0, 1]);
            }
        }
        deep.push(0xc0);
        assert!(matches!(
            decode(&deep),
            Err(DecodeError::TooDeep { max: 64, .. })
        ));
    }
    let mut maps = Vec::new();
    for _ in 0..100_000 {
        maps.extend_from_slice(&[0x81, 0xa1, b'k']);
    }
    maps.push(0xc0);
    assert!(matches!(decode(&maps), Err(DecodeError::TooDeep { .. })));
    for (reader, read) in BYTES_READERS {
        assert!(!read(&maps), "{reader} accepted deep maps");
    }
}

#[test]
fn non_maps_are_refused_by_every_reader() {
    let shapes = [
        Value::Nil,
        Value::from(3),
        Value::from("bad load"),
        Value::Binary(vec![0xff; 8]),
        Value::Array(vec![Value::from("enc"), Value::from("clear")]),
        Value::Map(vec![]),
        Value::Map(vec![(Value::from(1), Value::from(2))]),
    ];
    for v in &shapes {
        for (reader, read) in VALUE_READERS {
            assert!(read(v).is_err(), "{reader} accepted {v:?}");
        }
    }
    // Only ErrorReply accepts a bare string, and not bytes that aren't UTF-8.
    assert!(ErrorReply::from_value(&Value::from("bad load")).is_ok());
    assert!(ErrorReply::from_value(&Value::Binary(vec![0xff; 8])).is_err());
}

#[test]
fn wrong_field_types_are_named() {
    let auth = MapBuilder::new()
        .str("cmd", "_auth")
        .insert("id", 42)
        .str("nonce", "n")
        .str("pub", "p")
        .build();
    assert_eq!(
        AuthRequest::from_value(&auth),
        Err(InvalidMessage::WrongType {
            msg: "AuthRequest",
            field: "id",
            expected: "text"
        })
    );
    let wrong_cmd = MapBuilder::new().str("cmd", "_return").build();
    assert!(matches!(
        AuthRequest::from_value(&wrong_cmd),
        Err(InvalidMessage::BadValue { field: "cmd", .. })
    ));
    let env = MapBuilder::new()
        .str("enc", "aes")
        .insert("load", Value::Map(vec![]))
        .build();
    assert!(matches!(
        RequestEnvelope::from_value(&env),
        Err(InvalidMessage::WrongType { field: "load", .. })
    ));
    let env = MapBuilder::new()
        .str("enc", "rot13")
        .insert("load", Value::Map(vec![]))
        .build();
    assert!(matches!(
        RequestEnvelope::from_value(&env),
        Err(InvalidMessage::BadValue { field: "enc", .. })
    ));
    let env = MapBuilder::new().str("enc", "clear").build();
    assert!(matches!(
        RequestEnvelope::from_value(&env),
        Err(InvalidMessage::MissingField { field: "load", .. })
    ));
    let ok = MapBuilder::new()
        .str("pub_key", "k")
        .insert("publish_port", 70000)
        .bytes("aes", b"a")
        .bytes("session", b"s")
        .build();
    assert!(matches!(
        AuthReply::from_value(&ok),
        Err(InvalidMessage::BadValue {
            field: "publish_port",
            ..
        })
    ));
    let job = MapBuilder::new()
        .str("fun", "test.ping")
        .str("arg", "not a list")
        .str("tgt", "*")
        .str("jid", "1")
        .build();
    assert!(matches!(
        JobLoad::from_value(&job),
        Err(InvalidMessage::WrongType { field: "arg", .. })
    ));
    let ev = MapBuilder::new()
        .str("cmd", "_minion_event")
        .str("id", "m")
        .insert("events", Value::Array(vec![Value::from(1)]))
        .build();
    assert!(matches!(
        MinionEvent::from_value(&ev),
        Err(InvalidMessage::WrongType {
            field: "events",
            ..
        })
    ));
    // Optional fields: nil counts as absent, but a present value must have the type.
    let mine = MapBuilder::new()
        .str("cmd", "_mine")
        .insert("data", Value::Map(vec![]))
        .str("id", "m")
        .str("clear", "yes")
        .build();
    assert!(matches!(
        MineLoad::from_value(&mine),
        Err(InvalidMessage::WrongType { field: "clear", .. })
    ));
    // Undecodable bytes are reported as such.
    assert!(matches!(
        RequestEnvelope::from_bytes(&[0xc1]),
        Err(InvalidMessage::Decode {
            msg: "RequestEnvelope",
            source: DecodeError::ReservedMarker { offset: 0 }
        })
    ));
}

#[test]
fn mutated_vectors_never_panic() {
    // Deterministic mutation pass over every golden frame: flip, drop and insert bytes.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut decoded = 0usize;
    for (_, wire) in wire_vectors() {
        if wire.is_empty() {
            continue;
        }
        for _ in 0..300 {
            let mut m = wire.clone();
            for _ in 0..(1 + next() % 4) {
                let i = (next() as usize) % m.len().max(1);
                match next() % 3 {
                    0 if !m.is_empty() => m[i] ^= 1 << (next() % 8),
                    1 if m.len() > 1 => {
                        m.remove(i);
                    }
                    _ => m.insert(i, next() as u8),
                }
            }
            if let Some(v) = decode_any(&m) {
                decoded += 1;
                assert_eq!(decode(&encode(&v)).map(|v2| encode(&v2)), Ok(encode(&v)));
                read_all(&v);
            }
        }
    }
    assert!(decoded > 0, "mutations should sometimes stay decodable");
}
