//! Golden vectors produced by real Salt (`scripts/gen-proto-vectors.py`):
//! decoding then re-encoding must reproduce `salt.payload.dumps` byte for byte, and
//! the typed messages must rebuild the same bytes.

#![allow(clippy::unwrap_used)] // tests may unwrap

use salt_proto::msg::{
    AuthReply, AuthRequest, AuthResponse, AuthRet, ErrorReply, EventBody, JobLoad, MineLoad,
    MinionEvent, OutAt, PillarReply, PillarRequest, Ping, PublishPayload, RequestEnvelope,
    RequestMeta, ReturnLoad,
};
use salt_proto::{Value, ValueExt, decode, encode};
use sha2::{Digest, Sha256};

struct Vector {
    name: String,
    wire: Vec<u8>,
    bin: Vec<u8>,
}

fn load() -> (serde_json::Value, Vec<Vector>) {
    let text = include_str!("vectors/payload.json");
    let json: serde_json::Value = serde_json::from_str(text).unwrap();
    let vectors = json["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v.get("hex").is_some())
        .map(|v| Vector {
            name: v["name"].as_str().unwrap().to_owned(),
            wire: hex::decode(v["hex"].as_str().unwrap()).unwrap(),
            bin: hex::decode(v["bin_hex"].as_str().unwrap()).unwrap(),
        })
        .collect();
    (json, vectors)
}

fn vector(name: &str) -> (Value, Vec<u8>) {
    let (_, vs) = load();
    let v = vs.into_iter().find(|v| v.name == name).unwrap();
    (decode(&v.wire).unwrap(), v.wire)
}

#[test]
fn every_vector_reencodes_byte_identically() {
    let (json, vectors) = load();
    assert!(vectors.len() >= 20, "too few vectors");
    println!("vectors from Salt {}", json["salt_version"]);
    for v in &vectors {
        println!("vector {}", v.name);
        let value = decode(&v.wire).unwrap();
        assert_eq!(
            encode(&value),
            v.wire,
            "{}: use_bin_type=False re-encode",
            v.name
        );
        // The use_bin_type=True form (str8, bin) decodes to the same data.
        let from_bin = decode(&v.bin).unwrap();
        assert_eq!(
            encode(&from_bin),
            v.wire,
            "{}: use_bin_type=True re-encode",
            v.name
        );
    }
}

#[test]
fn large_boundaries_match_salt_digest() {
    let (json, _) = load();
    let spec = json["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "large_boundaries")
        .unwrap();
    let nils = |n: usize| Value::Array(vec![Value::Nil; n]);
    let value = Value::Array(vec![
        Value::from("e".repeat(65535)),
        Value::from("f".repeat(65536)),
        nils(65535),
        nils(65536),
        Value::Map(
            (0..65536)
                .map(|i| (Value::from(format!("k{i:05}")), Value::Nil))
                .collect(),
        ),
    ]);
    let bytes = encode(&value);
    assert_eq!(bytes.len() as u64, spec["len"].as_u64().unwrap());
    assert_eq!(
        hex::encode(Sha256::digest(&bytes)),
        spec["sha256"].as_str().unwrap()
    );
    assert_eq!(decode(&bytes).unwrap(), value);
}

#[test]
fn return_load_keeps_every_value_kind() {
    let (v, wire) = vector("return_load");
    let ret = v.get("return").unwrap();
    let bad = ret.get("bytes_invalid_utf8").unwrap();
    assert_eq!(bad.as_bytes().unwrap(), b"\x80\x81\xfe\xffabc");
    assert!(bad.as_text().is_none());
    assert_eq!(
        ret.get("unicode").unwrap().as_text(),
        Some("héllo wörld ✓ 日本語 🧂")
    );
    assert_eq!(
        ret.get("huge").unwrap().as_text(),
        Some("1180591620717411303424")
    );
    let int_keys = ret.get("int_keys").unwrap().as_entries().unwrap();
    assert_eq!(int_keys[0].0, Value::from(1));
    assert_eq!(int_keys[1].0, Value::from(-2));
    let ints = ret.get("ints").unwrap().as_items().unwrap();
    assert_eq!(ints.last().unwrap().as_i64(), Some(i64::MIN));
    assert_eq!(ints[11].as_u64(), Some(u64::MAX));
    match ret.get("when").unwrap() {
        Value::Ext(78, data) => assert_eq!(data, b"20251122T01:23:45.678901"),
        other => panic!("datetime ext: {other:?}"),
    }
    assert!(matches!(ret.get("constant").unwrap(), Value::Ext(79, _)));
    assert!(
        ret.get("floats").unwrap().as_items().unwrap()[4]
            .as_f64()
            .unwrap()
            .is_infinite()
    );

    let typed = ReturnLoad::from_value(&v).unwrap();
    assert_eq!(typed.id, "minion1");
    assert_eq!(typed.jid, "20251122012345678901");
    assert_eq!(typed.fun.as_text(), Some("test.echo"));
    assert!(typed.is_success());
    assert_eq!(encode(&typed.to_value()), wire);

    let mut load = v.clone();
    let meta = RequestMeta::take(&mut load).unwrap();
    assert_eq!(meta.id, "minion1");
    assert_eq!(meta.ts, Some(1763774625));
    assert_eq!(meta.tok.len(), 256);
    assert!(load.get("nonce").is_none() && load.get("tok").is_none());
    assert!(meta.apply(&mut load));
    // nonce and tok come back at the end, as the channel appends them.
    let keys: Vec<_> = load
        .as_entries()
        .unwrap()
        .iter()
        .map(|(k, _)| k.as_text().unwrap())
        .collect();
    assert_eq!(&keys[keys.len() - 3..], ["ts", "nonce", "tok"]);
}

#[test]
fn auth_request_vectors() {
    for name in ["auth_request", "auth_request_autosign"] {
        let (v, wire) = vector(name);
        let RequestEnvelope::Clear(env) = RequestEnvelope::from_value(&v).unwrap() else {
            panic!("{name}: not clear");
        };
        assert_eq!(env.version, 3);
        let auth = AuthRequest::from_value(&env.load).unwrap();
        assert!(auth.pub_key.starts_with("-----BEGIN PUBLIC KEY-----\n"));
        assert!(salt_proto::is_nonce(&auth.nonce));
        let rebuilt = RequestEnvelope::Clear(auth.to_envelope()).to_value();
        assert_eq!(encode(&rebuilt), wire, "{name}");
        if name == "auth_request" {
            assert_eq!(auth.token.as_ref().map(Vec::len), Some(256));
            assert_eq!(auth.enc_algo, "OAEP-SHA1");
        } else {
            assert!(auth.token.is_none());
            assert_eq!(auth.sig_algo, "PKCS1v15-SHA224");
            assert!(
                auth.autosign_grains
                    .unwrap()
                    .get("missing")
                    .unwrap()
                    .is_nil()
            );
        }
    }
}

#[test]
fn auth_reply_vectors() {
    for (name, ret) in [
        ("auth_fail_inner_false", AuthRet::Rejected),
        ("auth_fail_inner_true", AuthRet::Pending),
        ("auth_fail_inner_full", AuthRet::Full),
    ] {
        let (v, wire) = vector(name);
        let reply = AuthReply::from_value(&v).unwrap();
        match &reply {
            AuthReply::Failed(f) => assert_eq!(f.ret, ret, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
        assert!(reply.nonce().is_some());
        assert_eq!(encode(&reply.to_value()), wire, "{name}");
    }

    let (v, wire) = vector("auth_success_inner");
    let reply = AuthReply::from_value(&v).unwrap();
    let AuthReply::Accepted(ok) = &reply else {
        panic!("not accepted")
    };
    assert_eq!(ok.publish_port, 4505);
    assert_eq!(ok.pub_sig.as_deref(), Some(&b"QUJDREVGR0g=\n"[..]));
    assert_eq!(ok.aes.len(), 256);
    assert_eq!(encode(&reply.to_value()), wire);

    let (v, wire) = vector("auth_signed_reply");
    let AuthResponse::Signed(signed) = AuthResponse::from_value(&v).unwrap() else {
        panic!("not signed")
    };
    assert_eq!(signed.sig.len(), 256);
    assert!(matches!(
        AuthReply::from_bytes(&signed.load).unwrap(),
        AuthReply::Accepted(_)
    ));
    assert_eq!(encode(&signed.to_value()), wire);

    let (v, _) = vector("auth_signed_reply_fail");
    let AuthResponse::Signed(signed) = AuthResponse::from_value(&v).unwrap() else {
        panic!("not signed")
    };
    assert!(matches!(
        AuthReply::from_bytes(&signed.load).unwrap(),
        AuthReply::Failed(f) if f.ret == AuthRet::Rejected
    ));

    let (v, wire) = vector("auth_bad_enc_algo");
    let r = AuthResponse::from_value(&v).unwrap();
    assert_eq!(r, AuthResponse::BadEncAlgo);
    assert_eq!(encode(&r.to_value()), wire);

    let (v, wire) = vector("bad_load");
    assert_eq!(ErrorReply::from_value(&v).unwrap(), ErrorReply::BadLoad);
    assert_eq!(encode(&ErrorReply::BadLoad.to_value()), wire);
}

#[test]
fn publish_vectors() {
    let (v, wire) = vector("publish_payload");
    let p = PublishPayload::from_value(&v).unwrap();
    assert_eq!(p.sig_algo.as_deref(), Some("PKCS1v15-SHA1"));
    assert_eq!(encode(&p.to_value()), wire);

    let (v, wire) = vector("job_load");
    let job = JobLoad::from_value(&v).unwrap();
    assert_eq!(job.fun.as_text(), Some("test.ping"));
    assert_eq!(job.serial, Some(1));
    assert_eq!(job.tgt_type(), "glob");
    assert!(job.extra.is_empty());
    assert_eq!(encode(&job.to_value()), wire);
    let mut built = JobLoad::new(
        "test.ping",
        vec![],
        "minion1",
        "20251122012345678901",
        "root",
    );
    built.serial = Some(1);
    assert_eq!(encode(&built.to_value()), wire);

    let (v, wire) = vector("job_load_kwargs");
    let job = JobLoad::from_value(&v).unwrap();
    assert_eq!(job.tgt_type(), "list");
    assert_eq!(job.extra_get("to"), Some(&Value::from(5)));
    assert_eq!(job.arg[1].get("__kwarg__"), Some(&Value::Boolean(true)));
    assert_eq!(encode(&job.to_value()), wire);
}

#[test]
fn request_vectors() {
    let (v, wire) = vector("aes_request");
    let env = RequestEnvelope::from_value(&v).unwrap();
    let RequestEnvelope::Aes(aes) = &env else {
        panic!("not aes")
    };
    assert_eq!(aes.id.as_deref(), Some("minion1"));
    assert_eq!(aes.load.len(), 400);
    assert_eq!(encode(&env.to_value()), wire);

    let (v, wire) = vector("ping_request");
    let RequestEnvelope::Clear(c) = RequestEnvelope::from_value(&v).unwrap() else {
        panic!("not clear")
    };
    assert_eq!(c.load.cmd(), Some("ping"));
    let ping = Ping::from_value(&c.load).unwrap();
    let rebuilt = RequestEnvelope::Clear(salt_proto::msg::ClearRequest::new(ping.to_value()));
    assert_eq!(encode(&rebuilt.to_value()), wire);

    for name in ["minion_event", "minion_event_events"] {
        let (v, wire) = vector(name);
        let ev = MinionEvent::from_value(&v).unwrap();
        match (&ev.body, name) {
            (EventBody::Single { tag, .. }, "minion_event") => {
                assert_eq!(tag, "salt/minion/minion1/start");
                assert!(ev.pretag.is_none());
            }
            (EventBody::Batch(events), "minion_event_events") => {
                assert_eq!(events.len(), 2);
                assert_eq!(events[0].0, "a/b");
            }
            other => panic!("{name}: {other:?}"),
        }
        assert_eq!(encode(&ev.to_value()), wire, "{name}");
    }

    let (v, wire) = vector("pillar_request");
    let p = PillarRequest::from_value(&v).unwrap();
    assert_eq!(p.ver.as_deref(), Some("2"));
    assert!(p.saltenv.is_none());
    assert_eq!(encode(&p.to_value()), wire);

    let (v, wire) = vector("pillar_reply");
    let p = PillarReply::from_value(&v).unwrap();
    assert_eq!(p.pillar.len(), 512);
    assert_eq!(encode(&p.to_value()), wire);

    let (v, wire) = vector("mine_load");
    let m = MineLoad::from_value(&v).unwrap();
    assert_eq!(m.clear, Some(false));
    assert_eq!(encode(&m.to_value()), wire);

    let (v, wire) = vector("return_load_ping");
    let r = ReturnLoad::from_value(&v).unwrap();
    assert_eq!(r.ret, Value::Boolean(true));
    assert_eq!(encode(&r.to_value()), wire);
}

#[test]
fn returns_as_salts_minion_builds_them_round_trip() {
    for (name, out) in [
        ("return_minion_ok", None),
        ("return_minion_missing", Some(OutAt::AfterRetcode)),
        ("return_minion_error", Some(OutAt::BeforeRetcode)),
    ] {
        let (v, wire) = vector(name);
        let r = ReturnLoad::from_value(&v).unwrap();
        assert_eq!(r.out.as_ref().map(|(_, at)| *at), out, "{name}");
        assert_eq!(r.out(), out.map(|_| "nested"), "{name}");
        assert_eq!(r.extra.len(), 1, "{name}: only `user` is extra");
        assert_eq!(encode(&r.to_value()), wire, "{name}");
        let ids = ReturnLoad::ids(&v).unwrap();
        assert_eq!((ids.jid, ids.id), ("20251122012345678901", "minion1"));
    }
    // `out` anywhere else (an `__outputter__` hint, appended last) stays in `extra`.
    let (v, wire) = vector("return_load");
    let r = ReturnLoad::from_value(&v).unwrap();
    assert!(r.out.is_none());
    assert_eq!(r.out(), Some("nested"));
    assert_eq!(encode(&r.to_value()), wire);
    assert!(ReturnLoad::ids(&vector("minion_event").0).is_err());
}
