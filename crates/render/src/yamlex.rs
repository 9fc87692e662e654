//! Salt's `yamlex` deserializer (`salt/serializers/yamlex.py` on PyYAML's C loader), as the
//! `cmd_yamlex` external pillar reads a command's output.
//!
//! Beyond YAML 1.1: a key given twice in a mapping is merged into its first value (Salt's
//! `aggregate`: two `!aggregate` mappings merge key by key, two `!aggregate` sequences
//! join without repeats, anything else keeps the second value), unless the key is tagged
//! `!reset`; `!aggregate` on a scalar makes it a one-item sequence. Integers are read as
//! Python's `int(text)` after a leading `0` is stripped (so `0700` is `700` and `0x1f`
//! fails the document).
//!
//! PyYAML builds a plain (untagged, outside any `!aggregate`) sequence only after the whole
//! document, so a repeated key whose later value is such a sequence ends up an empty list;
//! this is reproduced. Timestamps stay strings (Salt's are `datetime`s).

use rmpv::Value;

use crate::yaml::{Node, YamlError, compose, resolve, scalar};

const AGGREGATE: &str = "!aggregate";
const RESET: &str = "!reset";
const SEQ: &str = "tag:yaml.org,2002:seq";
const OMAP: &str = "tag:yaml.org,2002:omap";
const MAP: &str = "tag:yaml.org,2002:map";
const INT: &str = "tag:yaml.org,2002:int";

/// A value under construction, with what the aggregation needs to know of it.
#[derive(Clone, Debug)]
enum Y {
    Val(Value),
    /// `lazy`: a sequence PyYAML fills only after the document (a copy taken before is empty).
    List {
        items: Vec<Y>,
        agg: bool,
        lazy: bool,
    },
    Map {
        entries: Vec<(Value, Y)>,
        agg: bool,
    },
}

/// `yamlex.deserialize(text)`: the one document of `text` (`None` when there is none).
///
/// # Errors
/// The text does not parse, holds more than one document, an unknown tag, an unhashable
/// key or an integer Python's `int()` rejects.
pub fn deserialize(text: &str) -> Result<Option<Value>, YamlError> {
    match compose(text)? {
        None => Ok(None),
        Some(node) => Ok(Some(finish(build(node, false)?))),
    }
}

fn finish(y: Y) -> Value {
    match y {
        Y::Val(v) => v,
        Y::List { items, .. } => Value::Array(items.into_iter().map(finish).collect()),
        Y::Map { entries, .. } => {
            Value::Map(entries.into_iter().map(|(k, v)| (k, finish(v))).collect())
        }
    }
}

fn build(node: Node, deep: bool) -> Result<Y, YamlError> {
    match node {
        Node::Scalar(v, plain, tag) => match tag.as_deref() {
            Some(AGGREGATE) => Ok(Y::List {
                items: match sls_scalar(&v, true, None)? {
                    Value::Nil => Vec::new(),
                    other => vec![Y::Val(other)],
                },
                agg: true,
                lazy: false,
            }),
            Some(RESET) => sls_scalar(&v, true, None).map(Y::Val),
            t => sls_scalar(&v, plain, t).map(Y::Val),
        },
        Node::Seq(items, tag) => {
            let (agg, deep) = match tag.as_deref() {
                Some(AGGREGATE) => (true, true),
                Some(RESET) => (false, true),
                None | Some(SEQ) => (false, deep),
                Some(t) => return Err(unknown_tag(t)),
            };
            let items = items
                .into_iter()
                .map(|n| build(n, deep))
                .collect::<Result<_, _>>()?;
            Ok(Y::List {
                items,
                agg,
                lazy: !deep,
            })
        }
        Node::Map(entries, tag) => match tag.as_deref() {
            Some(AGGREGATE) => omap(entries, true, true),
            Some(RESET) => omap(entries, true, false),
            None | Some(OMAP) => omap(entries, deep, false),
            Some(MAP) => plain_map(entries, deep),
            Some(t) => Err(unknown_tag(t)),
        },
    }
}

fn unknown_tag(t: &str) -> YamlError {
    YamlError(format!(
        "could not determine a constructor for the tag '{t}'"
    ))
}

/// PyYAML's `flatten_mapping`: the entries of `<<` mappings first, then the node's own.
fn flatten(entries: Vec<(Node, Node)>) -> Result<Vec<(Node, Node)>, YamlError> {
    let mut merged = Vec::new();
    let mut own = Vec::new();
    for (k, v) in entries {
        if !matches!(&k, Node::Scalar(s, true, None) if s == "<<") {
            own.push((k, v));
            continue;
        }
        match v {
            Node::Map(m, _) => merged.extend(flatten(m)?),
            Node::Seq(items, _) => {
                let mut subs = Vec::new();
                for item in items {
                    let Node::Map(m, _) = item else {
                        return Err(YamlError(
                            "expected a mapping for merging, but found a non-mapping".into(),
                        ));
                    };
                    subs.push(flatten(m)?);
                }
                for s in subs.into_iter().rev() {
                    merged.extend(s);
                }
            }
            _ => {
                return Err(YamlError(
                    "expected a mapping or list of mappings for merging".into(),
                ));
            }
        }
    }
    merged.extend(own);
    Ok(merged)
}

