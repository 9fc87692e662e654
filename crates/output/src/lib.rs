//! salt-output: Salt's outputters for the command-line tools (`salt`, `salt-run`, and the
//! minion's `salt-call`): `nested`, `json`, `yaml`, `txt`, `raw` and [`highstate`], byte for
//! byte as Salt's (golden tests run Salt's own outputters from the venv).
//!
//! [`ordered`]: the same outputters over insertion-ordered data (`salt-key`'s listings, whose
//! `json`/`txt`/`raw` keep Salt's dict order), plus salt-key's `key` outputter.
//!
//! Data arrives as JSON values (the local socket speaks JSON). Maps print with sorted keys
//! like Salt's nested outputter does for plain dicts. Salt's colours when asked for.

#![cfg_attr(test, allow(clippy::unwrap_used))]

use salt_compat::{py_json_repr, py_json_str};
use serde_json::Value;

pub mod highstate;
pub mod ordered;

/// Output format chosen with `--out`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// Salt's default: indented tree.
    Nested,
    /// JSON with 4-space indentation.
    Json,
    /// Block-style YAML.
    Yaml,
    /// `id: line` per line of string returns.
    Txt,
    /// Python `repr` of the whole return, as Salt's `raw` outputter prints it.
    Raw,
    /// Salt's state results (`highstate`, see [`highstate`]).
    Highstate,
}

impl OutputFormat {
    /// Parse an `--out` value.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "nested" => Some(Self::Nested),
            "json" => Some(Self::Json),
            "yaml" => Some(Self::Yaml),
            "txt" => Some(Self::Txt),
            "raw" => Some(Self::Raw),
            "highstate" => Some(Self::Highstate),
            _ => None,
        }
    }
}

/// Salt's terminal colours for the `nested` outputter (`salt.utils.color.get_colors`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Palette {
    /// `None`, booleans and numbers (`LIGHT_YELLOW`).
    scalar: &'static str,
    /// Strings and list markers (`GREEN`).
    string: &'static str,
    /// Keys and `----------` (`CYAN`).
    key: &'static str,
    /// `ENDC`.
    end: &'static str,
}

pub(crate) const NO_COLOUR: Palette = Palette {
    scalar: "",
    string: "",
    key: "",
    end: "",
};

pub(crate) const SALT_COLOURS: Palette = Palette {
    scalar: "\x1b[0;1;33m",
    string: "\x1b[0;32m",
    key: "\x1b[0;36m",
    end: "\x1b[0;0m",
};

/// Render `data` (normally `{minion_id: return}`) in `format`. No trailing newline.
pub fn render(format: OutputFormat, data: &Value) -> String {
    render_colour(format, data, false)
}

/// [`render`], with Salt's terminal colours in `nested` when `colour` is set (the `salt`
/// command does so on a terminal, or with `--force-color`; never with `--no-color`).
pub fn render_colour(format: OutputFormat, data: &Value, colour: bool) -> String {
    match format {
        OutputFormat::Nested => {
            let mut lines = Vec::new();
            let palette = if colour { SALT_COLOURS } else { NO_COLOUR };
            nested(data, 0, "", &mut lines, &palette);
            lines.join("\n")
        }
        OutputFormat::Json => render_json(data, Some(4)),
        // `salt.utils.yaml.safe_dump(data, default_flow_style=False)` (maps from the wire are
        // plain dicts: sorted).
        OutputFormat::Yaml => {
            salt_render::yaml_dump::safe_dump(&salt_compat::json::json_to_msgpack(data), false)
        }
        OutputFormat::Txt => txt(data),
        OutputFormat::Raw => py_json_repr(data),
        OutputFormat::Highstate => highstate::render(
            data,
            &highstate::Options {
                colour,
                ..Default::default()
            },
        ),
    }
}

/// Salt's `NestDisplay.display` (retcode 0): each line is `indent, colour, prefix, text,
/// end, suffix` as its `ustring` builds it.
pub(crate) fn nested(v: &Value, indent: usize, prefix: &str, out: &mut Vec<String>, c: &Palette) {
    let pad = " ".repeat(indent);
    let end = c.end;
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => {
            out.push(format!("{pad}{}{prefix}{}{end}", c.scalar, py_json_str(v)));
        }
        Value::String(s) => {
            // str.splitlines(): an empty string prints nothing.
            for (i, line) in s.lines().enumerate() {
                let p = if i == 0 {
                    prefix.to_owned()
                } else {
                    " ".repeat(prefix.len())
                };
                out.push(format!("{pad}{}{p}{line}{end}", c.string));
            }
        }
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::Array(_) | Value::Object(_) => {
                        out.push(format!("{pad}{}|_{end}", c.string));
                        let p = if item.is_object() { "" } else { "- " };
                        nested(item, indent + 2, p, out, c);
                    }
                    _ => nested(item, indent, "- ", out, c),
                }
            }
        }
        Value::Object(map) => {
            if indent > 0 {
                out.push(format!("{pad}{}----------{end}", c.key));
            }
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for key in keys {
                out.push(format!("{pad}{}{prefix}{key}{end}:", c.key));
                if let Some(val) = map.get(key) {
                    nested(val, indent + 4, "", out, c);
                }
            }
        }
    }
}

