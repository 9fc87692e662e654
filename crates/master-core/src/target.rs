//! Target matching on the master: which accepted minion ids a `salt` call expects.
//!
//! Salt computes the expected minion set from its key list (`CkMinions.check_minions`):
//! `glob` is Python `fnmatch.fnmatch` (POSIX: case-sensitive, `*` crosses `.` and `/`,
//! `[!seq]`, no braces, no backslash escapes), `pcre` is `re.match` (anchored at the start
//! only), `list` is a list or a comma-separated string. Grain-style targets cannot be resolved
//! from keys alone, so their expected set is unknown ([`Target::expected`] returns `None`).

use regex::Regex;

/// The target type of a publish, as Salt names it in `tgt_type`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetType {
    /// `glob`: fnmatch of the id.
    Glob,
    /// `pcre`: regex match anchored at the start.
    Pcre,
    /// `list`: explicit ids.
    List,
    /// `grain`: `key:glob` matched by the minion on its grains.
    Grain,
}

impl TargetType {
    /// The wire name (`tgt_type`).
    pub fn as_str(&self) -> &'static str {
        match self {
            TargetType::Glob => "glob",
            TargetType::Pcre => "pcre",
            TargetType::List => "list",
            TargetType::Grain => "grain",
        }
    }

    /// Parse a wire name; unknown names are `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "glob" => Some(TargetType::Glob),
            "pcre" => Some(TargetType::Pcre),
            "list" => Some(TargetType::List),
            "grain" => Some(TargetType::Grain),
            _ => None,
        }
    }
}

/// A parsed target expression.
#[derive(Debug)]
pub enum Target {
    /// Compiled fnmatch pattern.
    Glob(Regex),
    /// Compiled regex, anchored at the start.
    Pcre(Regex),
    /// Explicit ids.
    List(Vec<String>),
    /// Minion-side matching only (grains): the master cannot tell who matches.
    Unknown,
}

/// A target expression that does not compile.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// The pcre expression is not a valid regular expression.
    #[error("invalid pcre target: {0}")]
    BadRegex(String),
}

impl Target {
    /// Parse `tgt` of type `tgt_type`. For `list`, `tgt` is comma-separated (the CLI form).
    pub fn parse(tgt_type: &TargetType, tgt: &str) -> Result<Self, TargetError> {
        Ok(match tgt_type {
            TargetType::Glob => Target::Glob(fnmatch_regex(tgt)),
            TargetType::Pcre => Target::Pcre(
                Regex::new(&format!("^(?:{tgt})"))
                    .map_err(|e| TargetError::BadRegex(e.to_string()))?,
            ),
            TargetType::List => Target::List(
                tgt.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect(),
            ),
            TargetType::Grain => Target::Unknown,
        })
    }

    /// Does this id match? `None` when the master cannot know.
    pub fn matches(&self, id: &str) -> Option<bool> {
        match self {
            Target::Glob(re) | Target::Pcre(re) => Some(re.is_match(id)),
            Target::List(ids) => Some(ids.iter().any(|i| i == id)),
            Target::Unknown => None,
        }
    }

    /// The expected minions among `accepted` (sorted), or `None` when unknown.
    pub fn expected<'a>(&self, accepted: impl IntoIterator<Item = &'a str>) -> Option<Vec<String>> {
        if matches!(self, Target::Unknown) {
            return None;
        }
        let mut out: Vec<String> = accepted
            .into_iter()
            .filter(|id| self.matches(id) == Some(true))
            .map(str::to_owned)
            .collect();
        out.sort();
        out.dedup();
        Some(out)
    }
}

/// Python `fnmatch.fnmatch(name, pat)` on POSIX.
pub fn fnmatch(name: &str, pattern: &str) -> bool {
    fnmatch_regex(pattern).is_match(name)
}

