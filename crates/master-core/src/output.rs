//! Outputters for the `salt` command, after Salt's `nested`, `json`, `yaml` and `txt`.
//!
//! Data arrives as JSON values (the local socket speaks JSON). Maps print with sorted keys
//! like Salt's nested outputter does for plain dicts. No colours: output is meant to be
//! read by people and scripts alike.

use serde_json::Value;

/// Output format chosen with `--out`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutputFormat {
    /// Salt's default: indented tree.
    Nested,
    /// JSON with 4-space indentation.
    Json,
    /// Block-style YAML.
    Yaml,
    /// `id: line` per line of string returns.
    Txt,
}

impl OutputFormat {
    /// Parse an `--out` value.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "nested" => Some(Self::Nested),
            "json" => Some(Self::Json),
            "yaml" => Some(Self::Yaml),
            "txt" => Some(Self::Txt),
            _ => None,
        }
    }
}

/// Render `data` (normally `{minion_id: return}`) in `format`. No trailing newline.
pub fn render(format: OutputFormat, data: &Value) -> String {
    match format {
        OutputFormat::Nested => {
            let mut lines = Vec::new();
            nested(data, 0, "", &mut lines);
            lines.join("\n")
        }
        OutputFormat::Json => json_pretty(data),
        OutputFormat::Yaml => {
            let mut out = String::new();
            yaml(data, 0, &mut out);
            out.trim_end_matches('\n').to_owned()
        }
        OutputFormat::Txt => txt(data),
    }
}

/// Python-style scalar rendering (`True`, `None`, `1.5`).
fn py_scalar(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|_| n.is_f64()) {
                if f.fract() == 0.0 && f.is_finite() && f.abs() < 1e16 {
                    format!("{f:.1}")
                } else {
                    format!("{f}")
                }
            } else {
                n.to_string()
            }
        }
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn nested(v: &Value, indent: usize, prefix: &str, out: &mut Vec<String>) {
    let pad = " ".repeat(indent);
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => {
            out.push(format!("{pad}{prefix}{}", py_scalar(v)));
        }
        Value::String(s) => {
            // str.splitlines(): an empty string prints nothing.
            for (i, line) in s.lines().enumerate() {
                let p = if i == 0 {
                    prefix.to_owned()
                } else {
                    " ".repeat(prefix.len())
                };
                out.push(format!("{pad}{p}{line}"));
            }
        }
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::Array(_) | Value::Object(_) => {
                        out.push(format!("{pad}|_"));
                        let p = if item.is_object() { "" } else { "- " };
                        nested(item, indent + 2, p, out);
                    }
                    _ => nested(item, indent, "- ", out),
                }
            }
        }
        Value::Object(map) => {
            if indent > 0 {
                out.push(format!("{pad}----------"));
            }
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for key in keys {
                out.push(format!("{pad}{prefix}{key}:"));
                if let Some(val) = map.get(key) {
                    nested(val, indent + 4, "", out);
                }
            }
        }
    }
}

fn json_pretty(v: &Value) -> String {
    use serde::Serialize;
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    if v.serialize(&mut ser).is_err() {
        return "{}".into();
    }
    String::from_utf8(buf).unwrap_or_else(|_| "{}".into())
}

fn txt(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(map) => {
            for (key, value) in map {
                match value {
                    Value::String(s) => {
                        for line in s.lines() {
                            out.push_str(&format!("{key}: {line}\n"));
                        }
                    }
                    other => out.push_str(&format!("{key}: {}\n", py_repr(other))),
                }
            }
        }
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        other => {
            out.push_str(&py_repr(other));
            out.push('\n');
        }
    }
    out.trim_end_matches('\n').to_owned()
}

/// Python `repr`-like rendering of nested data (for `txt`).
fn py_repr(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        Value::Array(items) => {
            format!(
                "[{}]",
                items.iter().map(py_repr).collect::<Vec<_>>().join(", ")
            )
        }
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("'{k}': {}", py_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => py_scalar(other),
    }
}

fn yaml_scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => yaml_str(s),
        Value::Array(a) if a.is_empty() => "[]".into(),
        Value::Object(m) if m.is_empty() => "{}".into(),
        _ => String::new(),
    }
}

fn yaml_str(s: &str) -> String {
    let plain = !s.is_empty()
        && !s.starts_with([
            ' ', '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"',
            '%', '@', '`',
        ])
        && !s.ends_with(' ')
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.contains('\n')
        && !s.chars().any(char::is_control)
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "~" | "y" | "n"
        )
        && s.parse::<f64>().is_err();
    if plain {
        s.to_owned()
    } else {
        serde_json::to_string(s).unwrap_or_default()
    }
}

fn yaml(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(map) if !map.is_empty() => {
            for (k, val) in map {
                match val {
                    Value::Object(m) if !m.is_empty() => {
                        out.push_str(&format!("{pad}{}:\n", yaml_str(k)));
                        yaml(val, indent + 2, out);
                    }
                    Value::Array(a) if !a.is_empty() => {
                        out.push_str(&format!("{pad}{}:\n", yaml_str(k)));
                        yaml(val, indent, out);
                    }
                    _ => out.push_str(&format!("{pad}{}: {}\n", yaml_str(k), yaml_scalar(val))),
                }
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                match item {
                    Value::Object(m) if !m.is_empty() => {
                        let mut sub = String::new();
                        yaml(item, indent + 2, &mut sub);
                        let sub = sub.trim_start().to_owned();
                        out.push_str(&format!("{pad}- {sub}"));
                    }
                    Value::Array(a) if !a.is_empty() => {
                        out.push_str(&format!("{pad}-\n"));
                        yaml(item, indent + 2, out);
                    }
                    _ => out.push_str(&format!("{pad}- {}\n", yaml_scalar(item))),
                }
            }
        }
        other => out.push_str(&format!("{pad}{}\n", yaml_scalar(other))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_like_salt() {
        assert_eq!(
            render(OutputFormat::Nested, &json!({"m1": true})),
            "m1:\n    True"
        );
        assert_eq!(
            render(OutputFormat::Nested, &json!({"m1": "hi\nthere"})),
            "m1:\n    hi\n    there"
        );
        let data = json!({"m1": {"b": 1, "a": [1, "x", {"k": null}], "c": 1.5}});
        let expected = "m1:\n    ----------\n    a:\n        - 1\n        - x\n        |_\n          ----------\n          k:\n              None\n    b:\n        1\n    c:\n        1.5";
        assert_eq!(render(OutputFormat::Nested, &data), expected);
    }

    #[test]
    fn json_yaml_txt() {
        assert_eq!(
            render(OutputFormat::Json, &json!({"m1": true})),
            "{\n    \"m1\": true\n}"
        );
        assert_eq!(render(OutputFormat::Yaml, &json!({"m1": true})), "m1: true");
        assert_eq!(render(OutputFormat::Yaml, &json!({"m1": "hi"})), "m1: hi");
        assert_eq!(
            render(OutputFormat::Yaml, &json!({"m1": "true"})),
            "m1: \"true\""
        );
        assert_eq!(
            render(OutputFormat::Yaml, &json!({"m1": {"a": [1, 2]}})),
            "m1:\n  a:\n  - 1\n  - 2"
        );
        assert_eq!(
            render(OutputFormat::Txt, &json!({"m1": "a\nb"})),
            "m1: a\nm1: b"
        );
        assert_eq!(render(OutputFormat::Txt, &json!({"m1": true})), "m1: True");
    }
}
