//! The single-expression matchers (`salt/matchers/*.py`) and the data helpers they share:
//!
//! * `glob`: Python `fnmatch.fnmatch` (case-sensitive on POSIX; `*`, `?`, `[seq]`,
//!   `[!seq]`; `*` crosses `.` and `/`; no braces, no backslash escapes),
//! * `pcre`: Python `re.match` (anchored at the start only),
//! * `list`: a list containing the id, or a comma-separated string containing it,
//! * `grain` / `grain_pcre` / `pillar` / `pillar_pcre`: Salt's `subdict_match` with a
//!   delimiter (default `:`) and case-insensitive glob/regex on the values.

use regex::Regex;
use rmpv::Value;

use crate::subdict::{KeyPart, Subdict, traverse_parts};

/// Salt's default delimiter for nested grain keys.
pub const DEFAULT_DELIMITER: &str = ":";

/// Python `fnmatch.fnmatchcase(name, pattern)` and `fnmatch.translate`: the one port.
pub use salt_compat::fnmatch::{fnmatch, fnmatch_to_regex};

/// Python `re.match(pattern, text)`: anchored at the start only. An invalid
/// pattern matches nothing.
pub fn pcre_match(pattern: &str, text: &str) -> bool {
    if let Some(hit) = PCRE.with(|c| {
        c.borrow()
            .get(pattern)
            .map(|re| re.as_ref().is_some_and(|re| re.is_match(text)))
    }) {
        return hit;
    }
    let re = Regex::new(&format!("\\A(?:{pattern})")).ok();
    let hit = re.as_ref().is_some_and(|re| re.is_match(text));
    PCRE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= PCRE_MAX {
            c.clear();
        }
        c.insert(pattern.to_owned(), re);
    });
    hit
}

/// How many compiled patterns (or invalid ones, `None`) a thread keeps for [`pcre_match`]:
/// a `grain_pcre` target is matched once per cached minion with the same pattern.
const PCRE_MAX: usize = 256;

thread_local! {
    static PCRE: std::cell::RefCell<std::collections::HashMap<String, Option<Regex>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// Salt's `list_match`.
pub fn list_match(tgt: &Value, id: &str) -> bool {
    match tgt {
        Value::String(s) => s.as_str().is_some_and(|t| list_str_match(t, id)),
        Value::Array(items) => items.iter().any(|v| v.as_str() == Some(id)),
        _ => false,
    }
}

/// `list_match` on a comma-separated string: `",id," in t`, `t.startswith("id,")`,
/// `t.endswith(",id")` or `t == id` (so an id holding a comma is found too), without
/// allocating.
pub(crate) fn list_str_match(t: &str, id: &str) -> bool {
    if t == id {
        return true;
    }
    let b = t.as_bytes();
    let mut from = 0;
    while let Some(pos) = t[from..].find(id) {
        let p = from + pos;
        let end = p + id.len();
        let comma_before = p > 0 && b[p - 1] == b',';
        let comma_after = b.get(end) == Some(&b',');
        if (comma_after && (comma_before || p == 0)) || (comma_before && end == b.len()) {
            return true;
        }
        match t[p..].chars().next() {
            Some(c) => from = p + c.len_utf8(),
            None => break,
        }
    }
    false
}

/// Salt's `traverse_dict_and_list`: walk `key` split on `delim`. In a map, a part is a key
/// (a part that reads as a number also finds that number as a key); in a list, a number is
/// an index (negative from the end) unless a dict in the list has it as a key, and a
/// non-number finds the first dict in the list that has it.
pub fn traverse<'a>(data: &'a Value, key: &str, delim: &str) -> Option<&'a Value> {
    let parts: Vec<KeyPart> = key.split(delim).map(KeyPart::new).collect();
    traverse_parts(data, &parts)
}

