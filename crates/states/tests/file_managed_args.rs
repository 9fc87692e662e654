//! `file.managed`'s `contents_pillar` and `contents_grains` write what Salt writes (its
//! arguments are walked against Salt's signature by `state_args.rs`).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use rmpv::Value;
use salt_compat::map_get;
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