/// JSON as Salt's `json` outputter prints it with `--out-indent N`: `Some(n)` indents by
/// `n` spaces, `None` (a negative `--out-indent`) is one line with Python's separators
/// (`salt.utils.json.dumps`: key order kept, non-ASCII kept).
pub fn render_json(data: &Value, indent: Option<usize>) -> String {
    let opts = salt_render::JsonOpts {
        indent,
        ..salt_render::JsonOpts::SALT
    };
    salt_render::py_json(&salt_compat::json::json_to_msgpack(data), opts)
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
                    other => out.push_str(&format!("{key}: {}\n", py_json_repr(other))),
                }
            }
        }
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        other => {
            out.push_str(&py_json_repr(other));
            out.push('\n');
        }
    }
    out.trim_end_matches('\n').to_owned()
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

    /// Compare our `nested` and `raw` bytes with Salt's own outputters from the venv.
    #[test]
    fn nested_and_raw_match_salt_golden() {
        let Some(venv) = salt_testkit::require(salt_testkit::salt_venv("3007.17")) else {
            return;
        };
        let python = venv.join("bin/python");
        let script = "import json,sys\nimport salt.output.nested as n, salt.output.raw as r\n\
            import salt.output.yaml_out as y, salt.output.json_out as j\n\
            n.__opts__={'color':False,'nested_indent':0}\nr.__opts__={}\ny.__opts__={}\nj.__opts__={}\n\
            d=json.loads(sys.argv[1])\n\
            plain=n.output(d)\nn.__opts__={'color':True,'nested_indent':0}\n\
            sys.stdout.write(plain+'\\x00'+r.output(d)+'\\x00'+n.output(d)\n\
            +'\\x00'+y.output(d)+'\\x00'+j.output(d))\n";
        let cases = [
            json!({"m1": true, "m2": false}),
            json!({"m1": "hi", "m2": "multi\nline\nstring"}),
            json!({"m1": {"b": 1, "a": [1, "x", {"k": null}], "c": 1.5, "s": "l1\nl2", "e": "", "l": [[1, 2]]}}),
            json!({"m1": {"outer": {"inner": {"deep": "v", "n": 3}}, "list": ["a", "b"]}}),
            json!({"m1": ["x", "y"], "m2": {"it's": "q'uote"}}),
            json!({"m1": {"yes": "no", "n": "null", "f": 1e16, "u": "é ü", "e": [], "d": {},
                "long": "word ".repeat(30), "ml": "l1\nl2\n", "lead": " x", "colon": "a: b"}}),
        ];
        for data in cases {
            let out = std::process::Command::new(&python)
                .arg("-c")
                .arg(script)
                .arg(data.to_string())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8(out.stdout).unwrap();
            let mut parts = text.split('\0');
            let (nested, raw, coloured, yaml, json) = (
                parts.next().unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
            );
            // (The CLIs print the text with a newline of their own.)
            assert_eq!(
                render(OutputFormat::Yaml, &data),
                yaml.trim_end(),
                "yaml for {data}"
            );
            assert_eq!(render(OutputFormat::Json, &data), json, "json for {data}");
            assert_eq!(
                render_colour(OutputFormat::Nested, &data, true),
                coloured,
                "coloured nested for {data}"
            );
            assert_eq!(
                render(OutputFormat::Nested, &data),
                nested,
                "nested for {data}"
            );
            assert_eq!(render(OutputFormat::Raw, &data), raw, "raw for {data}");
        }
    }

    #[test]
    fn json_out_indent() {
        let d = json!({"m1": {"a": [1, true]}});
        assert_eq!(render_json(&d, None), "{\"m1\": {\"a\": [1, true]}}");
        assert_eq!(
            render_json(&d, Some(2)),
            "{\n  \"m1\": {\n    \"a\": [\n      1,\n      true\n    ]\n  }\n}"
        );
        assert_eq!(render_json(&d, Some(4)), render(OutputFormat::Json, &d));
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
            "m1: 'true'"
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
