//! Salt's outputters over insertion-ordered data, as `salt-key` uses them: `key` (the
//! default), `nested`, `json`, `yaml`, `txt`, `raw`/`pprint`. (The crate root renders
//! `serde_json` values, whose maps are sorted: `salt`, `salt-run`, `salt-call`.) Byte-for-byte what Salt 3007 prints for the data shapes
//! `salt-key` produces (maps of lists of ids, maps of maps of strings, `{"return": ...}`).
//!
//! Colors follow `salt.utils.color.get_colors`: used when stdout is a terminal, or with
//! `--force-color`; never with `--no-color`.

use std::fmt::Write as _;

use salt_compat::py_str_repr;

/// The data an outputter prints: the subset of Python values `salt-key` returns. Maps keep
/// insertion order (Python dicts do); outputters that sort (key, nested, yaml) sort.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Val {
    /// `True`/`False`.
    Bool(bool),
    /// A string.
    Str(String),
    /// A list of strings (key ids).
    List(Vec<String>),
    /// A dict in insertion order.
    Map(Vec<(String, Val)>),
}

impl Val {
    /// `{"return": value}`, how `salt-key` wraps non-dict results (gen-keys, gen-signature).
    pub fn ret(v: Val) -> Val {
        Val::Map(vec![("return".to_owned(), v)])
    }
}

/// ANSI colors of `salt.utils.color.get_colors` (empty strings when colors are off).
#[derive(Clone, Copy, Debug)]
pub struct Colors {
    on: bool,
}

impl Colors {
    /// Colors on or off.
    pub fn new(on: bool) -> Self {
        Self { on }
    }
    fn c(self, code: &'static str) -> &'static str {
        if self.on { code } else { "" }
    }
    fn endc(self) -> &'static str {
        self.c("\x1b[0;0m")
    }
    fn green(self) -> &'static str {
        self.c("\x1b[0;32m")
    }
    fn light_green(self) -> &'static str {
        self.c("\x1b[0;1;32m")
    }
    fn red(self) -> &'static str {
        self.c("\x1b[0;31m")
    }
    fn light_red(self) -> &'static str {
        self.c("\x1b[0;1;31m")
    }
    fn blue(self) -> &'static str {
        self.c("\x1b[0;34m")
    }
    fn light_blue(self) -> &'static str {
        self.c("\x1b[0;1;34m")
    }
    fn magenta(self) -> &'static str {
        self.c("\x1b[0;35m")
    }
    fn light_magenta(self) -> &'static str {
        self.c("\x1b[0;1;35m")
    }
}

/// Which outputter, from `--out`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outputter {
    /// `salt.output.key` (salt-key's default).
    Key,
    /// `salt.output.nested`.
    Nested,
    /// `salt.output.json_out`.
    Json,
    /// `salt.output.yaml_out`.
    Yaml,
    /// `salt.output.txt`.
    Txt,
    /// `salt.output.raw` (Python `str()` of the data).
    Raw,
}

impl Outputter {
    /// Parse an `--out` name; `None` for names Salt does not know (it then logs an error
    /// and falls back to nested).
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "key" => Self::Key,
            "nested" | "" => Self::Nested,
            "json" => Self::Json,
            "yaml" => Self::Yaml,
            "txt" | "text" => Self::Txt,
            "raw" | "pprint" => Self::Raw,
            _ => return None,
        })
    }
}

/// Options that shape the rendering.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    /// Colors on.
    pub color: bool,
    /// `--out-indent` (json: negative means one line; yaml: negative means flow style).
    pub indent: Option<i64>,
}

/// Render `data` as `salt.output.try_printout` does: the outputter's text, right-stripped.
/// The key outputter falls back to nested for data it cannot show (as Salt's KeyError
/// fallback does). An empty result means "print nothing".
pub fn render(data: &Val, out: Outputter, style: Style) -> String {
    let colors = Colors::new(style.color);
    let text = match out {
        Outputter::Key => key(data, colors).unwrap_or_else(|| nested(data, colors)),
        Outputter::Nested => nested(data, colors),
        Outputter::Json => json(data, style.indent),
        Outputter::Yaml => yaml(data, style.indent),
        Outputter::Txt => txt(data),
        Outputter::Raw => py_repr(data),
    };
    text.trim_end().to_owned()
}

// ---------------------------------------------------------------- key

fn status_heading(status: &str, c: Colors) -> Option<(String, &'static str)> {
    let (title, hc, ic) = match status {
        "minions_pre" => ("Unaccepted Keys:", c.light_red(), c.red()),
        "minions" => ("Accepted Keys:", c.light_green(), c.green()),
        "minions_denied" => ("Denied Keys:", c.light_magenta(), c.magenta()),
        "minions_rejected" => ("Rejected Keys:", c.light_blue(), c.blue()),
        "local" => ("Local Keys:", c.light_magenta(), c.magenta()),
        _ => return None,
    };
    Some((format!("{hc}{title}{}", c.endc()), ic))
}

