//! Salt's ini file model (`salt/modules/ini_manage.py`'s `_Ini` and `_Section`), rule for
//! rule, so a file written here is byte for byte the one Salt writes: options outside any
//! section first, then `\n[section]\n` blocks; comments (`#`/`;`), blank and unparsable lines
//! kept in place as `#commentN`/`#unknownN` entries; indented lines continuing the previous
//! value; a new option taking the place of its commented-out form (`#key = value`, which is
//! dropped); `key = value` written with the separator wrapped in single spaces (`no_spaces`:
//! bare). Salt's quirks are kept too: a commented-out option is dropped when the same option
//! follows it, and a repeated option keeps its first place and its last value.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
use rmpv::Value;
use salt_compat::{py_str, py_str_repr};

static INI_REGX: LazyLock<Regex> = LazyLock::new(|| {
    #[allow(clippy::unwrap_used)] // a constant pattern
    Regex::new(r"(?m)^\s*\[(.+?)\]\s*$").unwrap()
});
static COM_REGX: LazyLock<Regex> = LazyLock::new(|| {
    #[allow(clippy::unwrap_used)] // a constant pattern
    Regex::new(r"^\s*(#|;)\s*(.*)").unwrap()
});
static INDENTED_REGX: LazyLock<Regex> = LazyLock::new(|| {
    #[allow(clippy::unwrap_used)] // a constant pattern
    Regex::new(r"^(\s+)(.*)").unwrap()
});

/// What goes wrong, as the Python exception Salt raises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IniError {
    /// `CommandExecutionError` (the file could not be read or written).
    Exec(String),
    /// Another Python exception, as `Type: message`.
    Python(String),
}

impl fmt::Display for IniError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IniError::Exec(m) => f.write_str(m),
            IniError::Python(m) => f.write_str(m),
        }
    }
}

impl IniError {
    /// `Type: message`, as the last line of Salt's traceback.
    pub fn with_type(&self) -> String {
        match self {
            IniError::Exec(m) => format!("CommandExecutionError: {m}"),
            IniError::Python(m) => m.clone(),
        }
    }
}

/// Python's `str()` of an `OSError` about `path`.
fn os_error(e: &std::io::Error, path: &str) -> String {
    let text = e.to_string();
    let strerror = text.split(" (os error").next().unwrap_or_default();
    match e.raw_os_error() {
        Some(n) => format!("[Errno {n}] {strerror}: {}", py_str_repr(path)),
        None => text,
    }
}

/// One entry of a section: a value (or a comment, blank or unknown line) or a section.
#[derive(Clone, Debug)]
pub enum Entry {
    /// Text.
    Text(String),
    /// A nested section.
    Section(Section),
}

impl Entry {
    /// The entry from decoded data: a map becomes a section, anything else Python's `str()`.
    pub fn from_value(v: &Value) -> Entry {
        match v {
            Value::Map(m) => Entry::Section(Section::plain(m)),
            other => Entry::Text(py_str(other)),
        }
    }

    /// As Salt returns it: the text, or the section's dict (every key).
    pub fn to_value(&self) -> Value {
        match self {
            Entry::Text(t) => Value::from(t.as_str()),
            Entry::Section(s) => s.as_dict(),
        }
    }
}

/// A section (`_Section`); the whole file is the section named after the path (`_Ini`).
#[derive(Clone, Debug)]
pub struct Section {
    name: String,
    sep: String,
    no_spaces: bool,
    opt_regx: Option<Regex>,
    items: Vec<(String, Entry)>,
}

/// The separator's option pattern: Salt's `(\s*)(.+?)\s*(\SEP)\s*(.*)\s*`.
fn opt_regx(sep: &str) -> Result<Regex, IniError> {
    if sep.is_empty() || sep.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(IniError::Python(format!(
            "ValueError: separator {} is not supported by salt-rs (Salt escapes only its \
             first character into its pattern)",
            py_str_repr(sep)
        )));
    }
    Regex::new(&format!(r"^(\s*)(.+?)\s*({})\s*(.*)", regex::escape(sep)))
        .map_err(|e| IniError::Python(format!("re.error: {e}")))
}

