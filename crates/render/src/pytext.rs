//! Template values as Python writes them: `{{ value }}` and the `string` filter are
//! Python's `str()` (lists and dicts as their `repr`: `['a', None]`, `{'k': 1.0}`), and the
//! `format` and `round` filters are Jinja2's over Python's `%` and `round`.

use std::fmt;
use std::sync::Arc;

use minijinja::value::{Enumerator, Object, ObjectRepr, Rest, Value as Mj, ValueKind};
use minijinja::{Error, ErrorKind, Output, State};
use salt_compat::{py_float_repr, py_str_repr};

/// A Python tuple (what `regex_search` returns): a sequence that prints as `('a', None)`.
#[derive(Debug)]
pub struct Tuple(Vec<Mj>);

/// A tuple of these items.
pub fn tuple(items: Vec<Mj>) -> Mj {
    Mj::from_object(Tuple(items))
}

impl Object for Tuple {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &Mj) -> Option<Mj> {
        let i = key.as_i64()?;
        let i = if i < 0 { self.0.len() as i64 + i } else { i };
        self.0.get(usize::try_from(i).ok()?).cloned()
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Seq(self.0.len())
    }

    fn render(self: &Arc<Self>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&py_repr(&Mj::from_dyn_object(self.clone())))
    }
}

/// Python `repr()` of a template value.
pub fn py_repr(v: &Mj) -> String {
    let mut out = String::new();
    repr_into(v, &mut out);
    out
}

fn float_of(v: &Mj) -> f64 {
    f64::try_from(v.clone()).unwrap_or(f64::NAN)
}

fn repr_into(v: &Mj, out: &mut String) {
    match v.kind() {
        ValueKind::Undefined | ValueKind::None => out.push_str("None"),
        ValueKind::Bool => out.push_str(if v.is_true() { "True" } else { "False" }),
        ValueKind::Number if v.is_integer() => out.push_str(&v.to_string()),
        ValueKind::Number => out.push_str(&py_float_repr(float_of(v))),
        ValueKind::String => out.push_str(&py_str_repr(v.as_str().unwrap_or_default())),
        ValueKind::Bytes => {
            out.push('b');
            out.push_str(&py_str_repr(&String::from_utf8_lossy(
                v.as_bytes().unwrap_or_default(),
            )));
        }
        ValueKind::Seq if v.downcast_object_ref::<Tuple>().is_some() => {
            out.push('(');
            let n = items_into(v, out);
            out.push_str(if n == 1 { ",)" } else { ")" });
        }
        ValueKind::Seq | ValueKind::Iterable => {
            out.push('[');
            items_into(v, out);
            out.push(']');
        }
        ValueKind::Map => {
            out.push('{');
            for (i, k) in v.try_iter().into_iter().flatten().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr_into(&k, out);
                out.push_str(": ");
                repr_into(&v.get_item(&k).unwrap_or_default(), out);
            }
            out.push('}');
        }
        _ => out.push_str(&v.to_string()),
    }
}

/// The items of a sequence, `, `-separated; how many there were.
fn items_into(v: &Mj, out: &mut String) -> usize {
    let mut n = 0;
    for item in v.try_iter().into_iter().flatten() {
        if n > 0 {
            out.push_str(", ");
        }
        repr_into(&item, out);
        n += 1;
    }
    n
}

/// Python `str()` of a template value, when it differs from minijinja's text: containers,
/// floats, `None` and booleans. `None`: minijinja's own text is Python's.
fn py_str(v: &Mj) -> Option<String> {
    match v.kind() {
        ValueKind::Seq | ValueKind::Map | ValueKind::None | ValueKind::Bool => Some(py_repr(v)),
        ValueKind::Number if !v.is_integer() => Some(py_float_repr(float_of(v))),
        _ => None,
    }
}

/// Python `str()` of a template value.
pub fn py_text(v: &Mj) -> String {
    py_str(v).unwrap_or_else(|| v.to_string())
}

/// The formatter of `{{ value }}`: Python's `str()` (no autoescaping: Salt turns it off).
pub fn formatter(out: &mut Output, state: &State, v: &Mj) -> Result<(), Error> {
    match py_str(v) {
        Some(text) => out
            .write_str(&text)
            .map_err(|e| Error::new(ErrorKind::WriteFailure, e.to_string())),
        None => minijinja::escape_formatter(out, state, v),
    }
}

/// Jinja2's `string` filter: `str(value)`.
pub fn string_filter(v: &Mj) -> Result<Mj, Error> {
    if v.is_undefined() {
        return Err(Error::from(ErrorKind::UndefinedError));
    }
    Ok(match v.kind() {
        ValueKind::String => v.clone(),
        _ => Mj::from(py_text(v)),
    })
}

/// Jinja2's `format` filter (`value % args`): containers and `None` in the arguments are
/// Python's text (`%s` of a list is its `repr`), then minijinja's printf formatting.
pub fn format_filter(state: &State, fmt: &Mj, args: Rest<Mj>) -> Result<Mj, Error> {
    let args = args
        .iter()
        .map(|a| match a.kind() {
            ValueKind::Seq | ValueKind::Map | ValueKind::None => Mj::from(py_repr(a)),
            _ => a.clone(),
        })
        .collect();
    minijinja::filters::format(state, fmt, Rest(args))
}

/// Jinja2's `round(value, precision=0, method='common')`: Python's `round` (halves to even,
/// on the float's exact value), or `ceil`/`floor` at that precision; always a float.
pub fn round_filter(v: f64, precision: Option<i32>, method: Option<String>) -> Result<f64, Error> {
    let p = precision.unwrap_or(0);
    let scale = 10f64.powi(p);
    match method.as_deref().unwrap_or("common") {
        "common" if p >= 0 => Ok(format!("{v:.*}", p as usize).parse().unwrap_or(v)),
        "common" => Ok((v * scale).round_ties_even() / scale),
        "ceil" => Ok((v * scale).ceil() / scale),
        "floor" => Ok((v * scale).floor() / scale),
        _ => Err(Error::new(
            ErrorKind::InvalidOperation,
            "method must be common, ceil or floor",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_like_python() {
        let r = |v, p| round_filter(v, Some(p), None).unwrap();
        assert_eq!(r(2.5, 0), 2.0);
        assert_eq!(r(3.5, 0), 4.0);
        assert_eq!(r(2.675, 2), 2.67);
        assert_eq!(r(2.567, 1), 2.6);
        assert_eq!(r(1234.5, -2), 1200.0);
        assert_eq!(round_filter(2.1, None, Some("ceil".into())).unwrap(), 3.0);
        assert!(round_filter(2.1, None, Some("up".into())).is_err());
    }

    #[test]
    fn repr_like_python() {
        let v = Mj::from_serialize(serde_json::json!({"a": [1, "x'", null, true, 2.0], "b": {}}));
        assert_eq!(py_repr(&v), r#"{'a': [1, "x'", None, True, 2.0], 'b': {}}"#);
        assert_eq!(string_filter(&Mj::from(1e16)).unwrap().to_string(), "1e+16");
    }
}
