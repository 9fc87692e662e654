//! Salt's YAML loading (`salt/utils/yamlloader.py` on PyYAML's YAML 1.1 resolver). The
//! dumping behind the `yaml` filters is in `yaml_dump`.
//!
//! Plain scalars resolve as YAML 1.1: `yes`/`no`/`on`/`off`/`true`/`false` (three casings)
//! are booleans, `~`/`null`/empty are null, `0b`/`0x`/sexagesimal integers, and Salt's twist
//! on octal: a leading `0` is stripped, so `0644` loads as the integer `644`. Timestamps stay
//! strings. Duplicate keys are an error (`found conflicting ID`), `<<` merges as PyYAML.

use std::collections::HashMap;

use granit_parser::{Event, Parser, ScalarStyle};
use rmpv::Value;

/// A YAML document that does not load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct YamlError(pub String);

/// A composed YAML node: a scalar (its text, whether plain, its tag), a sequence or a mapping
/// (with its tag).
#[derive(Clone, Debug)]
pub(crate) enum Node {
    Scalar(String, bool, Option<String>),
    Seq(Vec<Node>, Option<String>),
    Map(Vec<(Node, Node)>, Option<String>),
}

/// Load one YAML document; an empty document is `None` (Salt's `safe_load` gives `None`).
pub fn load(text: &str) -> Result<Option<Value>, YamlError> {
    match compose(text)? {
        None => Ok(None),
        Some(n) => construct(n).map(Some),
    }
}

/// The node of the one document of `text` (aliases resolved), `None` for no document.
pub(crate) fn compose(text: &str) -> Result<Option<Node>, YamlError> {
    let mut parser = Parser::new_from_str(text);
    let mut anchors: HashMap<usize, Node> = HashMap::new();
    let mut stack: Vec<(Node, usize)> = Vec::new();
    let mut pending_key: Vec<Option<Node>> = Vec::new();
    let mut docs: Vec<Node> = Vec::new();
    while let Some(ev) = parser.next_event() {
        let (ev, span) = ev.map_err(|e| YamlError(e.to_string()))?;
        let finished: Option<(Node, usize)> = match ev {
            Event::Scalar(v, style, anchor, tag) => {
                let tag = tag.map(|t| format!("{}{}", t.handle(), t.suffix()));
                Some((
                    Node::Scalar(v.into_owned(), style == ScalarStyle::Plain, tag),
                    anchor,
                ))
            }
            Event::SequenceStart(_, anchor, tag) => {
                let tag = tag.map(|t| format!("{}{}", t.handle(), t.suffix()));
                stack.push((Node::Seq(Vec::new(), tag), anchor));
                pending_key.push(None);
                None
            }
            Event::MappingStart(_, anchor, tag) => {
                let tag = tag.map(|t| format!("{}{}", t.handle(), t.suffix()));
                stack.push((Node::Map(Vec::new(), tag), anchor));
                pending_key.push(None);
                None
            }
            Event::SequenceEnd | Event::MappingEnd => {
                pending_key.pop();
                stack.pop()
            }
            Event::Alias(id) => match anchors.get(&id) {
                Some(n) => Some((n.clone(), 0)),
                None => {
                    return Err(YamlError(format!(
                        "found undefined alias at line {}",
                        span.start.line()
                    )));
                }
            },
            Event::DocumentStart(..) if !docs.is_empty() => {
                return Err(YamlError(
                    "expected a single document in the stream but found another document"
                        .to_owned(),
                ));
            }
            _ => None,
        };
        let Some((node, anchor)) = finished else {
            continue;
        };
        if anchor != 0 {
            anchors.insert(anchor, node.clone());
        }
        match stack.last_mut() {
            None => docs.push(node),
            Some((Node::Seq(items, _), _)) => items.push(node),
            Some((Node::Map(entries, _), _)) => {
                let slot = pending_key
                    .last_mut()
                    .ok_or_else(|| YamlError("bad nesting".into()))?;
                match slot.take() {
                    None => *slot = Some(node),
                    Some(k) => entries.push((k, node)),
                }
            }
            Some((Node::Scalar(..), _)) => return Err(YamlError("bad nesting".into())),
        }
    }
    Ok(docs.pop())
}