impl Section {
    /// An empty section.
    pub fn new(name: &str, sep: &str, no_spaces: bool) -> Result<Section, IniError> {
        Ok(Section {
            name: name.to_owned(),
            sep: sep.to_owned(),
            no_spaces,
            opt_regx: Some(opt_regx(sep)?),
            items: Vec::new(),
        })
    }

    /// A section holding `m` as given (input to [`Section::update`]).
    fn plain(m: &[(Value, Value)]) -> Section {
        Section {
            name: String::new(),
            sep: String::new(),
            no_spaces: false,
            opt_regx: None,
            items: m
                .iter()
                .map(|(k, v)| (py_str(k), Entry::from_value(v)))
                .collect(),
        }
    }

    /// The entries, in order.
    pub fn items(&self) -> &[(String, Entry)] {
        &self.items
    }

    /// The entry `key`.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.items.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The nested section `key`.
    pub fn section_mut(&mut self, key: &str) -> Option<&mut Section> {
        match self.get_mut(key) {
            Some(Entry::Section(s)) => Some(s),
            _ => None,
        }
    }

    fn get_mut(&mut self, key: &str) -> Option<&mut Entry> {
        self.items
            .iter_mut()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// Removes and returns the entry `key`.
    pub fn pop(&mut self, key: &str) -> Option<Entry> {
        let i = self.items.iter().position(|(k, _)| k == key)?;
        Some(self.items.remove(i).1)
    }

    /// `dict` assignment: in place when present, else at the end.
    fn set(&mut self, key: &str, value: Entry) {
        match self.get_mut(key) {
            Some(slot) => *slot = value,
            None => self.items.push((key.to_owned(), value)),
        }
    }

    /// `dict(self)`: every entry, sections as dicts.
    pub fn as_dict(&self) -> Value {
        Value::Map(
            self.items
                .iter()
                .map(|(k, v)| (Value::from(k.as_str()), v.to_value()))
                .collect(),
        )
    }

    /// The entries whose key does not start with `#`, sections recursively so
    /// (`ini.get_ini`).
    pub fn to_plain(&self) -> Value {
        Value::Map(
            self.items
                .iter()
                .filter(|(k, _)| !k.starts_with('#'))
                .map(|(k, v)| {
                    let v = match v {
                        Entry::Text(t) => Value::from(t.as_str()),
                        Entry::Section(s) => s.to_plain(),
                    };
                    (Value::from(k.as_str()), v)
                })
                .collect(),
        )
    }

    fn opt_match<'t>(&self, line: &'t str) -> Option<regex::Captures<'t>> {
        self.opt_regx.as_ref()?.captures(line)
    }

    /// `_Section.refresh`: parse the lines of a section (or of the file's top).
    fn refresh(&mut self, text: &str) -> Result<(), IniError> {
        let text = text.trim_matches('\n');
        if text.is_empty() {
            return Ok(());
        }
        let (mut comments, mut unknowns) = (1, 1);
        let mut curr_indent = String::new();
        for line in text.split('\n') {
            if COM_REGX.is_match(line) {
                let name = format!("#comment{comments}");
                comments += 1;
                self.update(vec![(name, Entry::Text(line.to_owned()))])?;
                continue;
            }
            let indent = INDENTED_REGX
                .captures(line)
                .map(|c| c[1].replace('\t', "    "));
            if let (Some(indent), Some((prev, value))) = (indent, self.items.last())
                && indent > curr_indent
            {
                let joined = match value {
                    Entry::Text(t) => format!("{t}\n{line}"),
                    Entry::Section(_) => line.to_owned(),
                };
                let prev = prev.clone();
                self.update(vec![(prev, Entry::Text(joined))])?;
                continue;
            }
            if let Some(c) = self.opt_match(line) {
                curr_indent = c[1].replace('\t', "    ");
                let (name, value) = (c[2].to_owned(), c[4].to_owned());
                self.update(vec![(name, Entry::Text(value))])?;
                continue;
            }
            let name = format!("#unknown{unknowns}");
            unknowns += 1;
            self.update(vec![(name, Entry::Text(line.to_owned()))])?;
        }
        Ok(())
    }

    /// `_uncomment_if_commented`: `key` takes the place of the first comment that is a
    /// commented-out `key` option (the comment is dropped), else goes at the end.
    fn uncomment_if_commented(&mut self, key: &str) {
        let found = self.items.iter().position(|(k, v)| {
            k.contains("#comment")
                && matches!(v, Entry::Text(t)
                    if self.opt_match(t.trim_start_matches('#')).is_some_and(|c| &c[2] == key))
        });
        let placeholder = (key.to_owned(), Entry::Text(String::new()));
        match found {
            Some(i) => self.items[i] = placeholder,
            None => self.items.push(placeholder),
        }
    }

    /// `_Section.update`: merge `entries` in; the changes, `{key: {before, after}}` (nested
    /// for sections).
    pub fn update(
        &mut self,
        entries: Vec<(String, Entry)>,
    ) -> Result<Vec<(String, Value)>, IniError> {
        let mut changes: Vec<(String, Value)> = Vec::new();
        let mut record = |k: &str, v: Value| match changes.iter_mut().find(|(x, _)| x == k) {
            Some(slot) => slot.1 = v,
            None => changes.push((k.to_owned(), v)),
        };
        for (key, value) in entries {
            let value = match value {
                Entry::Section(_) if COM_REGX.is_match(&key) => {
                    return Err(IniError::Python(format!(
                        "ValueError: section {}: a section named like a comment is not \
                         supported by salt-rs (Salt writes it back as JSON)",
                        py_str_repr(&key)
                    )));
                }
                Entry::Section(given) => {
                    let mut sect = Section::new(&key, &self.sep, self.no_spaces)?;
                    sect.update(given.items)?;
                    Entry::Section(sect)
                }
                text => text,
            };
            let plain = value.to_value();
            match self.get_mut(&key) {
                None => {
                    record(&key, before_after(Value::Nil, plain));
                    if matches!(value, Entry::Text(_)) {
                        self.uncomment_if_commented(&key);
                    }
                    self.set(&key, value);
                }
                Some(Entry::Section(cur)) => {
                    let Entry::Section(given) = value else {
                        return Err(IniError::Python(
                            "AttributeError: 'str' object has no attribute 'items'".into(),
                        ));
                    };
                    let sub = cur.update(given.items)?;
                    if !sub.is_empty() {
                        record(&key, crate::map(sub));
                    }
                }
                Some(Entry::Text(cur)) => {
                    if !matches!(&value, Entry::Text(t) if t == cur) {
                        let before = Value::from(cur.as_str());
                        record(&key, before_after(before, plain));
                        self.set(&key, value);
                    }
                }
            }
        }
        Ok(changes)
    }

    /// The separator as `gen_ini` writes it.
    fn written_sep(&self) -> String {
        let sep = if self.sep.chars().all(|c| c == ' ') {
            " "
        } else {
            self.sep.as_str()
        };
        match (sep == " ", self.no_spaces) {
            (true, _) => " ".to_owned(),
            (false, true) => sep.trim().to_owned(),
            (false, false) => format!(" {} ", sep.trim()),
        }
    }

    /// `_Section.gen_ini`: `\n[name]\n`, then the entries, then the nested sections.
    fn gen_ini(&self, out: &mut Vec<String>) {
        out.push(format!("\n[{}]\n", self.name));
        let sep = self.written_sep();
        let mut sections = Vec::new();
        for (name, value) in &self.items {
            match value {
                Entry::Section(s) => sections.push(s),
                Entry::Text(t) if COM_REGX.is_match(name) => out.push(format!("{t}\n")),
                Entry::Text(t) => out.push(format!("{name}{sep}{t}\n")),
            }
        }
        for s in sections {
            s.gen_ini(out);
        }
    }

    /// The file's text as `_Ini.flush` writes it.
    pub fn render(&self) -> String {
        let mut chunks = Vec::new();
        self.gen_ini(&mut chunks);
        let mut chunks = chunks.into_iter().skip(1);
        let mut text = chunks
            .next()
            .map(|c| c.trim_start_matches('\n').to_owned())
            .unwrap_or_default();
        text.extend(chunks);
        text
    }
}