/// `salt.output.key`: `None` when the data is not a map of known statuses.
fn key(data: &Val, c: Colors) -> Option<String> {
    let Val::Map(entries) = data else {
        return None;
    };
    let mut sorted: Vec<&(String, Val)> = entries.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut ret = String::new();
    for (status, v) in sorted {
        let (heading, ic) = status_heading(status, c)?;
        ret.push_str(&heading);
        ret.push('\n');
        match v {
            Val::List(ids) => {
                let mut ids: Vec<&String> = ids.iter().collect();
                ids.sort();
                for id in ids {
                    let _ = writeln!(ret, "{ic}{}{}", strip_esc(id), c.endc());
                }
            }
            Val::Map(m) => {
                let mut m: Vec<&(String, Val)> = m.iter().collect();
                m.sort_by(|a, b| a.0.cmp(&b.0));
                for (id, val) in m {
                    let _ = writeln!(ret, "{ic}{}:  {}{}", strip_esc(id), py_str(val), c.endc());
                }
            }
            _ => return None,
        }
    }
    Some(ret)
}

/// `salt.output.strip_esc_sequence`.
fn strip_esc(s: &str) -> String {
    s.replace('\x1b', "?")
}

/// Python `str(value)` for a leaf.
fn py_str(v: &Val) -> String {
    match v {
        Val::Str(s) => s.clone(),
        other => py_repr(other),
    }
}

// ---------------------------------------------------------------- nested

/// The crate's `nested` outputter (it sorts maps, so insertion order does not matter here),
/// with escape characters in values made harmless as `salt-key` does.
fn nested(data: &Val, c: Colors) -> String {
    let palette = if c.on {
        crate::SALT_COLOURS
    } else {
        crate::NO_COLOUR
    };
    let mut out = Vec::new();
    crate::nested(&to_json(data), 0, "", &mut out, &palette);
    out.join("\n")
}

/// `v` as the crate root's data, values through [`strip_esc`].
fn to_json(v: &Val) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Val::Bool(b) => Value::Bool(*b),
        Val::Str(s) => Value::String(strip_esc(s)),
        Val::List(items) => {
            Value::Array(items.iter().map(|s| Value::String(strip_esc(s))).collect())
        }
        Val::Map(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
    }
}

/// Python `str.splitlines()` for the line breaks that occur in key files.
fn py_splitlines(s: &str) -> Vec<&str> {
    let mut v: Vec<&str> = s
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    if s.ends_with('\n') || s.is_empty() {
        v.pop();
    }
    v
}

// ---------------------------------------------------------------- json

fn json(data: &Val, indent: Option<i64>) -> String {
    // Salt: no --out-indent -> indent=4; negative -> one line.
    let indent = match indent {
        None => Some(4usize),
        Some(i) if i < 0 => None,
        Some(i) => Some(usize::try_from(i).unwrap_or(4)),
    };
    let mut s = String::new();
    json_val(data, indent, 0, &mut s);
    s
}

fn json_str(s: &str, out: &mut String) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn json_seq<T>(
    items: &[T],
    open: char,
    close: char,
    indent: Option<usize>,
    level: usize,
    out: &mut String,
    mut each: impl FnMut(&T, &mut String),
) {
    if items.is_empty() {
        out.push(open);
        out.push(close);
        return;
    }
    out.push(open);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
            if indent.is_none() {
                out.push(' ');
            }
        }
        if let Some(n) = indent {
            out.push('\n');
            out.push_str(&" ".repeat(n * (level + 1)));
        }
        each(item, out);
    }
    if let Some(n) = indent {
        out.push('\n');
        out.push_str(&" ".repeat(n * level));
    }
    out.push(close);
}

fn json_val(v: &Val, indent: Option<usize>, level: usize, out: &mut String) {
    match v {
        Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Val::Str(s) => json_str(s, out),
        Val::List(items) => json_seq(items, '[', ']', indent, level, out, |s, o| json_str(s, o)),
        Val::Map(m) => json_seq(m, '{', '}', indent, level, out, |(k, val), o| {
            json_str(k, o);
            o.push_str(": ");
            json_val(val, indent, level + 1, o);
        }),
    }
}

// ---------------------------------------------------------------- yaml

fn yaml(data: &Val, indent: Option<i64>) -> String {
    let mut s = String::new();
    if matches!(indent, Some(i) if i < 0) {
        yaml_flow(data, &mut s);
        s.push('\n');
    } else {
        yaml_block(data, 0, &mut s);
    }
    s
}

fn yaml_flow(v: &Val, out: &mut String) {
    match v {
        Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Val::Str(s) => out.push_str(&yaml_scalar(s, 0)),
        Val::List(items) => {
            out.push('[');
            for (i, s) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&yaml_scalar(s, 0));
            }
            out.push(']');
        }
        Val::Map(m) => {
            let mut m: Vec<&(String, Val)> = m.iter().collect();
            m.sort_by(|a, b| a.0.cmp(&b.0));
            out.push('{');
            for (i, (k, val)) in m.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&yaml_scalar(k, 0));
                out.push_str(": ");
                yaml_flow(val, out);
            }
            out.push('}');
        }
    }
}

