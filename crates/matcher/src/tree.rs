//! The data the matchers walk (grains, pillar), as a trait: rmpv values (the minion, pillar
//! top files), or any other representation of the same data (the master's compact index of
//! the minion data cache), so that one copy of the matchers serves both.

use std::fmt::Write as _;

use rmpv::Value;

/// What a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A dict.
    Map,
    /// A list.
    Array,
    /// Anything else (string, number, bool, None, bytes).
    Scalar,
}

/// Read access to one node of msgpack-shaped data.
pub trait Tree<'a>: Copy {
    /// What the node is.
    fn shape(self) -> Shape;
    /// A map's entries in order (nothing for a non-map).
    fn entries(self) -> impl DoubleEndedIterator<Item = (Self, Self)>;
    /// A list's items in order (nothing for a non-list).
    fn items(self) -> impl DoubleEndedIterator<Item = Self>;
    /// The number of entries of a map or items of a list (0 for a scalar).
    fn len(self) -> usize;
    /// The `i`th item of a list.
    fn item(self, i: usize) -> Option<Self>;
    /// A string's or binary's bytes, as a map key is compared (`salt_compat::map_get`).
    fn key_bytes(self) -> Option<&'a [u8]>;
    /// An integer's or float's value (a map key a number-like part finds).
    fn number(self) -> Option<f64>;
    /// A valid UTF-8 string.
    fn as_str(self) -> Option<&'a str>;
    /// `f(str(node).lower())`, Python's text of the node lower-cased; `buf` is scratch space.
    fn with_lower<R>(self, buf: &mut String, f: impl FnOnce(&str) -> R) -> R;

    /// Whether the node is a map with no entries, or a list or scalar (`len` 0).
    fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// `salt_compat::map_get`: the last entry whose string or binary key is `key`.
    fn map_get(self, key: &str) -> Option<Self> {
        self.entries()
            .rev()
            .find(|(k, _)| k.key_bytes() == Some(key.as_bytes()))
            .map(|(_, v)| v)
    }
}

impl<'a> Tree<'a> for &'a Value {
    fn shape(self) -> Shape {
        match self {
            Value::Map(_) => Shape::Map,
            Value::Array(_) => Shape::Array,
            _ => Shape::Scalar,
        }
    }

    fn entries(self) -> impl DoubleEndedIterator<Item = (Self, Self)> {
        let e: &'a [(Value, Value)] = match self {
            Value::Map(e) => e,
            _ => &[],
        };
        e.iter().map(|(k, v)| (k, v))
    }

    fn items(self) -> impl DoubleEndedIterator<Item = Self> {
        let e: &'a [Value] = match self {
            Value::Array(e) => e,
            _ => &[],
        };
        e.iter()
    }

    fn len(self) -> usize {
        match self {
            Value::Map(e) => e.len(),
            Value::Array(e) => e.len(),
            _ => 0,
        }
    }

    fn item(self, i: usize) -> Option<Self> {
        match self {
            Value::Array(e) => e.get(i),
            _ => None,
        }
    }

    fn key_bytes(self) -> Option<&'a [u8]> {
        match self {
            Value::String(s) => Some(s.as_bytes()),
            Value::Binary(b) => Some(b),
            _ => None,
        }
    }

    fn number(self) -> Option<f64> {
        match self {
            Value::Integer(i) => i.as_f64(),
            Value::F64(f) => Some(*f),
            Value::F32(f) => Some(f64::from(*f)),
            _ => None,
        }
    }

    fn as_str(self) -> Option<&'a str> {
        self.as_str()
    }

    fn with_lower<R>(self, buf: &mut String, f: impl FnOnce(&str) -> R) -> R {
        match self {
            Value::String(s) => match s.as_str() {
                Some(s) if !s.bytes().any(|b| b.is_ascii_uppercase() || !b.is_ascii()) => f(s),
                Some(s) if s.is_ascii() => {
                    buf.clear();
                    buf.push_str(s);
                    buf.make_ascii_lowercase();
                    f(buf)
                }
                _ => f(&salt_compat::py_str(self).to_lowercase()),
            },
            Value::Boolean(true) => f("true"),
            Value::Boolean(false) => f("false"),
            Value::Nil => f("none"),
            Value::Integer(i) => {
                buf.clear();
                let _ = write!(buf, "{i}");
                f(buf)
            }
            other => f(&salt_compat::py_str(other).to_lowercase()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_text_is_python_str_lower() {
        let mut buf = String::new();
        for v in [
            Value::from("Debian"),
            Value::from("x86_64"),
            Value::from("ÄÖ Straße ΣΑΣ"),
            Value::from(-12),
            Value::from(u64::MAX),
            Value::F64(1e16),
            Value::F64(2.5),
            Value::Boolean(true),
            Value::Nil,
            Value::Binary(b"AB".to_vec()),
            Value::Array(vec![Value::from("A"), Value::from(1)]),
            Value::Map(vec![(Value::from("K"), Value::Boolean(false))]),
        ] {
            let want = salt_compat::py_str(&v).to_lowercase();
            assert_eq!((&v).with_lower(&mut buf, str::to_owned), want, "{v:?}");
        }
    }
}