fn before_after(before: Value, after: Value) -> Value {
    crate::map(vec![("before", before), ("after", after)])
}

/// Python's `"\n".join(text.splitlines())` of text read in universal-newline mode.
fn normalise_lines(text: &str) -> String {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut out: String = text
        .chars()
        .map(|c| match c {
            '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}' | '\u{2029}' => '\n',
            c => c,
        })
        .collect();
    if out.ends_with('\n') {
        out.pop();
    }
    out
}

/// An ini file (`_Ini`).
#[derive(Clone, Debug)]
pub struct Ini {
    path: String,
    /// The file's top: its options outside any section, then its sections.
    pub top: Section,
}

impl Ini {
    /// `_Ini.get_ini_file`: the file at `path` parsed (empty when missing; when unreadable
    /// under `test`, empty as well).
    pub fn load(path: &str, sep: &str, no_spaces: bool, test: bool) -> Result<Ini, IniError> {
        let mut ini = Ini {
            path: path.to_owned(),
            top: Section::new(path, sep, no_spaces)?,
        };
        if !std::path::Path::new(path).exists() {
            return Ok(ini);
        }
        let text = match std::fs::read(path) {
            Ok(b) => String::from_utf8(b).map_err(|e| {
                IniError::Python(format!(
                    "UnicodeDecodeError: 'utf-8' codec can't decode the file: {e}"
                ))
            })?,
            Err(_) if test => return Ok(ini),
            Err(e) => {
                return Err(IniError::Exec(format!(
                    "Unable to open file '{path}'. Exception: {}",
                    os_error(&e, path)
                )));
            }
        };
        ini.parse(&normalise_lines(&text))?;
        Ok(ini)
    }

