//! Python's `fnmatch` (CPython 3.11), the one port for every glob Salt matches with it:
//! targets, key names (`salt-key -a GLOB`), ACLs, event tags, config globs, state ids.
//!
//! * `*` any run of characters (including none), `?` exactly one character;
//! * `[seq]` one character in seq, `[!seq]` one character not in seq; `]` first in the set
//!   is literal; `a-z` ranges, with CPython's quirks (a reversed range such as `[z-a]` is
//!   dropped, a `-` first or last is literal, `[a-c-e]` is `a`..`c`, `-`, `e`);
//!   an unclosed `[` is a literal `[`;
//! * everything else is literal, `\\` included (there is no way to quote);
//! * no braces, no case folding (`fnmatchcase`, which `fnmatch` is on POSIX), the whole name
//!   must match, `*` matches `/` and newlines.
//!
//! The translation builds the exact character-set text CPython hands to `re`, then parses
//! it the way `sre_parse` parses a set, and emits a `regex` crate expression.

use regex::Regex;

/// A pattern Python's `fnmatch` would raise on (a bad range), or one too large to compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FnmatchError {
    /// The pattern.
    pub pattern: String,
    /// Why.
    pub reason: String,
}

impl std::fmt::Display for FnmatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bad glob {:?}: {}", self.pattern, self.reason)
    }
}

impl std::error::Error for FnmatchError {}

/// Size limit of one compiled glob (a long list of `salt-key` globs stays under it).
pub const SIZE_LIMIT: usize = 64 << 20;

/// Compile an anchored regex from translated alternatives (`(?s)`, whole-name match).
///
/// # Errors
/// The pattern (named `source`) is too large for the regex engine.
pub fn compile(alternatives: &[String], source: &str) -> Result<Regex, FnmatchError> {
    regex::RegexBuilder::new(&format!("^(?s:{})$", alternatives.join("|")))
        .size_limit(SIZE_LIMIT)
        .build()
        .map_err(|e| FnmatchError {
            pattern: source.to_owned(),
            reason: e.to_string(),
        })
}

/// Python's `fnmatch.fnmatchcase(name, pattern)`; a pattern Python raises on matches nothing
/// (see [`try_fnmatch`] for the error).
pub fn fnmatch(name: &str, pattern: &str) -> bool {
    try_fnmatch(name, pattern).unwrap_or(false)
}

/// Python's `fnmatch.fnmatchcase(name, pattern)`.
///
/// # Errors
/// A bad character range (Python raises `re.error`), or a pattern too large to compile.
pub fn try_fnmatch(name: &str, pattern: &str) -> Result<bool, FnmatchError> {
    // A pattern without `*`, `?` or `[` is its own text (its regex is the escaped literal,
    // matched whole): grain targets mostly compare such values, once per cached minion.
    if !pattern.contains(['*', '?', '[']) {
        return Ok(name == pattern);
    }
    if let Some(hit) = COMPILED.with(|c| c.borrow().get(pattern).map(|re| re.is_match(name))) {
        return Ok(hit);
    }
    let re = match translate(pattern)? {
        None => return Ok(false),
        Some(re) => compile(&[re], pattern)?,
    };
    let hit = re.is_match(name);
    COMPILED.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= COMPILED_MAX {
            c.clear();
        }
        c.insert(pattern.to_owned(), re);
    });
    Ok(hit)
}

/// How many compiled globs a thread keeps ([`try_fnmatch`] is called once per cached
/// minion with the same pattern when the master matches a grain target; compiling it each
/// time cost more than the match).
const COMPILED_MAX: usize = 256;

