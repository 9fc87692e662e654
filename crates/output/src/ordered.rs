//! Salt's outputters over insertion-ordered data, as `salt-key` uses them: `key` (the
//! default), `nested`, `json`, `yaml`, `txt`, `raw`/`pprint`. (The crate root renders
//! `serde_json` values, whose maps are sorted: `salt`, `salt-run`, `salt-call`.) Byte-for-byte what Salt 3007 prints for the data shapes
//! `salt-key` produces (maps of lists of ids, maps of maps of strings, `{"return": ...}`).
//!
//! Colors follow `salt.utils.color.get_colors`: used when stdout is a terminal, or with
//! `--force-color`; never with `--no-color`.

use std::fmt::Write as _;

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
    let mut text = text;
    text.truncate(text.trim_end().len());
    text
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
                ids.sort_unstable();
                ret.reserve(ids.iter().map(|id| id.len() + 1).sum());
                for id in ids {
                    ret.push_str(ic);
                    ret.push_str(&strip_esc(id));
                    ret.push_str(c.endc());
                    ret.push('\n');
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
fn strip_esc(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains('\x1b') {
        s.replace('\x1b', "?").into()
    } else {
        s.into()
    }
}

/// Python `str(value)` for a leaf.
fn py_str(v: &Val) -> String {
    salt_compat::py_json_str(&json_of(v, str::to_owned))
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
    crate::nested(
        &json_of(data, |s| strip_esc(s).into_owned()),
        0,
        "",
        &mut out,
        &palette,
    );
    out.join("\n")
}

/// `v` as JSON, every text passed through `text` (`strip_esc` for the `nested` outputter).
fn json_of(v: &Val, text: fn(&str) -> String) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Val::Bool(b) => Value::Bool(*b),
        Val::Str(s) => Value::String(text(s)),
        Val::List(items) => Value::Array(items.iter().map(|s| Value::String(text(s))).collect()),
        Val::Map(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), json_of(v, text)))
                .collect(),
        ),
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

// ---------------------------------------------------------------- json / yaml

/// `v` as msgpack, for the render crate's writers (maps keep their order).
fn to_msgpack(v: &Val) -> rmpv::Value {
    use rmpv::Value;
    match v {
        Val::Bool(b) => Value::Boolean(*b),
        Val::Str(s) => Value::from(s.as_str()),
        Val::List(items) => Value::Array(items.iter().map(|s| Value::from(s.as_str())).collect()),
        Val::Map(m) => Value::Map(
            m.iter()
                .map(|(k, v)| (Value::from(k.as_str()), to_msgpack(v)))
                .collect(),
        ),
    }
}

/// `salt.output.json_out`: no `--out-indent` is 4, a negative one is one line.
fn json(data: &Val, indent: Option<i64>) -> String {
    let indent = match indent {
        None => Some(4usize),
        Some(i) if i < 0 => None,
        Some(i) => Some(usize::try_from(i).unwrap_or(4)),
    };
    let opts = salt_render::JsonOpts {
        indent,
        ..salt_render::JsonOpts::SALT
    };
    salt_render::py_json(&to_msgpack(data), opts)
}

/// `salt.output.yaml_out`: block style, or flow style with a negative `--out-indent`.
fn yaml(data: &Val, indent: Option<i64>) -> String {
    let flow = matches!(indent, Some(i) if i < 0);
    salt_render::yaml_dump::safe_dump(&to_msgpack(data), flow)
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
    salt_compat::py_json_repr(&json_of(v, str::to_owned))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
