//! Salt's YAML-writing Jinja filters, byte for byte.
//!
//! `yaml` is `format_yaml`: `salt.utils.yaml.safe_dump(value, default_flow_style=flow)`,
//! stripped, a trailing `\n...` removed. Salt's `SafeOrderedDumper` is PyYAML's `CSafeDumper`
//! when libyaml is there (it is in Salt's packages), so the writer here is libyaml's emitter
//! (`src/emitter.c`): 4-byte characters and tabs are not printable, a simple key may be 128
//! UTF-8 bytes, an empty key is `''`, and long scalars fold at column 80 the libyaml way. The
//! values are what PyYAML's `SafeRepresenter` makes (`null`, `true`, `repr` floats as `1.0e+16`,
//! `.nan`, dict keys sorted when `sorted()` can sort them), with the `str` resolver of PyYAML's
//! `Resolver` deciding whether a string may be plain.
//!
//! `yaml_dquote` / `yaml_squote` are PyYAML's pure-Python `Emitter.write_double_quoted` /
//! `write_single_quoted` with an unbounded width and without `allow_unicode` (non-ASCII is
//! escaped in double quotes); `yaml_encode` is the representer's text of one scalar.

use rmpv::Value;

const BEST_WIDTH: usize = 80;
const BEST_INDENT: i64 = 2;

/// `format_yaml(value, flow_style)`: what Salt's `yaml` filter prints.
pub fn safe_dump(v: &Value, flow: bool) -> String {
    let mut e = Emitter {
        indent: -1,
        whitespace: true,
        indention: true,
        flow_style: flow,
        ..Emitter::default()
    };
    e.node(v, false, false);
    e.write_indent();
    // Python's `str.strip()`: Unicode whitespace and the \x1c-\x1f separators.
    let text = e
        .out
        .trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c));
    text.strip_suffix("\n...").unwrap_or(text).to_owned()
}

/// `yaml_dquote`: a double-quoted scalar, everything outside printable ASCII escaped.
pub fn dquote(s: &str) -> String {
    let body: String = s
        .chars()
        .map(|c| match c {
            ' '..='~' if c != '"' && c != '\\' => c.to_string(),
            _ => escape(c),
        })
        .collect();
    format!("\"{body}\"")
}

/// `yaml_squote`: a single-quoted scalar (`'` doubled, a `\n` starting a run of line breaks
/// written twice).
pub fn squote(s: &str) -> String {
    let is_break = |c: Option<char>| c.is_some_and(|c| "\n\u{85}\u{2028}\u{2029}".contains(c));
    let mut out = String::from('\'');
    let mut prev = None;
    for c in s.chars() {
        if (c == '\n' && !is_break(prev)) || c == '\'' {
            out.push(c);
        }
        out.push(c);
        prev = Some(c);
    }
    out + "'"
}

/// `yaml_encode`: a string double-quoted, another scalar as the representer writes it; `None`
/// for a list or a dict (Salt raises `TypeError`).
pub fn encode_scalar(v: &Value) -> Option<String> {
    let (text, is_str) = scalar(v)?;
    Some(if is_str { dquote(&text) } else { text })
}

/// A scalar as `SafeRepresenter` makes it: its text and whether it is a `str`.
fn scalar(v: &Value) -> Option<(String, bool)> {
    Some(match v {
        Value::Nil => ("null".to_owned(), false),
        Value::Boolean(b) => ((if *b { "true" } else { "false" }).to_owned(), false),
        Value::Integer(i) => (i.to_string(), false),
        Value::F32(f) => (float_text(f64::from(*f)), false),
        Value::F64(f) => (float_text(*f), false),
        Value::Array(_) | Value::Map(_) => return None,
        other => (salt_compat::py_str(other), true),
    })
}

