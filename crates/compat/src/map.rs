//! Python `dict.get` on a decoded msgpack map.

use rmpv::Value;

/// The value stored under `key` in map `map` (str or bin key with those bytes; the last of
/// duplicated keys wins, as in the Python dict msgpack decodes to). `None` if `map` is not a
/// map or has no such key.
pub fn map_get<'a>(map: &'a Value, key: &str) -> Option<&'a Value> {
    let Value::Map(entries) = map else {
        return None;
    };
    entries
        .iter()
        .rev()
        .find(|(k, _)| key_bytes(k) == Some(key.as_bytes()))
        .map(|(_, v)| v)
}

fn key_bytes(k: &Value) -> Option<&[u8]> {
    match k {
        Value::String(s) => Some(s.as_bytes()),
        Value::Binary(b) => Some(b),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_str_or_bin_key_wins() {
        let m = Value::Map(vec![
            ("a".into(), 1.into()),
            (Value::Binary(b"a".to_vec()), 2.into()),
            (3.into(), 3.into()),
        ]);
        assert_eq!(map_get(&m, "a"), Some(&Value::from(2)));
        assert_eq!(map_get(&m, "3"), None);
        assert_eq!(map_get(&Value::Nil, "a"), None);
    }
}
