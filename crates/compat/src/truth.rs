//! Python's truth of a value (`bool(x)`), on decoded msgpack and on JSON values.

/// `bool(v)` of the Python object msgpack `v` decodes to: `None`, `False`, zero and empty
/// strings and containers are false; everything else (an ext type too) is true.
pub fn py_truthy(v: &rmpv::Value) -> bool {
    use rmpv::Value;
    match v {
        Value::Nil => false,
        Value::Boolean(b) => *b,
        Value::Integer(i) => i.as_i64() != Some(0) && i.as_u64() != Some(0),
        Value::F32(f) => *f != 0.0,
        Value::F64(f) => *f != 0.0,
        Value::String(s) => !s.as_bytes().is_empty(),
        Value::Binary(b) => !b.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Map(m) => !m.is_empty(),
        Value::Ext(..) => true,
    }
}

/// `bool(v)` of the Python object JSON `v` decodes to.
pub fn py_truthy_json(v: &serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_python() {
        for (v, t) in [
            (rmpv::Value::Nil, false),
            (0.into(), false),
            ((-1).into(), true),
            (u64::MAX.into(), true),
            (0.0f64.into(), false),
            ("".into(), false),
            ("0".into(), true),
            (rmpv::Value::Array(vec![]), false),
            (rmpv::Value::Map(vec![(1.into(), 1.into())]), true),
        ] {
            assert_eq!(py_truthy(&v), t, "{v:?}");
        }
        for (v, t) in [
            (serde_json::json!(null), false),
            (serde_json::json!(0), false),
            (serde_json::json!(0.5), true),
            (serde_json::json!(""), false),
            (serde_json::json!({}), false),
            (serde_json::json!([0]), true),
        ] {
            assert_eq!(py_truthy_json(&v), t, "{v}");
        }
    }
}
