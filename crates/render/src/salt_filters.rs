//! Salt's own Jinja filters (`salt/utils/jinja.py`, `hashutils`, `path`): regular
//! expressions, set operations on lists, hashes, base64, shell quoting, `path_join`,
//! `traverse`.

use std::path::Path;

use base64::Engine as _;
use minijinja::value::{Kwargs, Rest, Value as Mj, ValueKind};
use minijinja::{Environment, Error, ErrorKind};
use regex::{Captures, Regex, RegexBuilder};

use crate::pytext::tuple;
use crate::values::mutable;

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg.into())
}

/// Register the filters.
pub fn add(env: &mut Environment<'_>) {
    env.add_filter("regex_search", |t: &str, r: &str, kw: Kwargs| {
        regex_find(t, r, &kw, false)
    });
    env.add_filter("regex_match", |t: &str, r: &str, kw: Kwargs| {
        regex_find(t, r, &kw, true)
    });
    env.add_filter("regex_replace", regex_replace);
    env.add_filter("regex_escape", |t: &str| regex_escape(t));
    env.add_filter("quote", |t: &str| shell_quote(t));
    env.add_filter("union", |a: Mj, b: Mj| set_op(a, b, "union"));
    env.add_filter("intersect", |a: Mj, b: Mj| set_op(a, b, "intersect"));
    env.add_filter("difference", |a: Mj, b: Mj| set_op(a, b, "difference"));
    env.add_filter("symmetric_difference", |a: Mj, b: Mj| {
        set_op(a, b, "symmetric_difference")
    });
    for (name, md) in [
        ("md5", openssl::hash::MessageDigest::md5 as fn() -> _),
        ("sha1", openssl::hash::MessageDigest::sha1),
        ("sha256", openssl::hash::MessageDigest::sha256),
        ("sha512", openssl::hash::MessageDigest::sha512),
    ] {
        env.add_filter(name, move |t: &str| -> Result<String, Error> {
            openssl::hash::hash(md(), t.as_bytes())
                .map(hex::encode)
                .map_err(|e| invalid(format!("{name}: {e}")))
        });
    }
    env.add_filter("base64_encode", |t: &str| {
        base64::engine::general_purpose::STANDARD.encode(t)
    });
    env.add_filter("base64_decode", |t: &str| -> Result<Mj, Error> {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(t)
            .map_err(|e| invalid(format!("base64_decode: {e}")))?;
        Ok(match String::from_utf8(raw) {
            Ok(s) => Mj::from(s),
            Err(e) => Mj::from_bytes(e.into_bytes()),
        })
    });
    env.add_filter("path_join", path_join);
    env.add_filter("traverse", traverse);
}

/// `traverse(data, key, default=None, delimiter=':')`: Salt's `traverse_dict_and_list`.
pub(crate) fn traverse(
    data: Mj,
    key: Mj,
    default: Option<Mj>,
    delimiter: Option<String>,
    kw: Kwargs,
) -> Result<Mj, Error> {
    let default = kw.get::<Option<Mj>>("default")?.or(default);
    let delimiter = kw.get::<Option<String>>("delimiter")?.or(delimiter);
    kw.assert_all_used()?;
    let data = crate::values::from_jinja(&data);
    let key = match key.as_str() {
        Some(k) => k.to_owned(),
        None => key.to_string(),
    };
    Ok(
        match salt_matcher::traverse(&data, &key, delimiter.as_deref().unwrap_or(":")) {
            Some(v) => crate::values::to_jinja(v),
            None => default.unwrap_or(Mj::from(())),
        },
    )
}

/// A compiled pattern with Python's `re.I` / `re.M` flags (`ignorecase`, `multiline`).
fn compile(rgx: &str, kw: &Kwargs, filter: &str) -> Result<Regex, Error> {
    let ignorecase = kw.get::<Option<bool>>("ignorecase")?.unwrap_or(false);
    let multiline = kw.get::<Option<bool>>("multiline")?.unwrap_or(false);
    kw.assert_all_used()?;
    RegexBuilder::new(rgx)
        .case_insensitive(ignorecase)
        .multi_line(multiline)
        .build()
        .map_err(|e| {
            invalid(format!(
                "{filter}: pattern {rgx:?} is not supported by salt-rs: {e}"
            ))
        })
}

/// `regex_search` / `regex_match`: the match's groups as a tuple (the whole match when the
/// pattern has none), `None` without a match.
fn regex_find(txt: &str, rgx: &str, kw: &Kwargs, anchored: bool) -> Result<Mj, Error> {
    let name = if anchored {
        "regex_match"
    } else {
        "regex_search"
    };
    // `re.match` matches at the start only.
    let pattern = if anchored {
        format!("\\A(?:{rgx})")
    } else {
        rgx.to_owned()
    };
    let caps = compile(&pattern, kw, name)?.captures(txt);
    let Some(caps) = caps else {
        return Ok(Mj::from(()));
    };
    let groups: Vec<Mj> = if caps.len() == 1 {
        vec![Mj::from(caps.get(0).map_or("", |m| m.as_str()))]
    } else {
        (1..caps.len())
            .map(|i| caps.get(i).map_or(Mj::from(()), |m| Mj::from(m.as_str())))
            .collect()
    };
    Ok(tuple(groups))
}

/// One piece of a Python replacement template.
enum Piece {
    Text(String),
    Group(usize),
    Named(String),
}

