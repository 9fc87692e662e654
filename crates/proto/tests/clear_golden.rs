//! The clear-command reader on loads built by Salt 3007.17's own clients
//! (`golden/clear_loads.json`, from `scripts/gen-clear-loads.py`: `LocalClient.pub`,
//! `salt.auth.Resolver`, `RunnerClient`/`WheelClient.cmd_sync`), and on hostile ones.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::PathBuf;

use rmpv::Value;
use salt_proto::clear::{AuthKind, ClearCommand, EauthFields, Funs, MAX_CLEAR_REQUEST};
use serde_json::Value as Js;

fn golden() -> Js {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/clear_loads.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn check_auth(auth: &EauthFields, want: &Js, name: &str) {
    let kind = match auth.kind() {
        AuthKind::Token => "token",
        AuthKind::Eauth => "eauth",
        AuthKind::User => "user",
    };
    assert_eq!(kind, want["auth_kind"], "{name}");
    assert_eq!(auth.password.is_some(), want["has_password"], "{name}");
}

#[test]
fn reads_what_salts_clients_send() {
    let g = golden();
    let cases = g["cases"].as_array().unwrap();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let want = &case["expect"];
        let bytes = hex::decode(case["hex"].as_str().unwrap()).unwrap();
        let cmd = ClearCommand::decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(cmd.name(), want["cmd"], "{name}");
        match &cmd {
            ClearCommand::Publish(p) => {
                let funs: Js = match &p.fun {
                    Funs::One(f) => Js::from(f.as_str()),
                    Funs::Compound(fs) => Js::from(fs.clone()),
                };
                assert_eq!(funs, want["fun"], "{name}");
                let tgt = salt_compat::json::msgpack_to_json(&p.tgt);
                assert_eq!(tgt, want["tgt"], "{name}");
                assert_eq!(p.tgt_type, want["tgt_type"], "{name}");
                assert_eq!(p.user, want["user"], "{name}");
                assert_eq!(p.key.is_some(), want["has_key"], "{name}");
                assert_eq!(
                    p.arg.len() as u64,
                    want["arg_len"].as_u64().unwrap(),
                    "{name}"
                );
                let jid = want["jid"].as_str().unwrap();
                assert_eq!(p.jid.as_deref(), (!jid.is_empty()).then_some(jid), "{name}");
                check_auth(&p.auth, want, name);
                if let Some(user) = want.get("username") {
                    assert_eq!(p.auth.username.as_deref(), user.as_str(), "{name}");
                }
            }
            ClearCommand::MkToken(f) => {
                check_auth(f, want, name);
                assert_eq!(f.eauth.as_deref(), want["eauth"].as_str(), "{name}");
                assert_eq!(f.username.as_deref(), want["username"].as_str(), "{name}");
            }
            ClearCommand::GetToken(t) => assert!(t.is_some(), "{name}"),
            ClearCommand::Runner(c) | ClearCommand::Wheel(c) => {
                assert_eq!(c.fun, want["fun"], "{name}");
                check_auth(&c.auth, want, name);
                if let Some(kwarg) = want.get("kwarg") {
                    assert_eq!(
                        salt_compat::json::msgpack_to_json(&c.kwarg),
                        *kwarg,
                        "{name}"
                    );
                }
            }
            ClearCommand::Unknown(cmd) => assert_eq!(cmd, want["cmd"].as_str().unwrap()),
            ClearCommand::Ping | ClearCommand::Auth => {}
            other => panic!("{name}: unexpected {other:?}"),
        }
    }
    println!("{} loads from Salt {}", cases.len(), g["salt_version"]);
    // A secret (password, token, key) never shows in Debug output.
    for case in cases {
        let bytes = hex::decode(case["hex"].as_str().unwrap()).unwrap();
        let shown = format!("{:?}", ClearCommand::decode(&bytes).unwrap());
        for secret in ["s3cr3t", "abababab", "R00tK3y"] {
            assert!(!shown.contains(secret), "{}: {shown}", case["name"]);
        }
    }
}

#[test]
fn hostile_loads_are_refused_without_panicking() {
    let map = |kv: Vec<(&str, Value)>| {
        Value::Map(kv.into_iter().map(|(k, v)| (Value::from(k), v)).collect())
    };
    let bad = [
        Value::Nil,
        Value::Array(vec![]),
        map(vec![("cmd", Value::from(1))]),
        map(vec![("cmd", Value::from("publish"))]),
        map(vec![
            ("cmd", Value::from("publish")),
            ("tgt", Value::from(1)),
            ("fun", Value::from("test.ping")),
            ("arg", Value::Array(vec![])),
            ("user", Value::from("root")),
        ]),
        map(vec![
            ("cmd", Value::from("publish")),
            ("tgt", Value::from("*")),
            ("fun", Value::from("test.ping")),
            ("arg", Value::from("notalist")),
            ("user", Value::from("root")),
        ]),
        map(vec![("cmd", Value::from("runner"))]),
        map(vec![
            ("cmd", Value::from("wheel")),
            ("fun", Value::from("key.list_all")),
            ("kwarg", Value::from(3)),
        ]),
        map(vec![
            ("cmd", Value::from("mk_token")),
            ("password", Value::from("p".repeat(10_000).as_str())),
        ]),
    ];
    for v in &bad {
        assert!(ClearCommand::from_load(v).is_err(), "{v}");
    }
    // Oversized input is refused before decoding.
    let mut huge = vec![0xc5, 0xff, 0xff];
    huge.resize(MAX_CLEAR_REQUEST + 10, b'a');
    assert!(ClearCommand::decode(&huge).is_err());
    // Truncations of a real load never panic.
    let g = golden();
    for case in g["cases"].as_array().unwrap() {
        let bytes = hex::decode(case["hex"].as_str().unwrap()).unwrap();
        for n in 0..bytes.len() {
            let _ = ClearCommand::decode(&bytes[..n]);
        }
    }
}
