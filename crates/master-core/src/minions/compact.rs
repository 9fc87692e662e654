//! The compact form of the cached grains and pillar the target index holds
//! ([`super::index`]): every scalar (string, number, bool, None, bytes) is interned once in
//! the process with its lower-cased text (what the matchers compare), and a minion's data is
//! one slice of 8-byte nodes. At 100,000 minions shaped like real ones this is ~3.6 times
//! smaller than rmpv values (docs/benchmarks.md), and the matchers read it through
//! [`salt_matcher::Tree`] without allocating.

use std::collections::HashMap;

use rmpv::Value;
use salt_matcher::{Shape, Tree};

/// Node tags (the top 2 bits of `Node::b`).
const ATOM: u32 = 0;
const MAP: u32 = 1 << 30;
const ARRAY: u32 = 2 << 30;
const ABSENT: u32 = 3 << 30;
const TAG: u32 = 3 << 30;

/// One node: an atom (`a`: its number, `b & !TAG`: a hash of its key bytes, so that a map
/// lookup compares nodes, not atoms), or a map or list (`a`: where its children start,
/// `b & !TAG`: how many entries or items; a map's children are key, value, key, value...).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    a: u32,
    b: u32,
}

/// One interned scalar.
#[derive(Debug)]
struct Atom {
    value: Value,
    /// `str(value).lower()` when it differs from the value's own string.
    lower: Option<Box<str>>,
    refs: u32,
}

/// The interned scalars of every cached minion.
#[derive(Debug, Default)]
pub(crate) struct Atoms {
    table: Vec<Option<Atom>>,
    ix: HashMap<Box<[u8]>, u32>,
    free: Vec<u32>,
}

/// A minion's grains (node 0) and pillar (node 1), and their nodes.
pub(crate) type Entry = Box<[Node]>;

impl Atoms {
    /// The compact form of `(grains, pillar)`.
    pub(crate) fn entry(&mut self, grains: Option<&Value>, pillar: Option<&Value>) -> Entry {
        let mut nodes = vec![Node { a: 0, b: ABSENT }; 2];
        for (slot, v) in [grains, pillar].into_iter().enumerate() {
            if let Some(v) = v {
                nodes[slot] = self.node(v, &mut nodes);
            }
        }
        nodes.into_boxed_slice()
    }

    fn node(&mut self, v: &Value, nodes: &mut Vec<Node>) -> Node {
        let reserve = |nodes: &mut Vec<Node>, n: usize| {
            let start = nodes.len();
            nodes.resize(start + n, Node { a: 0, b: ABSENT });
            start
        };
        match v {
            Value::Map(entries) => {
                let start = reserve(nodes, entries.len() * 2);
                for (i, (k, v)) in entries.iter().enumerate() {
                    nodes[start + 2 * i] = self.node(k, nodes);
                    nodes[start + 2 * i + 1] = self.node(v, nodes);
                }
                Node {
                    a: start as u32,
                    b: MAP | entries.len() as u32,
                }
            }
            Value::Array(items) => {
                let start = reserve(nodes, items.len());
                for (i, v) in items.iter().enumerate() {
                    nodes[start + i] = self.node(v, nodes);
                }
                Node {
                    a: start as u32,
                    b: ARRAY | items.len() as u32,
                }
            }
            scalar => Node {
                a: self.intern(scalar),
                b: key_hash(Tree::key_bytes(scalar).unwrap_or_default()),
            },
        }
    }

    fn intern(&mut self, v: &Value) -> u32 {
        let key = salt_proto::encode(v);
        if let Some(&i) = self.ix.get(key.as_slice()) {
            if let Some(a) = &mut self.table[i as usize] {
                a.refs += 1;
            }
            return i;
        }
        let text = salt_compat::py_str(v);
        let lower = text.to_lowercase();
        let lower = (v.as_str() != Some(lower.as_str())).then(|| lower.into_boxed_str());
        let atom = Atom {
            value: v.clone(),
            lower,
            refs: 1,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.table[i as usize] = Some(atom);
                i
            }
            None => {
                self.table.push(Some(atom));
                (self.table.len() - 1) as u32
            }
        };
        self.ix.insert(key.into_boxed_slice(), i);
        i
    }

    /// Forget a minion's entry: its atoms no other entry holds are freed.
    pub(crate) fn release(&mut self, entry: &Entry) {
        for n in entry.iter().filter(|n| n.b & TAG == ATOM) {
            let i = n.a as usize;
            let Some(a) = self.table.get_mut(i).and_then(Option::as_mut) else {
                continue;
            };
            a.refs -= 1;
            if a.refs == 0 {
                let key = salt_proto::encode(&a.value);
                self.ix.remove(key.as_slice());
                self.table[i] = None;
                self.free.push(n.a);
            }
        }
    }

    /// The grains (`which` 0) or pillar (1) of an entry, if cached.
    pub(crate) fn root<'a>(&'a self, entry: &'a Entry, which: usize) -> Option<Ref<'a>> {
        let n = entry.get(which)?;
        (n.b != ABSENT).then_some(Ref {
            atoms: self,
            nodes: entry,
            node: *n,
        })
    }

    fn atom(&self, i: u32) -> Option<&Atom> {
        self.table.get(i as usize)?.as_ref()
    }

    /// How many atoms are interned (for the benchmark).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ix.len()
    }
}