fn construct(node: Node) -> Result<Value, YamlError> {
    match node {
        Node::Scalar(v, plain, tag) => scalar(&v, plain, tag.as_deref()),
        Node::Seq(items, _) => Ok(Value::Array(
            items.into_iter().map(construct).collect::<Result<_, _>>()?,
        )),
        Node::Map(entries, _) => {
            let entries = flatten(entries)?;
            let mut out: Vec<(Value, Value)> = Vec::with_capacity(entries.len());
            for (k, v) in entries {
                let key = construct(k)?;
                if matches!(key, Value::Map(_) | Value::Array(_)) {
                    return Err(YamlError("found unacceptable key (unhashable)".to_owned()));
                }
                if out.iter().any(|(e, _)| *e == key) {
                    return Err(YamlError(format!(
                        "found conflicting ID '{}'",
                        salt_compat::py_str(&key)
                    )));
                }
                let value = construct(v)?;
                out.push((key, value));
            }
            Ok(Value::Map(out))
        }
    }
}

fn is_merge_key(n: &Node) -> bool {
    matches!(n, Node::Scalar(k, true, None) if k == "<<")
}

/// PyYAML's `flatten_mapping` with Salt's rule: merged keys do not override explicit ones.
fn flatten(entries: Vec<(Node, Node)>) -> Result<Vec<(Node, Node)>, YamlError> {
    let mut merge: Vec<(Node, Node)> = Vec::new();
    let mut own: Vec<(Node, Node)> = Vec::new();
    for (k, v) in entries {
        if !is_merge_key(&k) {
            own.push((k, v));
            continue;
        }
        match v {
            Node::Map(m, _) => merge.extend(flatten(m)?),
            Node::Seq(items, _) => {
                let mut sub = Vec::new();
                for item in items {
                    match item {
                        Node::Map(m, _) => sub.push(flatten(m)?),
                        _ => {
                            return Err(YamlError(
                                "expected a mapping for merging, but found a non-mapping"
                                    .to_owned(),
                            ));
                        }
                    }
                }
                for m in sub.into_iter().rev() {
                    merge.extend(m);
                }
            }
            _ => {
                return Err(YamlError(
                    "expected a mapping or list of mappings for merging".to_owned(),
                ));
            }
        }
    }
    if merge.is_empty() {
        return Ok(own);
    }
    let text = |n: &Node| match n {
        Node::Scalar(s, ..) => Some(s.clone()),
        _ => None,
    };
    let existing: Vec<Option<String>> = own.iter().map(|(k, _)| text(k)).collect();
    let mut out: Vec<(Node, Node)> = merge
        .into_iter()
        .filter(|(k, _)| text(k).is_none() || !existing.contains(&text(k)))
        .collect();
    out.extend(own);
    Ok(out)
}

const STR: &str = "tag:yaml.org,2002:str";

pub(crate) fn scalar(v: &str, plain: bool, tag: Option<&str>) -> Result<Value, YamlError> {
    let kind = match tag {
        Some("!") | Some(STR) => return Ok(Value::from(v)),
        Some(t) => match t.strip_prefix("tag:yaml.org,2002:") {
            Some(k @ ("int" | "float" | "bool" | "null" | "timestamp")) => k,
            Some("binary") => return Ok(Value::from(v)),
            _ => {
                return Err(YamlError(format!(
                    "could not determine a constructor for the tag '{t}'"
                )));
            }
        },
        None if !plain => return Ok(Value::from(v)),
        None => resolve(v),
    };
    let bad = || YamlError(format!("invalid {kind} scalar {v:?}"));
    Ok(match kind {
        "null" => Value::Nil,
        "bool" => Value::Boolean(matches!(
            v.to_ascii_lowercase().as_str(),
            "yes" | "true" | "on" | "y"
        )),
        "int" => int(v).ok_or_else(bad)?,
        "float" => Value::F64(float(v).ok_or_else(bad)?),
        _ => Value::from(v),
    })
}

/// PyYAML's implicit resolvers (YAML 1.1), as a tag name.
pub(crate) fn resolve(v: &str) -> &'static str {
    const BOOLS: [&str; 18] = [
        "yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE",
        "on", "On", "ON", "off", "Off", "OFF",
    ];
    if matches!(v, "" | "~" | "null" | "Null" | "NULL") {
        "null"
    } else if BOOLS.contains(&v) {
        "bool"
    } else if is_int(v) {
        "int"
    } else if is_float(v) {
        "float"
    } else {
        "str"
    }
}

/// Whether PyYAML's `Resolver` (the dumper's) reads a plain scalar back as a `str`: [`resolve`]
/// plus the `timestamp`, `merge` (`<<`) and `value` (`=`) resolvers.
pub(crate) fn plain_is_str(s: &str) -> bool {
    resolve(s) == "str" && s != "<<" && s != "=" && !is_timestamp(s)
}

