//! `salt_render::args` against Salt's own `yamlify_arg` and `parse_input`: the golden table
//! `golden/yamlify.json` is written by `scripts/gen-yamlify-golden.py` in a Salt venv
//! (3006.30, 3007.17 and 3008.5 give the same table).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rmpv::Value;
use salt_render::args::{parse_input, yamlify_arg};
use serde_json::{Value as Js, json};

/// Our value in the generator's typed form (`{"i": ..}`, `{"f": ..}`, `{"m": [[k, v], ..]}`).
fn typed(v: &Value) -> Js {
    match v {
        Value::Nil => Js::Null,
        Value::Boolean(b) => json!(b),
        Value::String(s) => json!(s.as_str().expect("utf-8")),
        Value::Integer(i) => json!({"i": i.to_string()}),
        Value::F64(f) => json!({"f": salt_compat::py_float_repr(*f)}),
        Value::F32(f) => json!({"f": salt_compat::py_float_repr(f64::from(*f))}),
        Value::Array(a) => Js::Array(a.iter().map(typed).collect()),
        Value::Map(m) => {
            json!({"m": m.iter().map(|(k, v)| json!([typed(k), typed(v)])).collect::<Vec<_>>()})
        }
        Value::Binary(_) => json!({"other": "bytes"}),
        Value::Ext(..) => json!({"other": "ext"}),
    }
}

/// Salt's value is a Python int beyond 64 bits, which no msgpack (Salt's wire) carries.
fn beyond_64_bits(v: &Js) -> bool {
    v.get("i")
        .and_then(Js::as_str)
        .is_some_and(|i| i.parse::<i64>().is_err() && i.parse::<u64>().is_err())
}

/// Salt's answer with its beyond-64-bit ints as the text ours keeps.
fn as_ours(v: &Js) -> Js {
    match v {
        v if beyond_64_bits(v) => v["i"].clone(),
        Js::Array(a) => Js::Array(a.iter().map(as_ours).collect()),
        Js::Object(o) => Js::Object(o.iter().map(|(k, v)| (k.clone(), as_ours(v))).collect()),
        other => other.clone(),
    }
}

fn golden() -> Js {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/yamlify.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn yamlify_arg_as_salt() {
    let g = golden();
    let mut bad = Vec::new();
    let mut n = 0;
    for case in g["yamlify"].as_array().unwrap() {
        let arg = case[0].as_str().unwrap();
        let want = &case[1];
        let got = typed(&yamlify_arg(arg));
        if beyond_64_bits(want) {
            // Python keeps the big int (and Salt's msgpack then cannot send it); ours keeps
            // the text.
            assert_eq!(got, json!(arg), "{arg:?}");
            continue;
        }
        n += 1;
        if &got != want {
            bad.push(format!("{arg:?}: Salt {want}, ours {got}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {n} differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
    assert!(n > 100, "golden table too small: {n}");
}

#[test]
fn parse_input_as_salt() {
    let g = golden();
    let mut bad = Vec::new();
    for case in g["parse_input"].as_array().unwrap() {
        let args: Vec<String> = serde_json::from_value(case[0].clone()).unwrap();
        let no_parse: Vec<String> = serde_json::from_value(case[1].clone()).unwrap();
        let got = Js::Array(parse_input(&args, &no_parse).iter().map(typed).collect());
        if got != as_ours(&case[2]) {
            bad.push(format!(
                "{args:?} {no_parse:?}: Salt {}, ours {got}",
                case[2]
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