/// The `b` of an atom node whose key bytes are `bytes` (FNV-1a, 30 bits).
fn key_hash(bytes: &[u8]) -> u32 {
    let h = bytes.iter().fold(0x811c_9dc5_u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    ATOM | (h & !TAG)
}

/// One node of a cached minion's data, for the matchers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ref<'a> {
    atoms: &'a Atoms,
    nodes: &'a [Node],
    node: Node,
}

impl<'a> Ref<'a> {
    fn tag(self) -> u32 {
        self.node.b & TAG
    }

    fn count(self) -> usize {
        if self.tag() == ATOM {
            0
        } else {
            (self.node.b & !TAG) as usize
        }
    }

    fn at(self, i: usize) -> Self {
        Ref {
            node: self.nodes[i],
            ..self
        }
    }

    fn value(self) -> Option<&'a Value> {
        if self.tag() != ATOM {
            return None;
        }
        self.atoms.atom(self.node.a).map(|a| &a.value)
    }

    /// The node as an rmpv value (Python's text of a dict or list).
    fn to_value(self) -> Value {
        match self.shape() {
            Shape::Map => Value::Map(
                self.entries()
                    .map(|(k, v)| (k.to_value(), v.to_value()))
                    .collect(),
            ),
            Shape::Array => Value::Array(self.items().map(Ref::to_value).collect()),
            Shape::Scalar => self.value().cloned().unwrap_or(Value::Nil),
        }
    }
}

impl<'a> Tree<'a> for Ref<'a> {
    fn shape(self) -> Shape {
        match self.tag() {
            MAP => Shape::Map,
            ARRAY => Shape::Array,
            _ => Shape::Scalar,
        }
    }

    fn entries(self) -> impl DoubleEndedIterator<Item = (Self, Self)> {
        let (start, n) = match self.tag() {
            MAP => (self.node.a as usize, self.count()),
            _ => (0, 0),
        };
        (0..n).map(move |i| (self.at(start + 2 * i), self.at(start + 2 * i + 1)))
    }

    fn items(self) -> impl DoubleEndedIterator<Item = Self> {
        let (start, n) = match self.tag() {
            ARRAY => (self.node.a as usize, self.count()),
            _ => (0, 0),
        };
        (0..n).map(move |i| self.at(start + i))
    }

    fn len(self) -> usize {
        self.count()
    }

    fn map_get(self, key: &str) -> Option<Self> {
        let h = key_hash(key.as_bytes());
        self.entries()
            .rev()
            .find(|(k, _)| k.node.b == h && k.key_bytes() == Some(key.as_bytes()))
            .map(|(_, v)| v)
    }

    fn item(self, i: usize) -> Option<Self> {
        (self.tag() == ARRAY && i < self.count()).then(|| self.at(self.node.a as usize + i))
    }

    fn key_bytes(self) -> Option<&'a [u8]> {
        match self.value()? {
            Value::String(s) => Some(s.as_bytes()),
            Value::Binary(b) => Some(b),
            _ => None,
        }
    }

    fn number(self) -> Option<f64> {
        match self.value()? {
            Value::Integer(i) => i.as_f64(),
            Value::F64(f) => Some(*f),
            Value::F32(f) => Some(f64::from(*f)),
            _ => None,
        }
    }

    fn as_str(self) -> Option<&'a str> {
        self.value()?.as_str()
    }

    fn with_lower<R>(self, buf: &mut String, f: impl FnOnce(&str) -> R) -> R {
        if self.tag() != ATOM {
            let v = self.to_value();
            return Tree::with_lower(&v, buf, f);
        }
        match self.atoms.atom(self.node.a) {
            Some(Atom { lower: Some(l), .. }) => f(l),
            Some(a) => f(a.value.as_str().unwrap_or_default()),
            None => f("none"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use salt_matcher::Subdict;

    /// Every expression of the matcher's golden (Salt's own `subdict_match` answers) gives the
    /// same answer over the compact form as over rmpv values; a released entry frees its atoms.
    #[test]
    fn compact_form_answers_like_values() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../matcher/tests/golden/subdict.json"
        );
        let g: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut atoms = Atoms::default();
        for data in g["data"].as_array().unwrap() {
            let data = salt_compat::json::json_to_msgpack(data);
            let entry = atoms.entry(Some(&data), None);
            let root = atoms.root(&entry, 0).unwrap();
            assert!(atoms.root(&entry, 1).is_none());
            assert_eq!(root.to_value(), data);
            for expr in g["exprs"].as_array().unwrap() {
                let expr = expr.as_str().unwrap();
                for delim in [":", "|"] {
                    for regex in [false, true] {
                        let s = Subdict::new(expr, delim, regex);
                        assert_eq!(s.matches(root), s.matches(&data), "{expr} {delim} {regex}");
                    }
                }
            }
            atoms.release(&entry);
            assert_eq!(atoms.len(), 0, "every atom freed");
        }
    }
}