/// PyYAML's timestamp pattern: `YYYY-MM-DD`, or `YYYY-M-D` then `T`/`t`/blanks, `H:MM:SS`,
/// an optional fraction, and an optional zone (`Z`, `+H`, `-HH:MM`) after optional blanks.
fn is_timestamp(s: &str) -> bool {
    /// `[0-9]{min,max}` at the start of `s`: what follows.
    fn digits(s: &str, min: usize, max: usize) -> Option<&str> {
        let n = s.bytes().take(max).take_while(u8::is_ascii_digit).count();
        (n >= min).then(|| &s[n..])
    }
    let b = s.as_bytes();
    if b.len() == 10 && b[4] == b'-' && b[7] == b'-' {
        let ok = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
        if ok(0..4) && ok(5..7) && ok(8..10) {
            return true;
        }
    }
    let long = || -> Option<()> {
        let r = digits(s, 4, 4)?.strip_prefix('-')?;
        let r = digits(digits(r, 1, 2)?.strip_prefix('-')?, 1, 2)?;
        let r = match r.strip_prefix(['T', 't']) {
            Some(r) => r,
            None if r.starts_with([' ', '\t']) => r.trim_start_matches([' ', '\t']),
            None => return None,
        };
        let r = digits(digits(r, 1, 2)?.strip_prefix(':')?, 2, 2)?;
        let mut r = digits(r.strip_prefix(':')?, 2, 2)?;
        if let Some(f) = r.strip_prefix('.') {
            r = f.trim_start_matches(|c: char| c.is_ascii_digit());
        }
        if r.is_empty() {
            return Some(());
        }
        let r = r.trim_start_matches([' ', '\t']);
        if r == "Z" {
            return Some(());
        }
        let r = digits(r.strip_prefix(['-', '+'])?, 1, 2)?;
        let r = match r.strip_prefix(':') {
            Some(m) => digits(m, 2, 2)?,
            None => r,
        };
        r.is_empty().then_some(())
    };
    long().is_some()
}

fn split_sign(v: &str) -> (bool, &str) {
    match v.as_bytes().first() {
        Some(b'-') => (true, &v[1..]),
        Some(b'+') => (false, &v[1..]),
        _ => (false, v),
    }
}

fn all(s: &str, ok: impl Fn(char) -> bool) -> bool {
    !s.is_empty() && s.chars().all(ok)
}

fn is_sexagesimal_tail(parts: &[&str]) -> bool {
    !parts.is_empty()
        && parts.iter().all(|p| {
            (1..=2).contains(&p.len())
                && all(p, |c| c.is_ascii_digit())
                && (p.len() == 1 || p.as_bytes()[0] <= b'5')
        })
}

fn is_int(v: &str) -> bool {
    let (_, b) = split_sign(v);
    if let Some(r) = b.strip_prefix("0b") {
        return all(r, |c| c == '0' || c == '1' || c == '_');
    }
    if let Some(r) = b.strip_prefix("0x") {
        return all(r, |c| c.is_ascii_hexdigit() || c == '_');
    }
    if b == "0" {
        return true;
    }
    if let Some(r) = b.strip_prefix('0') {
        return all(r, |c| ('0'..='7').contains(&c) || c == '_');
    }
    let parts: Vec<&str> = b.split(':').collect();
    let head = parts[0];
    let head_ok = head.starts_with(|c: char| ('1'..='9').contains(&c))
        && all(head, |c| c.is_ascii_digit() || c == '_');
    head_ok && (parts.len() == 1 || is_sexagesimal_tail(&parts[1..]))
}