fn key_of(node: Node, deep: bool) -> Result<Value, YamlError> {
    match build(node, deep)? {
        Y::Val(v) => Ok(v),
        _ => Err(YamlError(
            "while constructing a mapping found unacceptable key".into(),
        )),
    }
}

/// `construct_yaml_omap`: repeated keys aggregated unless tagged `!reset`.
fn omap(entries: Vec<(Node, Node)>, deep: bool, agg: bool) -> Result<Y, YamlError> {
    let mut out: Vec<(Value, Y)> = Vec::new();
    for (k, mut v) in flatten(entries)? {
        let (reset, k) = match k {
            Node::Scalar(s, plain, Some(t)) if t == RESET || t == AGGREGATE => {
                if t == AGGREGATE {
                    tracing::warn!("!aggregate applies on values only, not on keys");
                    v = retag(v, AGGREGATE);
                }
                (t == RESET, Node::Scalar(s, plain, Some(RESET.to_owned())))
            }
            other => (false, other),
        };
        let key = key_of(k, deep)?;
        let value = build(v, deep)?;
        match out.iter().position(|(e, _)| *e == key) {
            Some(i) if reset => out[i].1 = value,
            Some(i) => {
                let old = std::mem::replace(&mut out[i].1, Y::Val(Value::Nil));
                out[i].1 = aggregate(old, value);
            }
            None => out.push((key, value)),
        }
    }
    Ok(Y::Map { entries: out, agg })
}

/// `!!map`: PyYAML's plain mapping (a repeated key keeps its last value).
fn plain_map(entries: Vec<(Node, Node)>, deep: bool) -> Result<Y, YamlError> {
    let mut out: Vec<(Value, Y)> = Vec::new();
    for (k, v) in flatten(entries)? {
        let key = key_of(k, deep)?;
        let value = build(v, deep)?;
        match out.iter().position(|(e, _)| *e == key) {
            Some(i) => out[i].1 = value,
            None => out.push((key, value)),
        }
    }
    Ok(Y::Map {
        entries: out,
        agg: false,
    })
}

fn retag(node: Node, tag: &str) -> Node {
    let tag = Some(tag.to_owned());
    match node {
        Node::Scalar(s, p, _) => Node::Scalar(s, p, tag),
        Node::Seq(i, _) => Node::Seq(i, tag),
        Node::Map(e, _) => Node::Map(e, tag),
    }
}

/// Salt's `aggregate(a, b, level=False)` (`salt/utils/aggregation.py`).
fn aggregate(a: Y, b: Y) -> Y {
    match (a, b) {
        (
            Y::Map {
                entries: ea,
                agg: aa,
            },
            Y::Map {
                entries: eb,
                agg: ab,
            },
        ) => {
            let (mut out, agg) = if aa && ab {
                (ea.clone(), aa)
            } else {
                (eb.clone(), ab)
            };
            for (k, v) in eb {
                let v = match ea.iter().find(|(e, _)| *e == k) {
                    Some((_, old)) => aggregate(old.clone(), v),
                    None => v,
                };
                match out.iter().position(|(e, _)| *e == k) {
                    Some(i) => out[i].1 = v,
                    None => out.push((k, v)),
                }
            }
            Y::Map { entries: out, agg }
        }
        (
            Y::List {
                items: ia,
                agg: true,
                ..
            },
            Y::List {
                items: ib,
                agg: true,
                ..
            },
        ) => {
            let done: Vec<Value> = ia.iter().cloned().map(finish).collect();
            let mut items = ia;
            for v in ib {
                if !done.contains(&finish(v.clone())) {
                    items.push(v);
                }
            }
            Y::List {
                items,
                agg: true,
                lazy: false,
            }
        }
        // `copy.copy(b)`: a sequence PyYAML has not filled yet is copied empty.
        (_, Y::List { lazy: true, .. }) => Y::List {
            items: Vec::new(),
            agg: false,
            lazy: false,
        },
        (_, b) => b,
    }
}

/// A scalar as the yamlex loader constructs it: integers by [`sls_int`], the rest as PyYAML.
fn sls_scalar(v: &str, plain: bool, tag: Option<&str>) -> Result<Value, YamlError> {
    let int = match tag {
        None => plain && resolve(v) == "int",
        Some(t) => t == INT,
    };
    if int {
        sls_int(v)
    } else {
        scalar(v, plain, tag)
    }
}

/// `construct_sls_int`: a leading `0` stripped (not of `0b`/`0x`), then Python's `int(text)`.
fn sls_int(v: &str) -> Result<Value, YamlError> {
    let mut s = v;
    if s != "0" && s.starts_with('0') && !s.starts_with("0b") && !s.starts_with("0x") {
        s = s.trim_start_matches('0');
        if s.is_empty() {
            s = "0";
        }
    }
    let bad = || YamlError(format!("invalid literal for int() with base 10: '{s}'"));
    let t = s.trim();
    let (neg, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let ok = !digits.is_empty()
        && digits
            .split('_')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if !ok {
        return Err(bad());
    }
    let n: i128 = digits.replace('_', "").parse().map_err(|_| bad())?;
    let n = if neg { -n } else { n };
    if let Ok(i) = i64::try_from(n) {
        Ok(Value::from(i))
    } else {
        u64::try_from(n).map(Value::from).map_err(|_| bad())
    }
}
