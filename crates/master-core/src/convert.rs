//! Conversions between msgpack values (the wire) and JSON values (the local socket).

use rmpv::Value as Mp;
use serde_json::Value as Js;

/// msgpack → JSON. Invalid UTF-8 and binary become lossy strings; non-string map keys are
/// rendered as text; ext values become `null`.
pub fn mp_to_json(v: &Mp) -> Js {
    match v {
        Mp::Nil => Js::Null,
        Mp::Boolean(b) => Js::Bool(*b),
        Mp::Integer(i) => {
            if let Some(u) = i.as_u64() {
                Js::from(u)
            } else if let Some(s) = i.as_i64() {
                Js::from(s)
            } else {
                Js::Null
            }
        }
        Mp::F32(f) => serde_json::Number::from_f64(f64::from(*f)).map_or(Js::Null, Js::Number),
        Mp::F64(f) => serde_json::Number::from_f64(*f).map_or(Js::Null, Js::Number),
        Mp::String(s) => Js::String(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        Mp::Binary(b) => Js::String(String::from_utf8_lossy(b).into_owned()),
        Mp::Array(a) => Js::Array(a.iter().map(mp_to_json).collect()),
        Mp::Map(m) => Js::Object(
            m.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Mp::String(s) => String::from_utf8_lossy(s.as_bytes()).into_owned(),
                        other => mp_to_json(other).to_string(),
                    };
                    (key, mp_to_json(v))
                })
                .collect(),
        ),
        Mp::Ext(_, _) => Js::Null,
    }
}

/// JSON → msgpack (strings stay strings, numbers keep their kind, key order kept); one copy,
/// shared with the renderer's `json` stage.
pub use salt_render::json_to_msgpack as json_to_mp;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_and_lossy() {
        let j = json!({"a": [1, -2, 1.5, true, null, "x"]});
        assert_eq!(mp_to_json(&json_to_mp(&j)), j);
        let bad = Mp::Map(vec![(Mp::from(1), Mp::Binary(vec![0xff, b'a']))]);
        assert_eq!(mp_to_json(&bad), json!({"1": "\u{fffd}a"}));
    }
}