thread_local! {
    static COMPILED: std::cell::RefCell<std::collections::HashMap<String, Regex>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// The anchored regex source text of `pattern` (Python's `fnmatch.translate`, as the
/// `regex` crate reads it); a pattern that can never match gives a regex that matches
/// nothing.
pub fn fnmatch_to_regex(pattern: &str) -> String {
    match translate(pattern) {
        Ok(Some(re)) => format!(r"(?s)\A(?:{re})\z"),
        _ => r"[^\x{0}-\x{10FFFF}]".to_owned(),
    }
}

/// Translate one fnmatch pattern to a `regex` expression (without anchors).
/// `None` means the pattern can never match (it contains an empty set).
pub fn translate(pat: &str) -> Result<Option<String>, FnmatchError> {
    let chars: Vec<char> = pat.chars().collect();
    let n = chars.len();
    let mut out = String::new();
    let mut i = 0;
    let mut last_star = false;
    while i < n {
        let c = chars[i];
        i += 1;
        match c {
            '*' => {
                if !last_star {
                    out.push_str(".*");
                }
                last_star = true;
                continue;
            }
            '?' => out.push('.'),
            '[' => {
                let mut j = i;
                if j < n && chars[j] == '!' {
                    j += 1;
                }
                if j < n && chars[j] == ']' {
                    j += 1;
                }
                while j < n && chars[j] != ']' {
                    j += 1;
                }
                if j >= n {
                    out.push_str(r"\[");
                } else {
                    let stuff = set_text(&chars, i, j);
                    i = j + 1;
                    if stuff.is_empty() {
                        return Ok(None);
                    } else if stuff == "!" {
                        out.push('.');
                    } else {
                        let set = parse_python_set(&stuff).ok_or_else(|| FnmatchError {
                            pattern: pat.to_owned(),
                            reason: "bad character range".to_owned(),
                        })?;
                        out.push_str(&set);
                    }
                }
            }
            c => out.push_str(&regex::escape(c.encode_utf8(&mut [0; 4]))),
        }
        last_star = false;
    }
    Ok(Some(out))
}

/// The text CPython's `fnmatch.translate` puts between `[` and `]` for `pat[i..j]`
/// (before turning a leading `!` into `^`).
fn set_text(chars: &[char], mut i: usize, j: usize) -> String {
    let stuff: String = chars[i..j].iter().collect();
    let escaped = if !stuff.contains('-') {
        stuff.replace('\\', r"\\")
    } else {
        let mut chunks: Vec<String> = Vec::new();
        let mut k = if chars[i] == '!' { i + 2 } else { i + 1 };
        loop {
            // pat.find('-', k, j)
            let found = (k..j).find(|&p| chars[p] == '-');
            let Some(p) = found else { break };
            chunks.push(chars[i..p].iter().collect());
            i = p + 1;
            k = p + 3;
        }
        let chunk: String = chars[i..j].iter().collect();
        if !chunk.is_empty() {
            chunks.push(chunk);
        } else if let Some(last) = chunks.last_mut() {
            last.push('-');
        }
        // Remove empty ranges -- invalid in RE.
        let mut k = chunks.len().saturating_sub(1);
        while k > 0 {
            let prev_last = chunks[k - 1].chars().last();
            let cur_first = chunks[k].chars().next();
            if let (Some(a), Some(b)) = (prev_last, cur_first)
                && a > b
            {
                let mut merged: String = {
                    let mut p = chunks[k - 1].clone();
                    p.pop();
                    p
                };
                merged.extend(chunks[k].chars().skip(1));
                chunks[k - 1] = merged;
                chunks.remove(k);
            }
            k -= 1;
        }
        chunks
            .iter()
            .map(|s| s.replace('\\', r"\\").replace('-', r"\-"))
            .collect::<Vec<_>>()
            .join("-")
    };
    // Escape set operations (&&, ~~ and ||).
    let mut stuff = String::with_capacity(escaped.len());
    for c in escaped.chars() {
        if matches!(c, '&' | '~' | '|') {
            stuff.push('\\');
        }
        stuff.push(c);
    }
    stuff
}

/// Parse the set text the way `sre_parse` does (after fnmatch's `!` → `^`, `^`/`[` → escaped)
/// and emit an equivalent `regex` character class. `None` on a bad range (Python raises).
fn parse_python_set(stuff: &str) -> Option<String> {
    let mut chars: Vec<char> = stuff.chars().collect();
    let negate = chars.first() == Some(&'!');
    if negate {
        chars.remove(0);
    } else if matches!(chars.first(), Some('^') | Some('[')) {
        chars.insert(0, '\\');
    }
    // Items: (lo, hi) inclusive code point ranges.
    let mut items: Vec<(char, char)> = Vec::new();
    let mut p = 0;
    let next = |p: &mut usize| -> Option<char> {
        let c = *chars.get(*p)?;
        *p += 1;
        if c == '\\' {
            // fnmatch only produces escapes of punctuation: \\ \- \& \~ \| \^ \[
            let e = *chars.get(*p)?;
            *p += 1;
            Some(e)
        } else {
            Some(c)
        }
    };
    // fnmatch always closes the set, and the text never contains an unescaped ']' except
    // possibly as the first character, which sre treats as a literal.
    while p < chars.len() {
        let code1 = next(&mut p)?;
        if chars.get(p) == Some(&'-') && p + 1 < chars.len() {
            p += 1;
            let code2 = next(&mut p)?;
            if code2 < code1 {
                return None;
            }
            items.push((code1, code2));
        } else if chars.get(p) == Some(&'-') {
            // '-' last: literal.
            p += 1;
            items.push((code1, code1));
            items.push(('-', '-'));
        } else {
            items.push((code1, code1));
        }
    }
    let mut out = String::from("[");
    if negate {
        out.push('^');
    }
    for (lo, hi) in items {
        out.push_str(&format!("\\x{{{:x}}}", u32::from(lo)));
        if hi != lo {
            out.push_str(&format!("-\\x{{{:x}}}", u32::from(hi)));
        }
    }
    out.push(']');
    Some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn m(name: &str, pat: &str) -> bool {
        try_fnmatch(name, pat).unwrap()
    }

    #[test]
    fn basics() {
        assert!(m("web1", "web*"));
        assert!(m("web", "web*"));
        assert!(!m("Web1", "web*"));
        assert!(m("a/b", "a*b"));
        assert!(m("a\nb", "a?b"));
        assert!(m("x", "?"));
        assert!(!m("xy", "?"));
        assert!(m("ü", "?"));
        assert!(m("b", "[abc]"));
        assert!(!m("d", "[abc]"));
        assert!(m("d", "[!abc]"));
        assert!(m("]", "[]]"));
        assert!(m("]", "[!a]"));
        assert!(!m("]", "[!]]"));
        assert!(m("[", "["));
        assert!(m("[a", "[a"));
        assert!(m("a\\b", "a\\b"));
        assert!(m("{a,b}", "{a,b}"));
        assert!(!m("a", "[z-a]"));
        assert!(m("-", "[a-c-e]"));
        assert!(m("e", "[a-c-e]"));
        assert!(!m("d", "[a-c-e]"));
        assert!(m("-", "[-a]"));
        assert!(m("-", "[a-]"));
        assert!(m("^", "[^]"));
        assert!(!m("x", "[!]"));
        assert!(m("[!]", "[!]"));
        assert!(m("a.b", "a.b"));
        assert!(!m("axb", "a.b"));
        assert!(m("a+b", "a+b"));
        assert!(m("&", "[&~|]"));
    }

    #[test]
    fn regex_text() {
        let re = Regex::new(&fnmatch_to_regex("web[0-9]*")).unwrap();
        assert!(re.is_match("web1x"));
        assert!(!re.is_match("xweb1"));
        assert!(
            !Regex::new(&fnmatch_to_regex("[z-a]"))
                .unwrap()
                .is_match("a")
        );
        assert!(try_fnmatch("x", "[b-a-]").is_ok());
    }
}
