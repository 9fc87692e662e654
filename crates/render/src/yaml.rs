//! Salt's YAML loading (`salt/utils/yamlloader.py` on PyYAML's YAML 1.1 resolver), and the
//! flow-style dump behind the `yaml` filter.
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

#[derive(Clone, Debug)]
enum Node {
    Scalar(String, bool, Option<String>),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

/// Load one YAML document; an empty document is `None` (Salt's `safe_load` gives `None`).
pub fn load(text: &str) -> Result<Option<Value>, YamlError> {
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
            Event::SequenceStart(_, anchor, _) => {
                stack.push((Node::Seq(Vec::new()), anchor));
                pending_key.push(None);
                None
            }
            Event::MappingStart(_, anchor, _) => {
                stack.push((Node::Map(Vec::new()), anchor));
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
            Some((Node::Seq(items), _)) => items.push(node),
            Some((Node::Map(entries), _)) => {
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
    match docs.pop() {
        None => Ok(None),
        Some(n) => construct(n).map(Some),
    }
}

fn construct(node: Node) -> Result<Value, YamlError> {
    match node {
        Node::Scalar(v, plain, tag) => scalar(&v, plain, tag.as_deref()),
        Node::Seq(items) => Ok(Value::Array(
            items.into_iter().map(construct).collect::<Result<_, _>>()?,
        )),
        Node::Map(entries) => {
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
                        salt_matcher::py_str(&key)
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
            Node::Map(m) => merge.extend(flatten(m)?),
            Node::Seq(items) => {
                let mut sub = Vec::new();
                for item in items {
                    match item {
                        Node::Map(m) => sub.push(flatten(m)?),
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

fn scalar(v: &str, plain: bool, tag: Option<&str>) -> Result<Value, YamlError> {
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
fn resolve(v: &str) -> &'static str {
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
        // PyYAML: `\.[0-9_]+([eE][-+][0-9]+)?` (`.conf`, a relative include, is a string)
        return frac_ok && !frac.is_empty();
    }
    if int_part.contains(':') {
        let parts: Vec<&str> = int_part.split(':').collect();
        return exp.is_none()
            && frac_ok
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

/// PyYAML `safe_dump(value, default_flow_style=True)` of one value, as the `yaml` filter
/// prints it (keys sorted, strings plain when they would load back as the same string).
pub fn dump_flow(v: &Value) -> String {
    let mut out = String::new();
    dump_into(v, &mut out);
    out
}

fn dump_into(v: &Value, out: &mut String) {
    match v {
        Value::Nil => out.push_str("null"),
        Value::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Integer(i) => out.push_str(&i.to_string()),
        Value::F32(f) => out.push_str(&crate::pyjson::py_float(f64::from(*f))),
        Value::F64(f) => out.push_str(&crate::pyjson::py_float(*f)),
        Value::String(_) | Value::Binary(_) | Value::Ext(..) => {
            out.push_str(&quote_if_needed(&salt_matcher::py_str(v)));
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                dump_into(item, out);
            }
            out.push(']');
        }
        Value::Map(entries) => {
            let mut sorted: Vec<&(Value, Value)> = entries.iter().collect();
            sorted.sort_by_key(|(k, _)| salt_matcher::py_str(k));
            out.push('{');
            for (i, (k, val)) in sorted.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                dump_into(k, out);
                out.push_str(": ");
                dump_into(val, out);
            }
            out.push('}');
        }
    }
}

fn quote_if_needed(s: &str) -> String {
    let special = s.is_empty()
        || resolve(s) != "str"
        || s.starts_with(|c: char| " -?:,[]{}#&*!|>'\"%@`".contains(c))
        || s.ends_with(' ')
        || s.contains(": ")
        || s.contains(" #")
        || s.contains([',', '[', ']', '{', '}', '\n', '\t', '\r'])
        || s.chars().any(|c| c.is_control());
    if !special {
        return s.to_owned();
    }
    if s.chars().any(|c| c.is_control()) {
        return double_quote(s);
    }
    format!("'{}'", s.replace('\'', "''"))
}

/// A YAML double-quoted scalar (`yaml_dquote`).
pub fn double_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
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

    #[test]
    fn flow_dump() {
        let v = load("b: [1, 'x y', 'yes']\na: {c: null, d: 'a: b'}\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            dump_flow(&v),
            "{a: {c: null, d: 'a: b'}, b: [1, x y, 'yes']}"
        );
        assert_eq!(
            load(&dump_flow(&v))
                .unwrap()
                .unwrap()
                .as_map()
                .unwrap()
                .len(),
            2
        );
    }
}
