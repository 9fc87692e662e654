//! `--out json` as Salt's `json` outputter prints it (`json.dumps(data, indent=4)`, ASCII).

use rmpv::Value;
use salt_render::json_str;

fn scalar(v: &Value, out: &mut String) {
    match v {
        Value::Nil => out.push_str("null"),
        Value::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Integer(i) => out.push_str(&i.to_string()),
        Value::F32(f) => out.push_str(&py_float(f64::from(*f))),
        Value::F64(f) => out.push_str(&py_float(*f)),
        other => json_str(&crate::py_str(other), out),
    }
}

/// Python `repr(float)`: the renderer's one copy.
pub use salt_render::py_float;

fn write(v: &Value, level: usize, out: &mut String) {
    let pad = |n: usize| " ".repeat(4 * n);
    match v {
        Value::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                out.push_str(&pad(level + 1));
                write(item, level + 1, out);
            }
            out.push('\n');
            out.push_str(&pad(level));
            out.push(']');
        }
        Value::Map(entries) if !entries.is_empty() => {
            out.push('{');
            for (i, (k, val)) in entries.iter().enumerate() {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                out.push_str(&pad(level + 1));
                json_str(&crate::py_str(k), out);
                out.push_str(": ");
                write(val, level + 1, out);
            }
            out.push('\n');
            out.push_str(&pad(level));
            out.push('}');
        }
        Value::Array(_) => out.push_str("[]"),
        Value::Map(_) => out.push_str("{}"),
        other => scalar(other, out),
    }
}

/// `json.dumps(v, indent=4)`.
pub fn json_indent(v: &Value) -> String {
    let mut out = String::new();
    write(v, 0, &mut out);
    out
}
