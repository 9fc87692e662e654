//! Small helpers to build and read [`Value`] maps the way Salt uses them.
//!
//! Salt messages are Python dicts with string keys. On the wire a key may arrive as
//! msgpack str, str8 or bin (Python decodes them all to the same `str`), so lookups
//! here match a key against the raw bytes of any str or bin key. When a map holds a
//! key twice, the **last** entry wins, as in a Python dict built from the same data.

use rmpv::{Utf8String, Value};

/// Read helpers on [`Value`] with Salt's decoding rules (str and bin are the same
/// thing; valid UTF-8 bytes are text).
pub trait ValueExt {
    /// The value stored under `key` if `self` is a map (str or bin key, last match wins).
    fn get(&self, key: &str) -> Option<&Value>;
    /// The raw bytes of a str (valid UTF-8 or not) or bin value.
    fn as_bytes(&self) -> Option<&[u8]>;
    /// The text of a str or bin value whose bytes are valid UTF-8 — what Python Salt
    /// sees as `str` after decoding.
    fn as_text(&self) -> Option<&str>;
    /// The entries of a map.
    fn as_entries(&self) -> Option<&[(Value, Value)]>;
    /// The elements of an array.
    fn as_items(&self) -> Option<&[Value]>;
    /// Python truthiness: `None`, `False`, `0`, `0.0`, empty str/bytes/list/dict are false.
    fn is_truthy(&self) -> bool;
    /// The `cmd` field of a request load, if it is text.
    fn cmd(&self) -> Option<&str>;
    /// An integer or float as `f64` (Salt's numeric options and timestamps).
    fn as_number(&self) -> Option<f64>;
}

impl ValueExt for Value {
    fn get(&self, key: &str) -> Option<&Value> {
        salt_compat::map_get(self, key)
    }

    fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::String(s) => Some(s.as_bytes()),
            Value::Binary(b) => Some(b),
            _ => None,
        }
    }

    fn as_text(&self) -> Option<&str> {
        self.as_bytes().and_then(|b| std::str::from_utf8(b).ok())
    }

    fn as_entries(&self) -> Option<&[(Value, Value)]> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    fn as_items(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    fn is_truthy(&self) -> bool {
        salt_compat::py_truthy(self)
    }

    fn cmd(&self) -> Option<&str> {
        self.get("cmd").and_then(ValueExt::as_text)
    }

    fn as_number(&self) -> Option<f64> {
        match self {
            Value::Integer(i) => i.as_f64(),
            Value::F32(f) => Some(f64::from(*f)),
            Value::F64(f) => Some(*f),
            _ => None,
        }
    }
}

fn key_matches(k: &Value, key: &str) -> bool {
    k.as_bytes() == Some(key.as_bytes())
}

/// Python `d[key] = value`: replaces the value of an existing key in place (keeping
/// its position; duplicates of the key are removed) or appends a new entry.
/// Returns `false` (and does nothing) if `map` is not a map.
pub fn map_set(map: &mut Value, key: &str, value: Value) -> bool {
    let Value::Map(entries) = map else {
        return false;
    };
    match entries.iter().position(|(k, _)| key_matches(k, key)) {
        Some(first) => {
            let mut value = Some(value);
            let mut i = 0usize;
            entries.retain_mut(|(k, v)| {
                let idx = i;
                i += 1;
                if idx == first {
                    if let Some(new) = value.take() {
                        *v = new;
                    }
                    true
                } else {
                    !key_matches(k, key)
                }
            });
        }
        None => entries.push((Value::from(key), value)),
    }
    true
}

/// Python `d.pop(key, None)`: removes every entry with that key and returns the
/// value Python would have held (the last one). `None` if absent or not a map.
pub fn map_remove(map: &mut Value, key: &str) -> Option<Value> {
    let Value::Map(entries) = map else {
        return None;
    };
    let mut found = None;
    let mut kept = Vec::with_capacity(entries.len());
    for (k, v) in entries.drain(..) {
        if key_matches(&k, key) {
            found = Some(v);
        } else {
            kept.push((k, v));
        }
    }
    *entries = kept;
    found
}

