//! The master event bus's framing against bytes from real Salt 3006.30, 3007.17 and 3008.5
//! (`scripts/gen-ipc-golden.py`): our `pack_event` and `frame` write what Salt writes, and
//! `FrameReader` + `unpack_event` read what a real `fire_event` sent.

#![allow(clippy::unwrap_used)] // tests may unwrap

use salt_proto::ipc::{FrameReader, PubFraming, frame, pack_event, unpack_event};
use salt_proto::{Value, ValueExt};

const VECTORS: [(&str, &str); 3] = [
    ("3006.30", include_str!("vectors/ipc-3006.30.json")),
    ("3007.17", include_str!("vectors/ipc-3007.17.json")),
    ("3008.5", include_str!("vectors/ipc-3008.5.json")),
];

fn bytes(v: &serde_json::Value, key: &str) -> Vec<u8> {
    hex::decode(v[key].as_str().unwrap()).unwrap()
}

#[test]
fn pack_and_pub_frames_are_salts_bytes() {
    for (version, text) in VECTORS {
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let data = salt_compat::json::json_to_msgpack(&v["data"]);
        let body = pack_event(v["tag"].as_str().unwrap(), &data);
        assert_eq!(
            hex::encode(&body),
            v["pack"].as_str().unwrap(),
            "{version} pack"
        );
        let framing = match v["pub_framing"].as_str().unwrap() {
            "tcp" => PubFraming::Tcp,
            _ => PubFraming::Ipc,
        };
        assert_eq!(
            frame(framing, &body),
            bytes(&v, "pub"),
            "{version} pub frame"
        );
    }
}

#[test]
fn a_real_fire_event_reads_back_whole_and_in_pieces() {
    for (version, text) in VECTORS {
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let wire = bytes(&v, "pull");
        for chunk in [1, 7, wire.len()] {
            let mut r = FrameReader::new();
            let mut got = Vec::new();
            for piece in wire.chunks(chunk) {
                r.feed(piece).unwrap();
                while let Some(b) = r.next_body().unwrap() {
                    got.push(b);
                }
            }
            assert_eq!(got.len(), 1, "{version} chunk {chunk}");
            let (tag, data) = unpack_event(&got[0]).unwrap();
            assert_eq!(tag, "myco/custom/event", "{version}");
            let text = |k: &str| data.get(k).and_then(ValueExt::as_text).map(str::to_owned);
            assert_eq!(text("long").map(|s| s.len()), Some(40), "{version}");
            assert_eq!(
                data.get("neg").and_then(Value::as_i64),
                Some(-70000),
                "{version}"
            );
            assert_eq!(
                text("unicode").as_deref(),
                Some("h\u{e9}llo \u{2603}"),
                "{version}"
            );
            assert!(text("_stamp").is_some(), "{version}: {data:?}");
            assert!(matches!(data.get("none"), Some(Value::Nil)), "{version}");
        }
        // The pub frames read back too (a reader of either form).
        let mut r = FrameReader::new();
        r.feed(&bytes(&v, "pub")).unwrap();
        assert_eq!(
            r.next_body().unwrap().unwrap(),
            bytes(&v, "pack"),
            "{version}"
        );
    }
}