/// Python `fnmatch.translate` onto the `regex` crate: whole-string, dot matches newline.
pub fn fnmatch_regex(pattern: &str) -> Regex {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::from("(?s)^");
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '*' => {
                // Collapse runs of '*' like Python does.
                while chars.get(i) == Some(&'*') {
                    i += 1;
                }
                out.push_str(".*");
            }
            '?' => out.push('.'),
            '[' => {
                // Find the closing bracket: a ']' right after '[' or '[!' is literal.
                let mut j = i;
                if chars.get(j) == Some(&'!') {
                    j += 1;
                }
                if chars.get(j) == Some(&']') {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += 1;
                }
                if j >= chars.len() {
                    out.push_str("\\[");
                } else {
                    let inner: Vec<char> = chars[i..j].to_vec();
                    i = j + 1;
                    out.push_str(&char_class(&inner));
                }
            }
            other => out.push_str(&regex::escape(&other.to_string())),
        }
    }
    out.push('$');
    // Every piece is escaped or a fixed construct, so this compiles; fall back to a
    // never-matching regex rather than panic if the escaping ever misses a case.
    Regex::new(&out).unwrap_or_else(|_| never_matching())
}

fn never_matching() -> Regex {
    #[allow(clippy::unwrap_used)] // a constant, valid expression
    Regex::new("[^\\s\\S]").unwrap()
}

/// Translate the inside of an fnmatch `[...]` (without the brackets).
fn char_class(inner: &[char]) -> String {
    let (negate, body) = match inner.first() {
        Some('!') => (true, &inner[1..]),
        _ => (false, inner),
    };
    if body.is_empty() {
        // "[!]" matches any char in Python ("[]" cannot occur: the ']' would be literal).
        return if negate {
            ".".into()
        } else {
            never_matching().as_str().to_owned()
        };
    }
    let mut out = String::from("[");
    if negate {
        out.push('^');
    }
    let mut k = 0;
    while k < body.len() {
        let c = body[k];
        if k + 2 < body.len() && body[k + 1] == '-' {
            let hi = body[k + 2];
            if c <= hi {
                out.push_str(&regex::escape(&c.to_string()));
                out.push('-');
                out.push_str(&regex::escape(&hi.to_string()));
            }
            // An empty range (c > hi) matches nothing in Python; drop it.
            k += 3;
        } else {
            out.push_str(&regex::escape(&c.to_string()));
            k += 1;
        }
    }
    if out == "[" || out == "[^" {
        return if negate {
            ".".into()
        } else {
            never_matching().as_str().to_owned()
        };
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnmatch_like_python() {
        assert!(fnmatch("web1", "web*"));
        assert!(fnmatch("web1.example.com", "*.com"));
        assert!(fnmatch("a/b", "a*b"));
        assert!(!fnmatch("Web1", "web*"));
        assert!(fnmatch("web1", "web?"));
        assert!(!fnmatch("web10", "web?"));
        assert!(fnmatch("web1", "web[0-9]"));
        assert!(!fnmatch("webx", "web[0-9]"));
        assert!(fnmatch("webx", "web[!0-9]"));
        assert!(fnmatch("a]", "a[]]"));
        assert!(fnmatch("a[", "a["));
        assert!(fnmatch("a{b,c}", "a{b,c}"));
        assert!(!fnmatch("ab", "a{b,c}"));
        assert!(fnmatch("a.b", "a.b"));
        assert!(!fnmatch("axb", "a.b"));
        assert!(fnmatch("a\\b", "a\\b"));
        assert!(fnmatch("x-y", "x[-]y"));
        assert!(fnmatch("line\nbreak", "line*"));
    }

    #[test]
    fn expected_sets() {
        let ids = ["m1", "m2", "web1"];
        let t = Target::parse(&TargetType::Glob, "m*").unwrap();
        assert_eq!(t.expected(ids).unwrap(), vec!["m1", "m2"]);
        let t = Target::parse(&TargetType::Pcre, "m").unwrap();
        assert_eq!(t.expected(ids).unwrap(), vec!["m1", "m2"]);
        let t = Target::parse(&TargetType::Pcre, "eb").unwrap();
        assert_eq!(t.expected(ids).unwrap(), Vec::<String>::new());
        let t = Target::parse(&TargetType::List, "web1, m2,nope").unwrap();
        assert_eq!(t.expected(ids).unwrap(), vec!["m2", "web1"]);
        let t = Target::parse(&TargetType::Grain, "os:Linux").unwrap();
        assert!(t.expected(ids).is_none());
        assert!(Target::parse(&TargetType::Pcre, "(").is_err());
    }
}
