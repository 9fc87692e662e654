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
        Value::String(s) => match s.as_str() {
            Some(t) => {
                t.contains(&format!(",{id},"))
                    || t.starts_with(&format!("{id},"))
                    || t.ends_with(&format!(",{id}"))
                    || t == id
            }
            None => false,
        },
        Value::Array(items) => items.iter().any(|v| v.as_str() == Some(id)),
        _ => false,
    }
}

/// Salt's `traverse_dict_and_list`: walk `key` split on `delim`. In a map, a part is a key
/// (a part that reads as a number also finds that number as a key); in a list, a number is
/// an index (negative from the end) unless a dict in the list has it as a key, and a
/// non-number finds the first dict in the list that has it.
pub fn traverse<'a>(data: &'a Value, key: &str, delim: &str) -> Option<&'a Value> {
    let mut cur = data;
    for part in key.split(delim) {
        cur = match cur {
            Value::Map(_) => salt_compat::map_get(cur, part).or_else(|| number_key(cur, part))?,
            Value::Array(items) => {
                let embedded = |found: fn(&'a Value, &str) -> Option<&'a Value>| {
                    items
                        .iter()
                        .filter(|x| x.is_map())
                        .find_map(|x| found(x, part))
                };
                match part.trim().parse::<i64>() {
                    Err(_) => embedded(|m, p| salt_compat::map_get(m, p))?,
                    Ok(i) => match embedded(number_key) {
                        Some(v) => v,
                        None => {
                            let i = if i < 0 { items.len() as i64 + i } else { i };
                            items.get(usize::try_from(i).ok()?)?
                        }
                    },
                }
            }
            _ => return None,
        };
    }
    Some(cur)
}

/// A map's entry under the number `part` reads as (Salt YAML-loads a key it did not find).
fn number_key<'a>(map: &'a Value, part: &str) -> Option<&'a Value> {
    let Value::Map(entries) = map else {
        return None;
    };
    let part = part.trim();
    if !part
        .bytes()
        .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
    {
        return None;
    }
    let want = part.parse::<f64>().ok()?;
    entries
        .iter()
        .rev()
        .find(|(k, _)| match k {
            Value::Integer(i) => i.as_f64() == Some(want),
            Value::F64(f) => *f == want,
            Value::F32(f) => f64::from(*f) == want,
            _ => false,
        })
        .map(|(_, v)| v)
}

fn value_match(target: &Value, pattern: &str, regex: bool) -> bool {
    let target = salt_compat::py_str(target).to_lowercase();
    let pattern = pattern.to_lowercase();
    if regex {
        pcre_match(&pattern, &target)
    } else {
        fnmatch(&target, &pattern)
    }
}

fn dict_match(target: &Value, pattern: &str, delim: &str, regex: bool) -> bool {
    let Value::Map(entries) = target else {
        return false;
    };
    let (wildcard, pattern) = match pattern.strip_prefix("*:") {
        Some(rest) => (true, rest),
        None => (false, pattern),
    };
    if pattern == "*" || salt_compat::map_get(target, pattern).is_some() {
        return true;
    }
    if entries.iter().any(|(k, _)| value_match(k, pattern, regex)) {
        return true;
    }
    if subdict_match(target, pattern, delim, regex) {
        return true;
    }
    if wildcard {
        for (_, v) in entries {
            let hit = match v {
                Value::Map(_) => dict_match(v, pattern, delim, regex),
                Value::Array(items) => items.iter().any(|i| value_match(i, pattern, regex)),
                other => value_match(other, pattern, regex),
            };
            if hit {
                return true;
            }
        }
    }
    false
}

/// Salt's `subdict_match(data, expr, delimiter, regex_match)`: the deepest key split
/// is tried first; values match case-insensitively by glob (or regex).
pub fn subdict_match(data: &Value, expr: &str, delim: &str, regex: bool) -> bool {
    let splits: Vec<&str> = expr.split(delim).collect();
    if splits.len() < 2 {
        return false;
    }
    for idx in (1..splits.len()).rev() {
        let key = splits[..idx].join(delim);
        let (matchstr, found) = if key == "*" {
            (expr.to_owned(), Some(data))
        } else {
            (splits[idx..].join(delim), traverse(data, &key, delim))
        };
        let Some(found) = found else { continue };
        match found {
            Value::Map(entries) if entries.is_empty() => continue,
            Value::Map(_) => {
                if dict_match(found, &matchstr, delim, regex) {
                    return true;
                }
            }
            Value::Array(items) => {
                for member in items {
                    let hit = match member {
                        Value::Map(_) => dict_match(member, &matchstr, delim, regex),
                        Value::Array(_) => false,
                        other => value_match(other, &matchstr, regex),
                    };
                    if hit {
                        return true;
                    }
                }
            }
            other => {
                if value_match(other, &matchstr, regex) {
                    return true;
                }
            }
        }
    }
    false
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
