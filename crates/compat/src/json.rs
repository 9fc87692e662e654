//! JSON values (the local socket, config files, the renderer's `json` stage) to msgpack
//! values (the wire) and back.

use rmpv::Value as Mp;
use serde_json::Value as Js;

/// JSON → msgpack: strings stay strings, integers keep their kind (`i64`, else `u64`),
/// other numbers become `F64`, key order kept.
pub fn json_to_msgpack(v: &Js) -> Mp {
    match v {
        Js::Null => Mp::Nil,
        Js::Bool(b) => Mp::Boolean(*b),
        Js::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Mp::from(i),
            (None, Some(u)) => Mp::from(u),
            _ => Mp::F64(n.as_f64().unwrap_or(f64::NAN)),
        },
        Js::String(s) => Mp::from(s.as_str()),
        Js::Array(a) => Mp::Array(a.iter().map(json_to_msgpack).collect()),
        Js::Object(m) => Mp::Map(
            m.iter()
                .map(|(k, v)| (Mp::from(k.as_str()), json_to_msgpack(v)))
                .collect(),
        ),
    }
}

/// msgpack → JSON. Invalid UTF-8 and binary become lossy strings; non-string map keys are
/// rendered as their JSON text; non-finite floats and ext values become `null`.
pub fn msgpack_to_json(v: &Mp) -> Js {
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
        Mp::Array(a) => Js::Array(a.iter().map(msgpack_to_json).collect()),
        Mp::Map(m) => Js::Object(
            m.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Mp::String(s) => String::from_utf8_lossy(s.as_bytes()).into_owned(),
                        other => msgpack_to_json(other).to_string(),
                    };
                    (key, msgpack_to_json(v))
                })
                .collect(),
        ),
        Mp::Ext(_, _) => Js::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_and_lossy() {
        let j = json!({"b": [1, -2, 1.5, true, null, "x", u64::MAX], "a": {}});
        let mp = json_to_msgpack(&j);
        assert_eq!(msgpack_to_json(&mp), j);
        // Key order kept (serde_json's preserve_order is not needed for this check: the
        // msgpack side is a Vec).
        assert!(matches!(&mp, Mp::Map(m) if m.len() == 2));
        let bad = Mp::Map(vec![(Mp::from(1), Mp::Binary(vec![0xff, b'a']))]);
        assert_eq!(msgpack_to_json(&bad), json!({"1": "\u{fffd}a"}));
        assert_eq!(msgpack_to_json(&Mp::F64(f64::NAN)), Js::Null);
    }
}
