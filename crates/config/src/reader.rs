//! The option reader: looks options up in the merged sources, converts each to its type and
//! records — rather than returns — every problem, so one load reports all of them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{ConfigError, Problem};
use crate::node::{Kind, Node};
use crate::source::{Entry, Sources};

/// Reads typed options out of [`Sources`], collecting errors and warnings.
pub(crate) struct Reader<'a> {
    entries: &'a [Entry],
    /// Every key the loader looked up (present or not); the rest are unknown.
    asked: Vec<&'static str>,
    /// Options the fail-closed check has dealt with (refused or accepted as asking nothing).
    refused: Vec<&'static str>,
    pub(crate) errors: Vec<ConfigError>,
    pub(crate) warnings: Vec<String>,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(sources: &'a Sources) -> Self {
        Self {
            entries: &sources.entries,
            asked: Vec::new(),
            refused: Vec::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// The entry for `key` if it is set to something other than null (a YAML `key:` with no
    /// value means "use the default" here).
    pub(crate) fn entry(&mut self, key: &'static str) -> Option<&'a Entry> {
        self.asked.push(key);
        self.entries
            .iter()
            .find(|e| e.key == key)
            .filter(|e| e.node.kind != Kind::Null)
    }

    /// Like [`Self::entry`], but falls back to `alias` with a warning naming Salt's key.
    pub(crate) fn entry_aliased(
        &mut self,
        key: &'static str,
        alias: &'static str,
        note: &str,
    ) -> Option<&'a Entry> {
        let main = self.entry(key);
        let alt = self.entry(alias);
        match (main, alt) {
            (Some(m), Some(a)) => {
                self.warnings.push(format!(
                    "{}: option `{alias}` ignored: `{key}` is also set ({note})",
                    a.file.display()
                ));
                Some(m)
            }
            (None, Some(a)) => {
                self.warnings.push(format!(
                    "{}: option `{alias}` used as Salt's `{key}` ({note}); please rename it",
                    a.file.display()
                ));
                Some(a)
            }
            (m, None) => m,
        }
    }

    /// Marks an option as accepted but unused (no "not implemented" warning).
    pub(crate) fn ignore(&mut self, key: &'static str) {
        self.asked.push(key);
    }

    /// The entry for `key` if set to something other than null, without marking it read
    /// (the fail-closed check decides: [`Self::mark_read`] or [`Self::refuse`]).
    pub(crate) fn peek(&self, key: &str) -> Option<&'a Entry> {
        self.entries
            .iter()
            .find(|e| e.key == key)
            .filter(|e| e.node.kind != Kind::Null)
    }

    /// Marks an option read without adding it to the option table (no warning at the end).
    pub(crate) fn mark_read(&mut self, key: &'static str) {
        self.refused.push(key);
    }

    /// Records a start-up error for a security option salt-rs does not implement.
    pub(crate) fn refuse(&mut self, key: &'static str, entry: &Entry, lacks: &'static str) {
        self.fail(entry, Problem::NotImplemented { lacks });
        self.refused.push(key);
    }

    /// Reads `key` with `conv`; absent → `default`; bad → error recorded, `default` returned.
    pub(crate) fn get<T>(
        &mut self,
        key: &'static str,
        default: T,
        conv: impl FnOnce(&Node) -> Result<T, Problem>,
    ) -> T {
        let entry = self.entry(key);
        self.convert(entry, default, conv)
    }

    /// Reads an option whose absence (or null) means `None`.
    pub(crate) fn opt<T>(
        &mut self,
        key: &'static str,
        conv: impl FnOnce(&Node) -> Result<T, Problem>,
    ) -> Option<T> {
        let entry = self.entry(key);
        self.convert(entry, None, |n| conv(n).map(Some))
    }

    /// Converts an already looked-up entry.
    pub(crate) fn convert<T>(
        &mut self,
        entry: Option<&Entry>,
        default: T,
        conv: impl FnOnce(&Node) -> Result<T, Problem>,
    ) -> T {
        let Some(entry) = entry else {
            return default;
        };
        match conv(&entry.node) {
            Ok(v) => v,
            Err(problem) => {
                self.fail(entry, problem);
                default
            }
        }
    }

    /// Records a problem with an entry.
    pub(crate) fn fail(&mut self, entry: &Entry, problem: Problem) {
        self.errors.push(ConfigError::InvalidOption {
            path: entry.file.clone(),
            line: entry.node.line,
            key: entry.key.clone(),
            problem,
        });
    }

    /// The keys that were looked up, for the option-table consistency test.
    #[cfg(test)]
    pub(crate) fn asked(&self) -> &[&'static str] {
        &self.asked
    }

    /// Warns once per option nobody asked for, and returns errors and warnings. A key Salt
    /// knows for `role` is "not implemented"; a key Salt does not know either is a typo,
    /// reported with the nearest known name. Keys with a dot (`mysql.host`) configure
    /// modules and are not checked against Salt's list.
    pub(crate) fn finish(mut self, role: &str) -> (Vec<ConfigError>, Vec<String>) {
        for entry in self.entries {
            let key = entry.key.as_str();
            if self.asked.contains(&key) || self.refused.contains(&key) {
                continue;
            }
            let at = crate::error::Where(&entry.file, entry.node.line);
            if key.contains('.') || crate::known::is_salt_option(role, key) {
                self.warnings.push(format!(
                    "{at}: option `{key}` is not implemented by salt-rs; ignored"
                ));
            } else {
                let hint = crate::known::nearest(key, &self.asked, role)
                    .map(|k| format!(" (did you mean `{k}`?)"))
                    .unwrap_or_default();
                self.warnings.push(format!(
                    "{at}: unknown option `{key}`{hint}: Salt {role} has no such option; ignored"
                ));
            }
        }
        (self.errors, self.warnings)
    }
}

