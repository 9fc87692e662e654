//! A YAML value tree with line numbers, parsed by serde-saphyr the way PyYAML reads Salt's
//! files (YAML 1.1 booleans: `yes`/`no`/`on`/`off`), so every option can be checked by hand
//! and reported with its line.

use std::fmt;
use std::path::Path;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use crate::error::ConfigError;

/// A parsed YAML value with the line it starts on (`None` when the parser did not say).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub(crate) kind: Kind,
    pub(crate) line: Option<u64>,
}

/// The shape of a YAML value after PyYAML-like type resolution.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Kind {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    /// A string. Plain scalars written with redundant leading zeros (`0700`) arrive here too,
    /// so the option that reads them decides between decimal (Salt's loader) and octal (modes).
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

impl Node {
    /// A node without a source line, for values the loader synthesises.
    #[cfg(test)]
    pub(crate) fn bare(kind: Kind) -> Self {
        Self { kind, line: None }
    }

    /// Describes the value for an error message: its type and, for scalars, the value.
    pub(crate) fn describe(&self) -> String {
        match &self.kind {
            Kind::Null => "null".to_owned(),
            Kind::Bool(b) => format!("boolean {b}"),
            Kind::Int(i) => format!("integer {i}"),
            Kind::Float(x) => format!("float {x}"),
            Kind::Str(s) => format!("string {s:?}"),
            Kind::Seq(_) => "a list".to_owned(),
            Kind::Map(_) => "a mapping".to_owned(),
        }
    }

    /// Converts to a JSON value (for free-form options such as `grains`). Map keys that are
    /// not strings are rendered as strings, as Salt's msgpack/JSON output would.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match &self.kind {
            Kind::Null => Value::Null,
            Kind::Bool(b) => Value::Bool(*b),
            Kind::Int(i) => i64::try_from(*i)
                .map(Value::from)
                .or_else(|_| u64::try_from(*i).map(Value::from))
                .unwrap_or_else(|_| Value::String(i.to_string())),
            Kind::Float(x) => serde_json::Number::from_f64(*x)
                .map(Value::Number)
                .unwrap_or(Value::Null),
            Kind::Str(s) => Value::String(s.clone()),
            Kind::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Kind::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.key_string(), v.to_json()))
                    .collect(),
            ),
        }
    }

    /// The text of a scalar used as a mapping key.
    pub(crate) fn key_string(&self) -> String {
        match &self.kind {
            Kind::Str(s) => s.clone(),
            Kind::Null => "None".to_owned(),
            Kind::Bool(true) => "True".to_owned(),
            Kind::Bool(false) => "False".to_owned(),
            Kind::Int(i) => i.to_string(),
            Kind::Float(x) => x.to_string(),
            Kind::Seq(_) | Kind::Map(_) => self.describe(),
        }
    }
}

/// The options with which every configuration file is parsed.
fn yaml_options() -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    // Keep `0700` as text: Salt's loader reads it as decimal 700, a mode option as octal.
    options.leading_zero_numbers_as_strings = true;
    // One-line messages: ConfigErrors prints one error per line.
    options.with_snippet = false;
    options
}

/// Parses one configuration document. An empty document is an empty mapping (as Salt's
/// `safe_load(...) or {}`); any other non-mapping is an error.
pub(crate) fn parse_document(text: &str, path: &Path) -> Result<Vec<(Node, Node)>, ConfigError> {
    let parsed: Option<Node> =
        serde_saphyr::from_str_with_options(text, yaml_options()).map_err(|e| {
            ConfigError::Syntax {
                path: path.to_owned(),
                message: e.to_string().lines().next().unwrap_or_default().to_owned(),
            }
        })?;
    match parsed.map(|n| n.kind) {
        None | Some(Kind::Null) => Ok(Vec::new()),
        Some(Kind::Map(entries)) => Ok(entries),
        Some(other) => Err(ConfigError::NotAMapping {
            path: path.to_owned(),
            found: Node {
                kind: other,
                line: None,
            }
            .describe(),
        }),
    }
}