/// Python's `re.sub` template: `\1`, `\g<1>`, `\g<name>`, `\n`-style escapes, `\\`.
fn template(val: &str) -> Result<Vec<Piece>, Error> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut chars = val.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            text.push(c);
            continue;
        }
        let Some(n) = chars.next() else {
            return Err(invalid("regex_replace: bad escape (end of pattern)"));
        };
        let escaped = match n {
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            'f' => Some('\u{c}'),
            'v' => Some('\u{b}'),
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            '\\' => Some('\\'),
            _ => None,
        };
        if let Some(e) = escaped {
            text.push(e);
            continue;
        }
        let group = if n.is_ascii_digit() {
            let mut digits = n.to_string();
            if let Some(d) = chars.next_if(char::is_ascii_digit) {
                digits.push(d);
            }
            Some(Piece::Group(digits.parse().unwrap_or(0)))
        } else if n == 'g' && chars.next_if_eq(&'<').is_some() {
            let name: String = chars.by_ref().take_while(|c| *c != '>').collect();
            Some(match name.parse::<usize>() {
                Ok(i) => Piece::Group(i),
                Err(_) => Piece::Named(name),
            })
        } else if n.is_ascii_alphabetic() {
            return Err(invalid(format!("regex_replace: bad escape \\{n}")));
        } else {
            text.push('\\');
            text.push(n);
            None
        };
        if let Some(g) = group {
            out.push(Piece::Text(std::mem::take(&mut text)));
            out.push(g);
        }
    }
    out.push(Piece::Text(text));
    Ok(out)
}

/// `regex_replace(txt, rgx, val, ignorecase=False, multiline=False)`: `re.sub`.
fn regex_replace(txt: &str, rgx: &str, val: &str, kw: Kwargs) -> Result<String, Error> {
    let re = compile(rgx, &kw, "regex_replace")?;
    let pieces = template(val)?;
    Ok(re
        .replace_all(txt, |caps: &Captures<'_>| expand(&pieces, caps))
        .into_owned())
}

/// One replacement: the template with this match's groups (a group that did not take part
/// is empty, as in Python 3.5+).
fn expand(pieces: &[Piece], caps: &Captures<'_>) -> String {
    let mut s = String::new();
    for p in pieces {
        match p {
            Piece::Text(t) => s.push_str(t),
            Piece::Group(i) => s.push_str(caps.get(*i).map_or("", |m| m.as_str())),
            Piece::Named(n) => s.push_str(caps.name(n).map_or("", |m| m.as_str())),
        }
    }
    s
}

/// Python's `re.escape`: every character but `_` and ASCII letters and digits that is
/// special in a pattern gets a backslash.
fn regex_escape(t: &str) -> String {
    let mut out = String::new();
    for c in t.chars() {
        if "()[]{}?*+-|^$\\.&~# \t\n\r\u{b}\u{c}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `shlex.quote`.
fn shell_quote(t: &str) -> String {
    if t.is_empty() {
        return "''".to_owned();
    }
    let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if t.chars().all(safe) {
        return t.to_owned();
    }
    format!("'{}'", t.replace('\'', "'\"'\"'"))
}

/// Salt's `union`, `intersect`, `difference`, `symmetric_difference` of two lists: the
/// order of the first, then the second, each item once.
fn set_op(a: Mj, b: Mj, op: &str) -> Result<Mj, Error> {
    let list = |v: &Mj| -> Result<Vec<Mj>, Error> {
        match v.kind() {
            ValueKind::Seq | ValueKind::Iterable => Ok(v.try_iter()?.collect()),
            _ => Err(invalid(format!(
                "{op}: salt-rs takes two lists (Salt makes sets of other values, in no fixed order)"
            ))),
        }
    };
    let (a, b) = (list(&a)?, list(&b)?);
    let unique = |items: Vec<Mj>| {
        let mut out: Vec<Mj> = Vec::new();
        for x in items {
            if !out.contains(&x) {
                out.push(x);
            }
        }
        out
    };
    let items = match op {
        "union" => unique(a.into_iter().chain(b).collect()),
        "intersect" => unique(a.into_iter().filter(|x| b.contains(x)).collect()),
        "difference" => unique(a.into_iter().filter(|x| !b.contains(x)).collect()),
        _ => {
            let both: Vec<Mj> = a.iter().filter(|x| b.contains(x)).cloned().collect();
            unique(
                a.into_iter()
                    .chain(b)
                    .filter(|x| !both.contains(x))
                    .collect(),
            )
        }
    };
    Ok(mutable(&Mj::from(items)))
}

/// Salt's `path_join(*parts, use_posixpath=False)`: each part normalised, the later ones
/// without their leading `/`, joined and normalised.
fn path_join(parts: Rest<String>, kw: Kwargs) -> Result<String, Error> {
    let _ = kw.get::<Option<bool>>("use_posixpath")?;
    kw.assert_all_used()?;
    let norm = |p: &str| {
        salt_compat::id::normpath(Path::new(p))
            .display()
            .to_string()
    };
    let mut parts = parts.iter();
    let Some(root) = parts.next() else {
        return Ok(String::new());
    };
    let mut joined = norm(root);
    for p in parts {
        let p = norm(p);
        let p = p.trim_start_matches('/');
        if !joined.ends_with('/') {
            joined.push('/');
        }
        joined.push_str(p);
    }
    Ok(norm(&joined))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_templates_and_quoting() {
        let re = Regex::new(r"(\w+)@(?P<host>\w+)").unwrap();
        let pieces = template(r"\2 at \g<host> \g<1>\\$").unwrap();
        let out = re.replace_all("me@box", |caps: &Captures<'_>| expand(&pieces, caps));
        assert_eq!(out, r"box at box me\$");
        assert!(template(r"\q").is_err());
        assert_eq!(shell_quote("a b'c"), r#"'a b'"'"'c'"#);
        assert_eq!(shell_quote("safe/path-1.txt"), "safe/path-1.txt");
        assert_eq!(shell_quote(""), "''");
    }
}