/// Builds a map with string keys in insertion order (the order Python Salt writes).
///
/// ```
/// use salt_proto::{MapBuilder, Value, ValueExt};
/// let v = MapBuilder::new().str("cmd", "ping").opt("tok", None::<Value>).build();
/// assert_eq!(v.get("cmd").and_then(|c| c.as_text()), Some("ping"));
/// assert!(v.get("tok").is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MapBuilder {
    entries: Vec<(Value, Value)>,
}

impl MapBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `key: value`.
    pub fn insert(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.entries.push((Value::from(key), value.into()));
        self
    }

    /// Appends `key: text`.
    pub fn str(self, key: &str, text: &str) -> Self {
        self.insert(key, Value::from(text))
    }

    /// Appends `key: bytes` (encoded as msgpack str, like Salt does for `bytes`).
    pub fn bytes(self, key: &str, bytes: &[u8]) -> Self {
        self.insert(key, Value::Binary(bytes.to_vec()))
    }

    /// Appends `key: value` only when `value` is `Some`.
    pub fn opt(self, key: &str, value: Option<impl Into<Value>>) -> Self {
        match value {
            Some(v) => self.insert(key, v),
            None => self,
        }
    }

    /// Appends already-built entries (e.g. the extra keys of a message), in order.
    pub fn extend(mut self, entries: impl IntoIterator<Item = (Value, Value)>) -> Self {
        self.entries.extend(entries);
        self
    }

    /// Appends `key: value` to a builder held by `&mut`.
    pub fn push(&mut self, key: &str, value: impl Into<Value>) {
        self.entries.push((Value::from(key), value.into()));
    }

    /// The finished map.
    pub fn build(self) -> Value {
        Value::Map(self.entries)
    }
}

/// A map value from `(key, value)` pairs with string keys, in order.
pub fn map<'a>(entries: impl IntoIterator<Item = (&'a str, Value)>) -> Value {
    Value::Map(
        entries
            .into_iter()
            .map(|(k, v)| (Value::from(k), v))
            .collect(),
    )
}

/// A bytes value (written as msgpack str on the wire, like Python `bytes`).
pub fn bytes(data: impl Into<Vec<u8>>) -> Value {
    Value::Binary(data.into())
}

/// A text value.
pub fn text(s: impl Into<String>) -> Value {
    Value::String(Utf8String::from(s.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_matches_str_and_bin_keys_last_wins() {
        let v = Value::Map(vec![
            (Value::from("a"), Value::from(1)),
            (Value::Binary(b"a".to_vec()), Value::from(2)),
            (Value::from(7), Value::from(3)),
        ]);
        assert_eq!(v.get("a"), Some(&Value::from(2)));
        assert_eq!(v.get("b"), None);
        assert_eq!(Value::from(1).get("a"), None);
    }

    #[test]
    fn set_and_remove_follow_python_dict() {
        let mut v = map([
            ("a", Value::from(1)),
            ("b", Value::from(2)),
            ("a", Value::from(3)),
        ]);
        assert!(map_set(&mut v, "a", Value::from(9)));
        assert_eq!(v, map([("a", Value::from(9)), ("b", Value::from(2))]));
        assert!(map_set(&mut v, "c", Value::Nil));
        assert_eq!(map_remove(&mut v, "b"), Some(Value::from(2)));
        assert_eq!(map_remove(&mut v, "b"), None);
        assert_eq!(v, map([("a", Value::from(9)), ("c", Value::Nil)]));
        assert!(!map_set(&mut Value::Nil, "a", Value::Nil));
    }

    #[test]
    fn truthiness() {
        assert!(!Value::Nil.is_truthy());
        assert!(!Value::from(0).is_truthy());
        assert!(Value::from(-1).is_truthy());
        assert!(!Value::from("").is_truthy());
        assert!(Value::from("full").is_truthy());
        assert!(!Value::Array(vec![]).is_truthy());
    }

    #[test]
    fn as_text_accepts_valid_bin() {
        assert_eq!(Value::Binary(b"hi".to_vec()).as_text(), Some("hi"));
        assert_eq!(Value::Binary(vec![0xff]).as_text(), None);
        assert_eq!(Value::Binary(vec![0xff]).as_bytes(), Some(&[0xff][..]));
    }
}
