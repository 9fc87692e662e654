//! Python's `json.dumps` over msgpack values, the one writer of Salt's JSON text: the `json`
//! and `tojson` filters, `salt-call --out json` and `salt-run state.event`.

use std::cmp::Ordering;

use rmpv::Value;

/// The `json.dumps` keyword arguments Salt passes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JsonOpts {
    /// `sort_keys=True`.
    pub sort_keys: bool,
    /// `ensure_ascii=True`: Python's default, which `salt.utils.json.dumps` turns off.
    pub ensure_ascii: bool,
    /// `indent=N`: one item per line, N spaces per level, `","` between items; `None`: one
    /// line, `", "` between items.
    pub indent: Option<usize>,
}

impl JsonOpts {
    /// `salt.utils.json.dumps(v)`: unsorted, non-ASCII kept, one line.
    pub const SALT: JsonOpts = JsonOpts {
        sort_keys: false,
        ensure_ascii: false,
        indent: None,
    };
}

/// `json.dumps(v, **opts)`.
pub fn dumps(v: &Value, opts: JsonOpts) -> String {
    let mut out = String::new();
    write(v, opts, 0, &mut out);
    out
}

/// A float as `json.dumps` writes it: `repr`, and `NaN`, `Infinity`, `-Infinity`.
pub fn py_float(f: f64) -> String {
    if f.is_nan() {
        "NaN".to_owned()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
    } else {
        salt_compat::py_float_repr(f)
    }
}

fn newline(opts: JsonOpts, level: usize, out: &mut String) {
    if let Some(n) = opts.indent {
        out.push('\n');
        out.push_str(&" ".repeat(n * level));
    }
}

fn write(v: &Value, opts: JsonOpts, level: usize, out: &mut String) {
    let sep = if opts.indent.is_some() { "," } else { ", " };
    match v {
        Value::Nil => out.push_str("null"),
        Value::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Integer(i) => out.push_str(&i.to_string()),
        Value::F32(f) => out.push_str(&py_float(f64::from(*f))),
        Value::F64(f) => out.push_str(&py_float(*f)),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Map(entries) if entries.is_empty() => out.push_str("{}"),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                newline(opts, level + 1, out);
                write(item, opts, level + 1, out);
            }
            newline(opts, level, out);
            out.push(']');
        }
        Value::Map(entries) => {
            let mut items: Vec<&(Value, Value)> = entries.iter().collect();
            if opts.sort_keys {
                items.sort_by(|(a, _), (b, _)| key_order(a, b));
            }
            out.push('{');
            for (i, (k, val)) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                newline(opts, level + 1, out);
                string(&key_text(k), opts.ensure_ascii, out);
                out.push_str(": ");
                write(val, opts, level + 1, out);
            }
            newline(opts, level, out);
            out.push('}');
        }
        other => string(&salt_compat::py_str(other), opts.ensure_ascii, out),
    }
}

/// A dict key as `json.dumps` converts it: numbers as their JSON text, `true`, `null`.
fn key_text(k: &Value) -> String {
    match k {
        Value::Nil => "null".to_owned(),
        Value::Boolean(b) => b.to_string(),
        Value::Integer(i) => i.to_string(),
        Value::F32(f) => py_float(f64::from(*f)),
        Value::F64(f) => py_float(*f),
        other => salt_compat::py_str(other),
    }
}

/// `sorted()` of the keys: numbers by value, strings by code point.
fn key_order(a: &Value, b: &Value) -> Ordering {
    let num = |v: &Value| match v {
        Value::Integer(i) => i.as_f64(),
        Value::F32(f) => Some(f64::from(*f)),
        Value::F64(f) => Some(*f),
        _ => None,
    };
    match (num(a), num(b)) {
        (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        _ => salt_compat::py_str(a).cmp(&salt_compat::py_str(b)),
    }
}

/// A JSON string: `\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, other controls as `\u00XX`;
/// with `ensure_ascii` also DEL and non-ASCII as `\uXXXX` (UTF-16 units).
fn string(s: &str, ensure_ascii: bool, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ensure_ascii && (c as u32) > 0x7e) => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Value {
        Value::Map(vec![
            ("b".into(), "é ü <a> & 'q' \"d\" \u{7f}\u{1}\n😀".into()),
            (
                "a".into(),
                Value::Array(vec![
                    1.into(),
                    2.5.into(),
                    Value::Nil,
                    true.into(),
                    Value::Array(vec![]),
                    Value::Map(vec![]),
                ]),
            ),
            (
                "n".into(),
                Value::Map(vec![
                    (Value::from(10), 1e16.into()),
                    (Value::from(9), 1e-5.into()),
                ]),
            ),
        ])
    }

    /// The same values through the venv's `json.dumps`.
    #[test]
    fn matches_python() {
        let Some(python) = crate::venv_python() else {
            return;
        };
        let script = r#"
import json, sys
d = {'b': 'é ü <a> & \'q\' "d" \x7f\x01\n😀', 'a': [1, 2.5, None, True, [], {}], 'n': {10: 1e16, 9: 1e-5}}
out = []
for sk in (False, True):
    for ea in (False, True):
        for ind in (None, 0, 2):
            out.append(json.dumps(d, sort_keys=sk, ensure_ascii=ea, indent=ind))
sys.stdout.write('\x00'.join(out))
"#;
        let got = std::process::Command::new(&python)
            .arg("-c")
            .arg(script)
            .output()
            .unwrap();
        assert!(
            got.status.success(),
            "{}",
            String::from_utf8_lossy(&got.stderr)
        );
        let want = String::from_utf8(got.stdout).unwrap();
        let mut ours = Vec::new();
        for sort_keys in [false, true] {
            for ensure_ascii in [false, true] {
                for indent in [None, Some(0), Some(2)] {
                    let opts = JsonOpts {
                        sort_keys,
                        ensure_ascii,
                        indent,
                    };
                    ours.push(dumps(&sample(), opts));
                }
            }
        }
        for (o, w) in ours.iter().zip(want.split('\0')) {
            assert_eq!(o, w);
        }
        assert_eq!(ours.len(), want.split('\0').count());
    }

    #[test]
    fn floats_and_keys() {
        assert_eq!(py_float(f64::NAN), "NaN");
        assert_eq!(py_float(f64::NEG_INFINITY), "-Infinity");
        let m = Value::Map(vec![(Value::Nil, 1.into()), (true.into(), 1e20.into())]);
        assert_eq!(dumps(&m, JsonOpts::SALT), r#"{"null": 1, "true": 1e+20}"#);
    }
}