/// Salt's `dictupdate.update(dest, upd, recursive_update=True, merge_lists=True)`: mappings
/// merge key by key, lists are concatenated without duplicates, anything else is replaced.
pub(crate) fn merge_into(dest: &mut Node, upd: Node) {
    match (&mut dest.kind, upd.kind) {
        (Kind::Map(d), Kind::Map(u)) => {
            for (k, v) in u {
                if let Some((_, existing)) = d.iter_mut().find(|(dk, _)| dk.kind == k.kind) {
                    merge_into(existing, v);
                } else {
                    d.push((k, v));
                }
            }
        }
        (Kind::Seq(d), Kind::Seq(u)) => {
            for item in u {
                if !d.iter().any(|x| x.kind == item.kind) {
                    d.push(item);
                }
            }
        }
        (_, kind) => {
            *dest = Node {
                kind,
                line: upd.line,
            }
        }
    }
}

// === impl Deserialize ===

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<Kind>::deserialize(d)?;
        let line = spanned.referenced.line();
        Ok(Self {
            kind: spanned.value,
            line: (line > 0).then_some(line),
        })
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(KindVisitor)
    }
}

struct KindVisitor;

impl<'de> Visitor<'de> for KindVisitor {
    type Value = Kind;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Kind, E> {
        Ok(Kind::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Kind, E> {
        Ok(Kind::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Kind, D::Error> {
        Kind::deserialize(d)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Kind, E> {
        Ok(Kind::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Kind, E> {
        Ok(Kind::Int(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Kind, E> {
        Ok(Kind::Int(v.into()))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Kind, E> {
        Ok(Kind::Int(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Kind, E> {
        Ok(Kind::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Kind, E> {
        Ok(Kind::Str(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Kind, E> {
        Ok(Kind::Str(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<Kind, A::Error> {
        let mut items = Vec::new();
        while let Some(n) = access.next_element::<Node>()? {
            items.push(n);
        }
        Ok(Kind::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Kind, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = access.next_entry::<Node, Node>()? {
            entries.push(entry);
        }
        Ok(Kind::Map(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<(Node, Node)> {
        parse_document(text, Path::new("t")).unwrap()
    }

    #[test]
    fn yaml11_booleans_quoted_strings_and_lines() {
        let doc = parse("a: yes\nb: Off\nc: 'yes'\nd: 0700\ne: 12\n");
        let kinds: Vec<_> = doc.iter().map(|(_, v)| v.kind.clone()).collect();
        assert_eq!(
            kinds,
            vec![
                Kind::Bool(true),
                Kind::Bool(false),
                Kind::Str("yes".into()),
                Kind::Str("0700".into()),
                Kind::Int(12)
            ]
        );
        assert_eq!(doc[4].1.line, Some(5));
    }

    #[test]
    fn empty_and_non_mapping_documents() {
        assert!(parse("# nothing\n").is_empty());
        let err = parse_document("- a\n", Path::new("f")).unwrap_err();
        assert!(matches!(err, ConfigError::NotAMapping { .. }), "{err}");
        let err = parse_document("a: 1\na: 2\n", Path::new("f")).unwrap_err();
        assert!(matches!(err, ConfigError::Syntax { .. }), "{err}");
        assert!(!err.to_string().contains('\n'));
    }

    #[test]
    fn merge_follows_salt_dictupdate() {
        let mut a = Node::bare(Kind::Map(parse("m: {x: 1, y: 2}\nl: [1, 2]\ns: a\n")));
        let b = Node::bare(Kind::Map(parse("m: {y: 3}\nl: [2, 3]\ns: b\n")));
        merge_into(&mut a, b);
        let expect = Node::bare(Kind::Map(parse("m: {x: 1, y: 3}\nl: [1, 2, 3]\ns: b\n")));
        assert_eq!(a.to_json(), expect.to_json());
    }
}