// === converters: &Node -> Result<T, Problem> ===

fn wrong(expected: &'static str, node: &Node) -> Problem {
    Problem::WrongType {
        expected,
        found: node.describe(),
    }
}

/// A boolean (YAML 1.1 spellings included). Salt rejects strings and numbers here too.
pub(crate) fn boolean(node: &Node) -> Result<bool, Problem> {
    match node.kind {
        Kind::Bool(b) => Ok(b),
        _ => Err(wrong("a boolean (true/false, yes/no, on/off)", node)),
    }
}

/// An integer. Like Salt's `int(val)`, a numeric string is accepted, and redundant leading
/// zeros are decimal (Salt's YAML loader strips them: `0700` is 700).
pub(crate) fn integer(node: &Node) -> Result<i128, Problem> {
    match &node.kind {
        Kind::Int(i) => Ok(*i),
        Kind::Str(s) => {
            let t = s.trim();
            let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
            if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit() || c == '_') {
                return Err(wrong("an integer", node));
            }
            t.replace('_', "")
                .parse::<i128>()
                .map_err(|_| wrong("an integer", node))
        }
        _ => Err(wrong("an integer", node)),
    }
}

/// A file mode such as `0700`: octal digits, as PyYAML and `chmod` read them. A YAML integer
/// that is not written with a leading zero (e.g. `448`) is taken as-is.
#[allow(dead_code)]
pub(crate) fn mode(node: &Node) -> Result<u32, Problem> {
    let out_of_range = |v: String| Problem::OutOfRange {
        value: v,
        allowed: "0 to 0o7777".to_owned(),
    };
    let value = match &node.kind {
        Kind::Int(i) => u32::try_from(*i).map_err(|_| out_of_range(i.to_string()))?,
        Kind::Str(s) => {
            let t = s.trim();
            let digits = t.strip_prefix("0o").unwrap_or(t);
            u32::from_str_radix(digits, 8).map_err(|_| wrong("an octal file mode", node))?
        }
        _ => return Err(wrong("an octal file mode", node)),
    };
    if value > 0o7777 {
        return Err(out_of_range(format!("{value:#o}")));
    }
    Ok(value)
}

/// An integer in `min..=max`.
pub(crate) fn int_in<T: TryFrom<i128>>(
    min: i128,
    max: i128,
) -> impl Fn(&Node) -> Result<T, Problem> {
    move |node| {
        let v = integer(node)?;
        if v < min || v > max {
            return Err(Problem::OutOfRange {
                value: v.to_string(),
                allowed: format!("{min} to {max}"),
            });
        }
        T::try_from(v).map_err(|_| Problem::OutOfRange {
            value: v.to_string(),
            allowed: format!("{min} to {max}"),
        })
    }
}

/// A non-negative count.
pub(crate) fn count(node: &Node) -> Result<u32, Problem> {
    int_in(0, u32::MAX.into())(node)
}

/// A TCP port, 1–65535.
pub(crate) fn port(node: &Node) -> Result<u16, Problem> {
    int_in(1, 65535)(node)
}

/// A non-negative number of `unit`s (Salt's intervals are integers; floats are accepted
/// where Salt would use them as a number of seconds).
pub(crate) fn duration(unit: Duration) -> impl Fn(&Node) -> Result<Duration, Problem> {
    move |node| {
        let n = match node.kind {
            Kind::Float(x) if x.is_finite() && x >= 0.0 => {
                return Ok(unit.mul_f64(x));
            }
            Kind::Float(_) => {
                return Err(Problem::OutOfRange {
                    value: node.describe(),
                    allowed: "0 or more".to_owned(),
                });
            }
            _ => integer(node)?,
        };
        let n = u32::try_from(n).map_err(|_| Problem::OutOfRange {
            value: n.to_string(),
            allowed: format!("0 to {} (a duration cannot be negative)", u32::MAX),
        })?;
        Ok(unit * n)
    }
}

