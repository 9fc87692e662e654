//! No `file.managed` argument is ignored: every argument of Salt's signature
//! (`tests/data/file-managed-args.json`, from `scripts/gen-file-managed-args.py` over
//! `inspect.signature(salt.states.file.managed)`) is honoured or refused by name; a refused
//! one given with a value other than Salt's default fails the state naming it.
//! `contents_pillar` and `contents_grains` write what Salt writes.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use rmpv::Value;
use salt_compat::map_get;
use salt_states::mods::file_args::{APPLY_ONLY, HONOURED, REFUSED};
use salt_states::{FileClient, Opts, single};

struct NoFiles;

impl FileClient for NoFiles {
    fn get_file(&self, _path: &str, _saltenv: &str) -> Result<Option<Vec<u8>>, String> {
        Ok(None)
    }
    fn envs(&self) -> Vec<String> {
        vec!["base".into()]
    }
}

fn golden() -> serde_json::Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/file-managed-args.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn run(opts: &Opts, kwargs: Vec<(&str, Value)>) -> Value {
    let kw: Vec<(String, Value)> = kwargs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    let out = single(Arc::new(NoFiles), opts, "file.managed", &kw).unwrap();
    match out {
        Value::Map(mut m) => m.remove(0).1,
        other => panic!("{other}"),
    }
}

fn json_mp(v: &serde_json::Value) -> Value {
    salt_compat::json::json_to_msgpack(v)
}

#[test]
fn every_argument_of_salts_signature_is_honoured_or_refused() {
    let g = golden();
    let params = g["params"].as_array().unwrap();
    assert!(params.len() > 40, "{g}");
    let mut missing = Vec::new();
    for p in params {
        let name = p["name"].as_str().unwrap();
        if HONOURED.contains(&name) {
            continue;
        }
        match REFUSED.iter().find(|(a, _)| *a == name) {
            None => missing.push(name.to_owned()),
            Some(_) => {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("f");
                let opts = Opts {
                    test: true,
                    ..Opts::default()
                };
                // Salt's default changes nothing; anything else is refused by name.
                let dflt = run(
                    &opts,
                    vec![
                        ("name", Value::from(path.to_str().unwrap())),
                        ("contents", Value::from("x")),
                        (name, json_mp(&p["default"])),
                    ],
                );
                assert_ne!(
                    map_get(&dflt, "result"),
                    Some(&Value::Boolean(false)),
                    "{name}: {dflt}"
                );
                let other = match &p["default"] {
                    serde_json::Value::Bool(b) => Value::Boolean(!b),
                    _ => Value::from("something-else"),
                };
                // Those Salt reads only on a real apply are refused there.
                let apply = Opts {
                    test: !APPLY_ONLY.contains(&name),
                    ..Opts::default()
                };
                let r = run(
                    &apply,
                    vec![
                        ("name", Value::from(path.to_str().unwrap())),
                        ("contents", Value::from("x")),
                        (name, other),
                    ],
                );
                assert_eq!(
                    map_get(&r, "result"),
                    Some(&Value::Boolean(false)),
                    "{name}: {r}"
                );
                let comment = map_get(&r, "comment").and_then(Value::as_str).unwrap_or("");
                assert!(comment.contains(&format!("'{name}'")), "{name}: {r}");
            }
        }
    }
    assert!(
        missing.is_empty(),
        "file.managed arguments of Salt {} neither honoured nor refused: {missing:?}",
        g["salt"]
    );
    for (a, _) in REFUSED {
        assert!(
            params.iter().any(|p| p["name"] == *a),
            "{a} is not an argument of Salt's file.managed"
        );
    }
}

#[test]
fn contents_pillar_and_grains_write_what_salt_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("motd");
    let p = path.to_str().unwrap();
    let opts = Opts {
        pillar: json_mp(&serde_json::json!({"motd": {"text": "hello\nworld"}, "l": ["a", "b"]})),
        grains: json_mp(&serde_json::json!({"os": "Debian"})),
        ..Opts::default()
    };
    let test = Opts {
        test: true,
        ..opts.clone()
    };
    let r = run(
        &test,
        vec![
            ("name", Value::from(p)),
            ("contents_pillar", Value::from("motd:text")),
        ],
    );
    assert_eq!(map_get(&r, "result"), Some(&Value::Nil), "{r}");
    assert!(!path.exists());
    let r = run(
        &opts,
        vec![
            ("name", Value::from(p)),
            ("contents_pillar", Value::from("motd:text")),
        ],
    );
    assert_eq!(map_get(&r, "result"), Some(&Value::Boolean(true)), "{r}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\nworld\n");
    let r = run(
        &test,
        vec![
            ("name", Value::from(p)),
            ("contents_pillar", Value::from("motd:text")),
        ],
    );
    assert_eq!(map_get(&r, "result"), Some(&Value::Boolean(true)), "{r}");

    let r = run(
        &opts,
        vec![
            ("name", Value::from(p)),
            ("contents_pillar", Value::from("motd/text")),
            ("contents_delimiter", Value::from("/")),
            ("contents_newline", Value::Boolean(false)),
        ],
    );
    assert_eq!(map_get(&r, "result"), Some(&Value::Boolean(true)), "{r}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\nworld");

    run(
        &opts,
        vec![
            ("name", Value::from(p)),
            ("contents_grains", Value::from("os")),
        ],
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "Debian\n");
    run(
        &opts,
        vec![
            ("name", Value::from(p)),
            (
                "contents_pillar",
                Value::Array(vec![Value::from("l:0"), Value::from("l:1")]),
            ),
        ],
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\nb\n");

    let r = run(
        &opts,
        vec![
            ("name", Value::from(p)),
            ("contents_pillar", Value::from("nope")),
        ],
    );
    assert_eq!(
        map_get(&r, "comment").and_then(Value::as_str),
        Some("Pillar nope does not exist")
    );
    let r = run(
        &opts,
        vec![
            ("name", Value::from(p)),
            ("contents", Value::from("a")),
            ("contents_pillar", Value::from("motd")),
        ],
    );
    assert_eq!(
        map_get(&r, "comment").and_then(Value::as_str),
        Some("Only one of 'contents', 'contents_pillar', and 'contents_grains' is permitted")
    );
}
