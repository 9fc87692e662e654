//! No state function argument is ignored: for every state function salt-rs registers
//! (`mods::REGISTRY`), every argument of Salt's signature
//! (`tests/data/salt-state-signatures.json`, from `scripts/gen-salt-signatures.py` over
//! `inspect.signature`) is honoured, refused by name, or one of the state engine's own
//! keywords; a refused one given with a value other than Salt's default fails the state
//! naming it (before the function runs), and Salt's default passes.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use rmpv::Value;
use salt_compat::map_get;
use salt_states::compile::STATE_INTERNAL_KEYWORDS;
use salt_states::mods::{REGISTRY, args};
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
        "/tests/data/salt-state-signatures.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn every_argument_of_salts_signatures_is_honoured_or_refused() {
    let g = golden();
    let funcs = g["functions"].as_object().unwrap();
    let mut missing = Vec::new();
    for (full, policy) in REGISTRY {
        let Some(params) = funcs.get(*full).and_then(|p| p.as_array()) else {
            panic!("{full} is not in the golden signatures: rerun scripts/gen-salt-signatures.py");
        };
        for p in params {
            let name = p["name"].as_str().unwrap();
            if policy.honoured.contains(&name) {
                continue;
            }
            let Some((_, default)) = policy.refused.iter().find(|(a, _)| *a == name) else {
                if !STATE_INTERNAL_KEYWORDS.contains(&name) {
                    missing.push(format!("{full}:{name}"));
                }
                continue;
            };
            // Salt's default changes nothing.
            let dflt = salt_compat::json::json_to_msgpack(&p["default"]);
            assert!(
                default.matches(&dflt),
                "{full} {name}: {default:?} vs {dflt}"
            );
            let low = salt_states::map(vec![(name, dflt)]);
            assert_eq!(
                args::refused(full, policy, &low, false),
                None,
                "{full} {name}"
            );
            // Anything else is refused by name, before the function runs.
            let other = match &p["default"] {
                serde_json::Value::Bool(b) => Value::Boolean(!b),
                _ => Value::from("something-else"),
            };
            let opts = Opts {
                test: !policy.apply_only.contains(&name),
                ..Opts::default()
            };
            let kw = vec![
                (
                    "name".to_owned(),
                    Value::from("/nonexistent/salt-rs-sigwalk"),
                ),
                (name.to_owned(), other),
            ];
            let out = single(Arc::new(NoFiles), &opts, full, &kw).unwrap();
            let Value::Map(mut m) = out else {
                panic!("{full}: {out}")
            };
            let r = m.remove(0).1;
            assert_eq!(
                map_get(&r, "result"),
                Some(&Value::Boolean(false)),
                "{full} {name}: {r}"
            );
            let comment = map_get(&r, "comment").and_then(Value::as_str).unwrap_or("");
            assert!(comment.contains(&format!("'{name}'")), "{full} {name}: {r}");
        }
        for a in policy.honoured {
            assert!(
                params.iter().any(|p| p["name"] == *a),
                "{full}: honoured {a} is not an argument of Salt's"
            );
        }
    }
    assert!(
        missing.is_empty(),
        "arguments of Salt {} neither honoured nor refused: {missing:?}",
        g["salt"]
    );
}

/// `args::NO_KWARGS` is the set of registered functions whose Salt signature has no
/// `**kwargs`; a keyword outside their signature fails the state as Salt's `format_call`
/// does, naming it, and one inside (or the engine's own) does not.
#[test]
fn functions_without_kwargs_refuse_other_keywords_as_salt_does() {
    let g = golden();
    let salts: Vec<&str> = g["no_kwargs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .filter(|f| REGISTRY.iter().any(|(n, _)| n == f))
        .collect();
    assert_eq!(args::NO_KWARGS, salts.as_slice());
    let (_, policy) = REGISTRY.iter().find(|(n, _)| *n == "file.touch").unwrap();
    let low = salt_states::map(vec![
        ("name", Value::from("/tmp/x")),
        ("makedirs", Value::Boolean(true)),
        ("require", Value::Array(vec![])),
        ("bogus", Value::from(1)),
    ]);
    assert_eq!(
        args::invalid_keywords("file.touch", policy, &low).as_deref(),
        Some("'bogus' is an invalid keyword argument for 'file.touch'")
    );
    let low = salt_states::map(vec![
        ("name", Value::from("/tmp/x")),
        ("bogus", Value::from(1)),
        ("other", Value::from(2)),
    ]);
    assert_eq!(
        args::invalid_keywords("file.touch", policy, &low).as_deref(),
        Some("'bogus' and 'other' are invalid keyword arguments for 'file.touch'")
    );
    let (_, policy) = REGISTRY.iter().find(|(n, _)| *n == "file.managed").unwrap();
    assert_eq!(args::invalid_keywords("file.managed", policy, &low), None);
}