/// A duration where Salt's `-1` (or any negative value) means "not set / OS default".
pub(crate) fn duration_or_unset(
    unit: Duration,
) -> impl Fn(&Node) -> Result<Option<Duration>, Problem> {
    move |node| match integer(node) {
        Ok(n) if n < 0 => Ok(None),
        _ => duration(unit)(node).map(Some),
    }
}

/// A count where `-1` means "unlimited / not set".
pub(crate) fn count_or_unset(node: &Node) -> Result<Option<u32>, Problem> {
    match integer(node)? {
        -1 => Ok(None),
        _ => count(node).map(Some),
    }
}

/// A string. Numbers are accepted and rendered as Salt's `str()` would.
pub(crate) fn string(node: &Node) -> Result<String, Problem> {
    match &node.kind {
        Kind::Str(s) => Ok(s.clone()),
        Kind::Int(i) => Ok(i.to_string()),
        Kind::Float(x) => Ok(x.to_string()),
        _ => Err(wrong("a string", node)),
    }
}

/// A string with a word-to-value parser.
pub(crate) fn word<T>(
    parse: impl Fn(&str) -> Result<T, Problem>,
) -> impl Fn(&Node) -> Result<T, Problem> {
    move |node| match &node.kind {
        Kind::Str(s) => parse(s),
        _ => Err(wrong("a string", node)),
    }
}

/// A path (a non-empty string).
pub(crate) fn path(node: &Node) -> Result<PathBuf, Problem> {
    let s = string(node)?;
    if s.is_empty() {
        return Err(Problem::Invalid {
            value: s,
            reason: "empty path".to_owned(),
        });
    }
    Ok(PathBuf::from(s))
}

/// A list of strings; a single string is a one-element list.
pub(crate) fn string_list(node: &Node) -> Result<Vec<String>, Problem> {
    match &node.kind {
        Kind::Seq(items) => items.iter().map(string).collect(),
        Kind::Str(_) => Ok(vec![string(node)?]),
        _ => Err(wrong("a list of strings", node)),
    }
}

/// A mapping from strings to lists of strings.
pub(crate) fn string_list_map(node: &Node) -> Result<BTreeMap<String, Vec<String>>, Problem> {
    let Kind::Map(entries) = &node.kind else {
        return Err(wrong("a mapping of names to lists", node));
    };
    let mut out = BTreeMap::new();
    for (k, v) in entries {
        let list = match &v.kind {
            Kind::Null => Vec::new(),
            _ => string_list(v).map_err(|_| Problem::WrongType {
                expected: "a list of strings",
                found: format!("{} under {:?}", v.describe(), k.key_string()),
            })?,
        };
        out.insert(k.key_string(), list);
    }
    Ok(out)
}

/// A free-form mapping, as JSON values (for `grains`).
pub(crate) fn json_map(node: &Node) -> Result<serde_json::Map<String, serde_json::Value>, Problem> {
    match node.to_json() {
        serde_json::Value::Object(map) => Ok(map),
        _ => Err(wrong("a mapping", node)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(kind: Kind) -> Node {
        Node::bare(kind)
    }

    #[test]
    fn integers_follow_salt() {
        assert_eq!(integer(&n(Kind::Str("0700".into()))), Ok(700));
        assert_eq!(integer(&n(Kind::Str(" 42 ".into()))), Ok(42));
        assert!(integer(&n(Kind::Str("4x".into()))).is_err());
        assert!(integer(&n(Kind::Float(1.5))).is_err());
        assert!(integer(&n(Kind::Bool(true))).is_err());
    }

    #[test]
    fn modes_are_octal() {
        assert_eq!(mode(&n(Kind::Str("0700".into()))), Ok(0o700));
        assert_eq!(mode(&n(Kind::Str("0o644".into()))), Ok(0o644));
        assert_eq!(mode(&n(Kind::Int(448))), Ok(0o700));
        assert!(mode(&n(Kind::Str("0800".into()))).is_err());
        assert!(mode(&n(Kind::Str("077777".into()))).is_err());
    }

    #[test]
    fn ports_and_durations() {
        assert_eq!(port(&n(Kind::Int(4506))), Ok(4506));
        assert!(port(&n(Kind::Int(0))).is_err());
        assert!(port(&n(Kind::Int(65536))).is_err());
        let secs = duration(Duration::from_secs(1));
        assert_eq!(secs(&n(Kind::Int(5))), Ok(Duration::from_secs(5)));
        assert!(secs(&n(Kind::Int(-1))).is_err());
        assert_eq!(
            duration_or_unset(Duration::from_secs(1))(&n(Kind::Int(-1))),
            Ok(None)
        );
    }
}