    /// `_Ini.refresh` on `text`: the top, then each `[section]`.
    fn parse(&mut self, text: &str) -> Result<(), IniError> {
        if text.is_empty() {
            return Ok(());
        }
        let mut pieces: Vec<&str> = Vec::new();
        let mut last = 0;
        for c in INI_REGX.captures_iter(text) {
            let (Some(all), Some(name)) = (c.get(0), c.get(1)) else {
                continue;
            };
            pieces.push(&text[last..all.start()]);
            pieces.push(name.as_str());
            last = all.end();
        }
        pieces.push(&text[last..]);
        let mut pieces = pieces.into_iter();
        let top = pieces.next().unwrap_or_default();
        self.top.refresh(top)?;
        while let (Some(name), Some(body)) = (pieces.next(), pieces.next()) {
            let mut sect = Section::new(name, &self.top.sep, false)?;
            sect.refresh(body)?;
            self.top
                .update(vec![(name.to_owned(), Entry::Section(sect))])?;
        }
        Ok(())
    }

    /// `_Ini.flush`: write the file.
    pub fn flush(&self) -> Result<(), IniError> {
        std::fs::write(&self.path, self.top.render()).map_err(|e| {
            IniError::Exec(format!(
                "Unable to write file '{}'. Exception: {}",
                self.path,
                os_error(&e, &self.path)
            ))
        })
    }
}