/// Salt's `subdict_match(data, expr, delimiter, regex_match)`: the deepest key split
/// is tried first; values match case-insensitively by glob (or regex). To test one
/// expression against many minions, compile it once ([`Subdict`]).
pub fn subdict_match(data: &Value, expr: &str, delim: &str, regex: bool) -> bool {
    Subdict::new(expr, delim, regex).matches(data)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;

    fn s(v: &str) -> Value {
        Value::from(v)
    }

    #[test]
    fn fnmatch_semantics_like_python() {
        assert!(fnmatch("web1", "web*"));
        assert!(fnmatch("web1.example.com", "*.example.com"));
        assert!(fnmatch("a/b", "a*b"), "* crosses /");
        assert!(fnmatch("web1", "web?"));
        assert!(!fnmatch("web10", "web?"));
        assert!(fnmatch("web1", "web[0-9]"));
        assert!(!fnmatch("weba", "web[0-9]"));
        assert!(fnmatch("weba", "web[!0-9]"));
        assert!(fnmatch("web]", "web[]]"));
        assert!(!fnmatch("web]", "web[!]a]"));
        assert!(fnmatch("webx", "web[!]a]"));
        assert!(fnmatch("web-", "web[a-]"));
        assert!(fnmatch("web[", "web["), "unclosed [ is literal");
        assert!(!fnmatch("Web1", "web*"), "case-sensitive");
        assert!(fnmatch("{a,b}", "{a,b}"), "no brace expansion");
        assert!(!fnmatch("a", "{a,b}"));
        assert!(fnmatch("a.b", "a.b"));
        assert!(!fnmatch("axb", "a.b"), ". is literal");
        assert!(fnmatch("a\\b", "a\\b"), "backslash literal");
        assert!(fnmatch("x^$+()|", "x^$+()|"));
        assert!(fnmatch("line\nbreak", "line*"));
        assert!(!fnmatch("web1x", "web1"), "anchored at end");
        assert!(fnmatch("", "*"));
        assert!(fnmatch("a&&b", "a[&]&b"));
    }

    #[test]
    fn negated_set_with_bracket() {
        // Python: fnmatch('x', '[!]]') is True, fnmatch(']', '[!]]') is False.
        assert!(fnmatch("x", "[!]]"));
        assert!(!fnmatch("]", "[!]]"));
    }

    #[test]
    fn pcre_is_anchored_at_start_only() {
        assert!(pcre_match("web", "web1"));
        assert!(!pcre_match("eb", "web1"));
        assert!(pcre_match("web\\d+$", "web12"));
        assert!(!pcre_match("(", "x"), "invalid regex matches nothing");
    }

    #[test]
    fn list_matching() {
        assert!(list_match(&s("a,b,c"), "b"));
        assert!(list_match(&s("b,c"), "b"));
        assert!(list_match(&s("a,b"), "b"));
        assert!(list_match(&s("b"), "b"));
        assert!(!list_match(&s("bb,c"), "b"));
        assert!(list_match(&Value::Array(vec![s("x"), s("b")]), "b"));
        assert!(!list_match(&Value::Array(vec![s("x")]), "b"));
        assert!(!list_match(&Value::from(3), "b"));
        // The comma forms, an id holding a comma, an empty id.
        for (t, id, want) in [
            ("aa,aaa,aa", "aa", true),
            ("aaa,aab", "aa", false),
            ("x,a,b,y", "a,b", true),
            ("a,b", "a,b", true),
            ("a,bc", "a,b", false),
            ("a,,b", "", true),
            ("a,b", "", false),
            (",", "", true),
            ("", "", true),
            ("ü,b", "ü", true),
            ("xü,b", "ü", false),
        ] {
            let old = t.contains(&format!(",{id},"))
                || t.starts_with(&format!("{id},"))
                || t.ends_with(&format!(",{id}"))
                || t == id;
            assert_eq!(old, want, "{t:?} {id:?}");
            assert_eq!(list_str_match(t, id), want, "{t:?} {id:?}");
        }
    }

    /// Grains shared by the matcher tests.
    pub(crate) fn grains() -> Value {
        Value::Map(vec![
            (s("os"), s("Debian")),
            (s("num_cpus"), Value::from(2)),
            (s("ipv4"), Value::Array(vec![s("127.0.0.1"), s("10.0.0.5")])),
            (
                s("roles"),
                Value::Map(vec![
                    (s("web"), Value::Boolean(true)),
                    (s("tier"), s("front")),
                ]),
            ),
            (s("url"), s("http://x")),
            (s("virtual"), Value::Boolean(false)),
        ])
    }

    #[test]
    fn traverse_nested() {
        let g = grains();
        assert_eq!(traverse(&g, "roles:tier", ":"), Some(&s("front")));
        assert_eq!(traverse(&g, "ipv4:1", ":"), Some(&s("10.0.0.5")));
        assert_eq!(traverse(&g, "roles:nope", ":"), None);
        assert_eq!(traverse(&g, "ipv4:-1", ":"), Some(&s("10.0.0.5")));
        // Salt's list rules: a dict in the list that has the key; a number key in a map.
        let v = Value::Map(vec![(
            s("l"),
            Value::Array(vec![
                s("x"),
                Value::Map(vec![(s("k"), s("in-dict")), (Value::from(0), s("zero"))]),
            ]),
        )]);
        assert_eq!(traverse(&v, "l:k", ":"), Some(&s("in-dict")));
        assert_eq!(traverse(&v, "l:0", ":"), Some(&s("zero")));
        assert_eq!(traverse(&v, "l:1:0", ":"), Some(&s("zero")));
        assert_eq!(traverse(&v, "l:inf", ":"), None);
    }
}