/// `SafeRepresenter.represent_float`.
fn float_text(f: f64) -> String {
    if f.is_nan() {
        return ".nan".to_owned();
    }
    if f.is_infinite() {
        return (if f > 0.0 { ".inf" } else { "-.inf" }).to_owned();
    }
    let text = salt_compat::py_float_repr(f).to_lowercase();
    if !text.contains('.') && text.contains('e') {
        text.replacen('e', ".0e", 1)
    } else {
        text
    }
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blankz(c: Option<char>) -> bool {
    c.is_none_or(|c| matches!(c, ' ' | '\t' | '\0') || is_break(c))
}

/// libyaml's `IS_PRINTABLE` (so no 4-byte characters).
fn printable(c: char) -> bool {
    matches!(c, '\n' | ' '..='~' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}')
        && c != '\u{feff}'
}

/// A `\`-escape, as both emitters write it.
fn escape(c: char) -> String {
    const FROM: &str = "\0\u{7}\u{8}\t\n\u{b}\u{c}\r\u{1b}\"\\\u{85}\u{a0}\u{2028}\u{2029}";
    const TO: &str = "0abtnvfre\"\\N_LP";
    match FROM
        .chars()
        .position(|x| x == c)
        .and_then(|i| TO.chars().nth(i))
    {
        Some(short) => format!("\\{short}"),
        None if (c as u32) <= 0xff => format!("\\x{:02X}", c as u32),
        None if (c as u32) <= 0xffff => format!("\\u{:04X}", c as u32),
        None => format!("\\U{:08X}", c as u32),
    }
}

/// libyaml's `yaml_emitter_analyze_scalar` (with `unicode` on), the parts that matter here.
struct Analysis {
    multiline: bool,
    flow_plain: bool,
    block_plain: bool,
    single: bool,
}

fn analyze(s: &str) -> Analysis {
    let chars: Vec<char> = s.chars().collect();
    let mut flow_ind = s.starts_with("---") || s.starts_with("...");
    let mut block_ind = flow_ind;
    let (mut breaks, mut special, mut edge_blank) = (false, false, false);
    let (mut break_space, mut space_break, mut preceded_ws) = (false, false, true);
    for (i, &c) in chars.iter().enumerate() {
        let followed_ws = is_blankz(chars.get(i + 1).copied());
        let both = if i == 0 {
            "#,[]{}&*!|>'\"%@`".contains(c) || (c == '-' && followed_ws)
        } else {
            c == '#' && preceded_ws
        };
        let colon = c == ':' || (i == 0 && c == '?');
        flow_ind |= both || colon || (i > 0 && ",?[]{}".contains(c));
        block_ind |= both || (colon && followed_ws);
        special |= !printable(c);
        breaks |= is_break(c);
        edge_blank |= (c == ' ' || is_break(c)) && (i == 0 || i + 1 == chars.len());
        let prev = i.checked_sub(1).map(|p| chars[p]);
        break_space |= c == ' ' && prev.is_some_and(is_break);
        space_break |= is_break(c) && prev == Some(' ');
        preceded_ws = is_blankz(Some(c));
    }
    let plain = !(edge_blank || break_space || space_break || special || breaks);
    Analysis {
        multiline: breaks,
        flow_plain: plain && !flow_ind && !s.is_empty(),
        block_plain: plain && !block_ind,
        single: !(break_space || space_break || special),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
}

/// libyaml's `yaml_emitter_check_simple_key`.
fn simple_key(k: &Value) -> bool {
    match k {
        Value::Array(a) => a.is_empty(),
        Value::Map(m) => m.is_empty(),
        _ => scalar(k).is_some_and(|(t, _)| t.len() <= 128 && !analyze(&t).multiline),
    }
}

/// `represent_mapping` with `sort_keys=True`: `sorted(items)` when the keys are all strings or
/// all numbers, else the dict's order (`sorted()` raises `TypeError`: mixed kinds, `None`).
fn sorted_entries(m: &[(Value, Value)]) -> Vec<&(Value, Value)> {
    let mut out: Vec<&(Value, Value)> = m.iter().collect();
    let int = |k: &Value| match k {
        Value::Boolean(b) => Some(i128::from(*b)),
        Value::Integer(i) => i.as_i64().map(i128::from).or(i.as_u64().map(i128::from)),
        _ => None,
    };
    let num = |k: &Value| match k {
        Value::F32(f) => Some(f64::from(*f)),
        Value::F64(f) => Some(*f),
        _ => int(k).map(|i| i as f64),
    };
    let text = |k: &Value| matches!(k, Value::String(_) | Value::Binary(_) | Value::Ext(..));
    if out.iter().all(|(k, _)| text(k)) {
        out.sort_by_key(|(k, _)| salt_compat::py_str(k));
    } else if out.iter().all(|(k, _)| num(k).is_some()) {
        out.sort_by(|(a, _), (b, _)| match (int(a), int(b)) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => num(a)
                .partial_cmp(&num(b))
                .unwrap_or(std::cmp::Ordering::Equal),
        });
    }
    out
}

/// libyaml's emitter state, for one document written from a value tree.
#[derive(Default)]
struct Emitter {
    out: String,
    column: usize,
    indent: i64,
    indents: Vec<i64>,
    flow_level: usize,
    whitespace: bool,
    indention: bool,
    flow_style: bool,
    mapping_context: bool,
    simple_key_context: bool,
}

impl Emitter {
    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn write_indent(&mut self) {
        let indent = usize::try_from(self.indent).unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(&mut self, ind: &str, need_ws: bool, is_ws: bool, is_indention: bool) {
        if need_ws && !self.whitespace {
            self.put(' ');
        }
        ind.chars().for_each(|c| self.put(c));
        self.whitespace = is_ws;
        self.indention = self.indention && is_indention;
    }

    fn node(&mut self, v: &Value, mapping: bool, simple_key: bool) {
        self.mapping_context = mapping;
        self.simple_key_context = simple_key;
        match v {
            Value::Array(items) => self.sequence(items),
            Value::Map(m) => self.mapping(&sorted_entries(m)),
            _ => {
                if let Some((text, is_str)) = scalar(v) {
                    self.scalar(&text, is_str);
                }
            }
        }
    }

    fn scalar(&mut self, text: &str, is_str: bool) {
        let a = analyze(text);
        let flow = self.flow_level > 0;
        let simple = self.simple_key_context;
        let mut style = Style::Plain;
        if simple && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain
            && ((flow && !a.flow_plain)
                || (!flow && !a.block_plain)
                || (text.is_empty() && (flow || simple))
                || (is_str && !crate::yaml::plain_is_str(text)))
        {
            style = Style::Single;
        }
        if style == Style::Single && !a.single {
            style = Style::Double;
        }
        if !is_str && style != Style::Plain {
            // Not readable back as its own type unquoted: the `!` non-specific tag.
            self.write_indicator("!", true, false, false);
        }
        self.increase_indent(true, false);
        match style {
            Style::Plain => self.write_unescaped(text, !simple, false),
            Style::Single => self.write_unescaped(text, !simple, true),
            Style::Double => self.write_double(text, !simple),
        }
        self.pop_indent();
    }

    /// A flow collection's `[` / `{`.
    fn open_flow(&mut self, indicator: &str) {
        self.write_indicator(indicator, true, true, false);
        self.increase_indent(true, false);
        self.flow_level += 1;
    }

    /// Before a flow collection's item `i`: the `,`, and a new line past the width.
    fn flow_item(&mut self, i: usize) {
        if i > 0 {
            self.write_indicator(",", false, false, false);
        }
        if self.column > BEST_WIDTH {
            self.write_indent();
        }
    }

    fn close_flow(&mut self, indicator: &str) {
        self.flow_level -= 1;
        self.pop_indent();
        self.write_indicator(indicator, false, false, false);
    }

    fn sequence(&mut self, items: &[Value]) {
        let flow = self.flow_level > 0 || self.flow_style || items.is_empty();
        if flow {
            self.open_flow("[");
        } else {
            // A block sequence as a mapping's value is not indented.
            let indentless = self.mapping_context && !self.indention;
            self.increase_indent(false, indentless);
        }
        for (i, item) in items.iter().enumerate() {
            if flow {
                self.flow_item(i);
            } else {
                self.write_indent();
                self.write_indicator("-", true, false, true);
            }
            self.node(item, false, false);
        }
        if flow {
            self.close_flow("]");
        } else {
            self.pop_indent();
        }
    }

    fn mapping(&mut self, entries: &[&(Value, Value)]) {
        let flow = self.flow_level > 0 || self.flow_style || entries.is_empty();
        if flow {
            self.open_flow("{");
        } else {
            self.increase_indent(false, false);
        }
        for (i, (k, v)) in entries.iter().map(|e| (&e.0, &e.1)).enumerate() {
            if flow {
                self.flow_item(i);
            } else {
                self.write_indent();
            }
            if simple_key(k) {
                self.node(k, true, true);
                self.write_indicator(":", false, false, false);
            } else {
                // A complex key: `? key` then `: value`.
                self.write_indicator("?", true, false, !flow);
                self.node(k, true, false);
                if !flow || self.column > BEST_WIDTH {
                    self.write_indent();
                }
                self.write_indicator(":", true, false, !flow);
            }
            self.node(v, true, false);
        }
        if flow {
            self.close_flow("}");
        } else {
            self.pop_indent();
        }
    }

    /// libyaml's `write_plain_scalar` and, `quoted`, `write_single_quoted_scalar` (a plain
    /// scalar never has leading or trailing spaces, nor breaks, nor a leading `'`).
    fn write_unescaped(&mut self, s: &str, allow_breaks: bool, quoted: bool) {
        if quoted {
            self.write_indicator("'", true, false, false);
        } else if !self.whitespace && (!s.is_empty() || self.flow_level > 0) {
            self.put(' ');
        }
        let chars: Vec<char> = s.chars().collect();
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let fold = allow_breaks && !spaces && self.column > BEST_WIDTH;
                if fold && i != 0 && i + 1 != chars.len() && chars[i + 1] != ' ' {
                    self.write_indent();
                } else {
                    self.put(' ');
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if quoted && c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        if quoted {
            if breaks {
                self.write_indent();
            }
            self.write_indicator("'", false, false, false);
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double(&mut self, s: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if !printable(c) || is_break(c) || c == '"' || c == '\\' {
                escape(c).chars().for_each(|e| self.put(e));
                spaces = false;
            } else if c == ' ' {
                let fold = allow_breaks && !spaces && self.column > BEST_WIDTH;
                if fold && i != 0 && i + 1 != chars.len() {
                    self.write_indent();
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(' ');
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }
}

#[cfg(test)]
mod tests;