/// PyYAML `safe_dump(default_flow_style=False)`: sorted keys, mappings indented by 2,
/// sequences not indented under their key.
fn yaml_block(v: &Val, level: usize, out: &mut String) {
    let pad = " ".repeat(level);
    match v {
        Val::Map(m) if m.is_empty() => out.push_str("{}\n"),
        Val::List(l) if l.is_empty() => out.push_str("[]\n"),
        Val::Bool(b) => {
            out.push_str(if *b { "true" } else { "false" });
            out.push('\n');
        }
        Val::Str(s) => {
            out.push_str(&yaml_scalar(s, level));
            out.push('\n');
        }
        Val::List(items) => {
            for s in items {
                let _ = writeln!(out, "{pad}- {}", yaml_scalar(s, level + 2));
            }
        }
        Val::Map(m) => {
            let mut m: Vec<&(String, Val)> = m.iter().collect();
            m.sort_by(|a, b| a.0.cmp(&b.0));
            for (k, val) in m {
                let _ = write!(out, "{pad}{}:", yaml_scalar(k, level));
                match val {
                    Val::Map(inner) if !inner.is_empty() => {
                        out.push('\n');
                        yaml_block(val, level + 2, out);
                    }
                    Val::List(inner) if !inner.is_empty() => {
                        out.push('\n');
                        yaml_block(val, level, out);
                    }
                    Val::Str(s) => {
                        let _ = writeln!(out, " {}", yaml_scalar(s, level));
                    }
                    _ => {
                        out.push(' ');
                        yaml_block(val, level + 2, out);
                    }
                }
            }
        }
    }
}

/// Whether PyYAML's resolver would read `s` as something other than a string.
fn yaml_implicit(s: &str) -> bool {
    use std::sync::OnceLock;
    static RE: OnceLock<Option<regex::Regex>> = OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(concat!(
            r"^(?:",
            r"yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF",
            r"|~|null|Null|NULL|<<|=",
            r"|[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+",
            r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+",
            r"|[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?",
            r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
            r"|[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]",
            r"|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?",
            r")$"
        ))
        .ok()
    });
    s.is_empty() || re.as_ref().is_some_and(|r| r.is_match(s))
}

/// A scalar as PyYAML writes it: plain when it can be, else single-quoted (line breaks
/// folded the way PyYAML folds them; continuation lines indented by `level + 2`), else
/// double-quoted for control characters.
fn yaml_scalar(s: &str, level: usize) -> String {
    let needs_double = s
        .chars()
        .any(|c| (c.is_control() && c != '\n') || c == '\u{feff}');
    if needs_double {
        let mut o = String::new();
        json_str(s, &mut o);
        return o;
    }
    let first = s.chars().next();
    let plain_ok = !yaml_implicit(s)
        && !s.contains('\n')
        && !s.starts_with(' ')
        && !s.ends_with(' ')
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.ends_with(':')
        && !matches!(
            first,
            Some(
                ',' | '['
                    | ']'
                    | '{'
                    | '}'
                    | '#'
                    | '&'
                    | '*'
                    | '!'
                    | '|'
                    | '>'
                    | '\''
                    | '"'
                    | '%'
                    | '@'
                    | '`'
            )
        )
        && !((s.starts_with('-') || s.starts_with('?') || s.starts_with(':'))
            && (s.len() == 1 || s[1..].starts_with(' ')));
    if plain_ok {
        return s.to_owned();
    }
    let escaped = s.replace('\'', "''");
    if !escaped.contains('\n') {
        return format!("'{escaped}'");
    }
    let cont = " ".repeat(level + 2);
    let mut o = String::from("'");
    let parts: Vec<&str> = escaped.split('\n').collect();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            o.push_str("\n\n");
            o.push_str(&cont);
        }
        o.push_str(part);
    }
    o.push('\'');
    o
}

// ---------------------------------------------------------------- txt / raw

fn txt(data: &Val) -> String {
    let mut ret = String::new();
    match data {
        Val::Map(m) => {
            for (k, v) in m {
                match v {
                    Val::Str(s) => {
                        for line in py_splitlines(s) {
                            let _ = writeln!(ret, "{k}: {line}");
                        }
                    }
                    other => {
                        let _ = writeln!(ret, "{k}: {}", py_repr(other));
                    }
                }
            }
        }
        Val::Str(s) => {
            ret.push_str(s);
            ret.push('\n');
        }
        other => {
            ret.push_str(&py_repr(other));
            ret.push('\n');
        }
    }
    ret
}

/// Python `repr()`.
pub fn py_repr(v: &Val) -> String {
    match v {
        Val::Bool(b) => (if *b { "True" } else { "False" }).to_owned(),
        Val::Str(s) => py_str_repr(s),
        Val::List(l) => format!(
            "[{}]",
            l.iter()
                .map(|s| py_str_repr(s))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Val::Map(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}: {}", py_str_repr(k), py_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
