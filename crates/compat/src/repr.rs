//! Python's `str()` and `repr()`: of text, of floats, of decoded msgpack values and of JSON
//! values. The one copy for every crate.

/// Python `repr` of a `str`: single quotes unless the text holds `'` and no `"`; `\\`,
/// `\n`, `\r`, `\t`, the quote, and the other C0 controls and DEL escaped.
pub fn py_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python `repr` of a `float`: the shortest text that reads back the same, in fixed notation
/// when the exponent is in -4..16 (`1e+16`, `1e-05`, `0.0001`, `100.0`, `-0.0`), and `nan`,
/// `inf`, `-inf`.
pub fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: `-1.2345e-5`, `1e16`, `0e0`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::from(sign);
    if (-4..16).contains(&exp) {
        if exp < 0 {
            out.push_str("0.");
            out.push_str(&"0".repeat((-exp - 1) as usize));
            out.push_str(&digits);
        } else {
            let int_len = exp as usize + 1;
            if digits.len() > int_len {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            } else {
                out.push_str(&digits);
                out.push_str(&"0".repeat(int_len - digits.len()));
                out.push_str(".0");
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let esign = if exp < 0 { '-' } else { '+' };
        out.push_str(&format!("e{esign}{:02}", exp.abs()));
    }
    out
}

/// Python `str()` of a decoded msgpack value: `None`, `True`/`False`, integers, floats as
/// [`py_float_repr`], text as is (invalid UTF-8 and bytes decoded lossily), lists and dicts
/// as their [`py_repr`].
pub fn py_str(v: &rmpv::Value) -> String {
    use rmpv::Value;
    match v {
        Value::Nil => "None".to_owned(),
        Value::Boolean(true) => "True".to_owned(),
        Value::Boolean(false) => "False".to_owned(),
        Value::Integer(i) => i.to_string(),
        Value::F32(f) => format!("{f:?}"),
        Value::F64(f) => py_float_repr(*f),
        Value::String(s) => s.as_str().map_or_else(
            || String::from_utf8_lossy(s.as_bytes()).into_owned(),
            str::to_owned,
        ),
        Value::Binary(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Array(_) | Value::Map(_) => py_repr(v),
        Value::Ext(..) => String::new(),
    }
}

/// Python `repr()` of a decoded msgpack value: text quoted as [`py_str_repr`], lists and
/// dicts item by item, everything else as [`py_str`].
pub fn py_repr(v: &rmpv::Value) -> String {
    use rmpv::Value;
    match v {
        Value::String(_) | Value::Binary(_) => py_str_repr(&py_str(v)),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(py_repr).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Map(entries) => {
            let parts: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", py_repr(k), py_repr(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        other => py_str(other),
    }
}

/// Python `str()` of a JSON value (as `json.loads` gives it): `None`, `True`/`False`,
/// integers, floats as [`py_float_repr`], text as is, lists and dicts as their
/// [`py_json_repr`].
pub fn py_json_str(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => match n.as_f64().filter(|_| n.is_f64()) {
            Some(f) => py_float_repr(f),
            None => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(_) | Value::Object(_) => py_json_repr(v),
    }
}

/// Python `repr()` of a JSON value: text quoted as [`py_str_repr`], lists and dicts item by
/// item, everything else as [`py_json_str`].
pub fn py_json_repr(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::String(s) => py_str_repr(s),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(py_json_repr)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", py_str_repr(k), py_json_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => py_json_str(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_python() {
        assert_eq!(py_str_repr("abc"), "'abc'");
        assert_eq!(py_str_repr("it's"), "\"it's\"");
        assert_eq!(py_str_repr("a'b\"c"), "'a\\'b\"c'");
        assert_eq!(py_str_repr("t\tn\n\\\x01\x7f"), "'t\\tn\\n\\\\\\x01\\x7f'");
        assert_eq!(py_str_repr("ü"), "'ü'");
    }

    #[test]
    fn values_like_python() {
        use rmpv::Value;
        let v = Value::Map(vec![
            (
                "a".into(),
                Value::Array(vec![1.into(), Value::Nil, "it's".into()]),
            ),
            ("b".into(), Value::F64(1e16)),
        ]);
        assert_eq!(py_str(&v), "{'a': [1, None, \"it's\"], 'b': 1e+16}");
        assert_eq!(py_str(&Value::from("x")), "x");
        assert_eq!(py_repr(&Value::from("x")), "'x'");
        let j = serde_json::json!({"a": [true, null, 1.5, "x"]});
        assert_eq!(py_json_str(&j), "{'a': [True, None, 1.5, 'x']}");
        assert_eq!(py_json_str(&serde_json::json!("x")), "x");
    }

    #[test]
    fn floats_like_python() {
        for (f, want) in [
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1e15, "1000000000000000.0"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1e-5, "1e-05"),
            (1.25e-7, "1.25e-07"),
            (0.0001, "0.0001"),
            (0.1, "0.1"),
            (2.5, "2.5"),
            (100.0, "100.0"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (1e300, "1e+300"),
            (-2.71, "-2.71"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(py_float_repr(f), want, "{f:e}");
        }
    }
}