fn is_float(v: &str) -> bool {
    let (_, b) = split_sign(v);
    if matches!(b, ".inf" | ".Inf" | ".INF") || matches!(v, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    let (mant, exp) = match b.find(['e', 'E']) {
        Some(i) => (&b[..i], Some(&b[i + 1..])),
        None => (b, None),
    };
    if let Some(e) = exp {
        let ok = (e.starts_with('+') || e.starts_with('-')) && all(&e[1..], |c| c.is_ascii_digit());
        if !ok {
            return false;
        }
    }
    let Some((int_part, frac)) = mant.split_once('.') else {
        return false;
    };
    let frac_ok = frac.chars().all(|c| c.is_ascii_digit() || c == '_');
    if int_part.is_empty() {
        // PyYAML: `\.[0-9][0-9_]*([eE][-+][0-9]+)?`, unsigned (`.conf`, a relative include,
        // and `-.5` are strings)
        return frac_ok && frac.starts_with(|c: char| c.is_ascii_digit()) && b.len() == v.len();
    }
    if int_part.contains(':') {
        let parts: Vec<&str> = int_part.split(':').collect();
        return exp.is_none()
            && frac_ok
            && parts[0].starts_with(|c: char| c.is_ascii_digit())
            && all(parts[0], |c| c.is_ascii_digit() || c == '_')
            && is_sexagesimal_tail(&parts[1..]);
    }
    frac_ok
        && int_part.starts_with(|c: char| c.is_ascii_digit())
        && all(int_part, |c| c.is_ascii_digit() || c == '_')
}

/// Salt's `construct_scalar` (leading zeros stripped) then PyYAML's `construct_yaml_int`.
fn int(v: &str) -> Option<Value> {
    let mut s: String = v.replace('_', "");
    if s != "0" && s.starts_with('0') && !s.starts_with("0b") && !s.starts_with("0x") {
        s = s.trim_start_matches('0').to_owned();
        if s.is_empty() {
            s = "0".to_owned();
        }
    }
    let (neg, b) = split_sign(&s);
    let n: i128 = if b == "0" {
        0
    } else if let Some(r) = b.strip_prefix("0b") {
        i128::from_str_radix(r, 2).ok()?
    } else if let Some(r) = b.strip_prefix("0x") {
        i128::from_str_radix(r, 16).ok()?
    } else if let Some(r) = b.strip_prefix('0') {
        i128::from_str_radix(r, 8).ok()?
    } else if b.contains(':') {
        b.split(':')
            .try_fold(0i128, |acc, p| Some(acc * 60 + p.parse::<i128>().ok()?))?
    } else {
        b.parse().ok()?
    };
    let n = if neg { -n } else { n };
    if let Ok(i) = i64::try_from(n) {
        Some(Value::from(i))
    } else {
        u64::try_from(n).ok().map(Value::from)
    }
}

fn float(v: &str) -> Option<f64> {
    let s = v.replace('_', "").to_ascii_lowercase();
    let (neg, b) = split_sign(&s);
    let sign = if neg { -1.0 } else { 1.0 };
    if b == ".inf" {
        return Some(sign * f64::INFINITY);
    }
    if b == ".nan" {
        return Some(f64::NAN);
    }
    if b.contains(':') {
        let (whole, frac) = b.split_once('.')?;
        let mut acc = 0.0;
        for p in whole.split(':') {
            acc = acc * 60.0 + p.parse::<f64>().ok()?;
        }
        let f: f64 = format!("0.{frac}").parse().ok()?;
        return Some(sign * (acc * 60.0 + f * 60.0) / 60.0);
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Value {
        let Some(Value::Map(m)) = load(&format!("k: {text}")).unwrap() else {
            panic!("not a map")
        };
        m[0].1.clone()
    }

    #[test]
    fn yaml_1_1_scalars_like_salt() {
        assert_eq!(one("0644"), Value::from(644));
        assert_eq!(one("0"), Value::from(0));
        assert_eq!(one("0x1F"), Value::from(31));
        assert_eq!(one("0b101"), Value::from(5));
        assert_eq!(one("1_000"), Value::from(1000));
        assert_eq!(one("1:30"), Value::from(90));
        assert_eq!(one("-12"), Value::from(-12));
        assert_eq!(one("on"), Value::Boolean(true));
        assert_eq!(one("Off"), Value::Boolean(false));
        assert_eq!(one("yes"), Value::Boolean(true));
        assert_eq!(one("NO"), Value::Boolean(false));
        assert_eq!(one("y"), Value::from("y"));
        assert_eq!(one("~"), Value::Nil);
        assert_eq!(one(""), Value::Nil);
        assert_eq!(one("1.5"), Value::F64(1.5));
        assert_eq!(one("1e3"), Value::from("1e3"));
        assert_eq!(one("1.0e+3"), Value::F64(1000.0));
        assert_eq!(one("2024-01-02"), Value::from("2024-01-02"));
        assert_eq!(one("'0644'"), Value::from("0644"));
        assert_eq!(one("\"yes\""), Value::from("yes"));
        assert_eq!(one("!!str 12"), Value::from("12"));
        assert_eq!(one("1.2.3"), Value::from("1.2.3"));
    }

    #[test]
    fn duplicates_merges_and_documents() {
        let e = load("a: 1\na: 2\n").unwrap_err();
        assert!(e.0.contains("conflicting ID 'a'"), "{e}");
        let v = load("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            v,
            load("base: {x: 1, y: 2}\nd: {x: 1, y: 3}\n")
                .unwrap()
                .unwrap()
        );
        assert_eq!(load("").unwrap(), None);
        assert_eq!(load("# only a comment\n").unwrap(), None);
        assert!(load("a: 1\n---\nb: 2\n").is_err());
        assert!(load("a: [1\n").is_err());
    }
}
