//! Python's `%` string formatting (`"/home/%s" % name`, `"%(a)s" % d`, `"%5.2f" % x`). The
//! prepass turns `'lit' % operand` into `__pyfmt('lit', operand)`.

use minijinja::value::{Rest, Value as Mj, ValueKind};
use minijinja::{Error, ErrorKind};

use crate::pytext::{py_repr, py_text};

pub(crate) fn type_error(msg: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("TypeError: {}", msg.into()),
    )
}

pub(crate) fn value_error(msg: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("ValueError: {}", msg.into()),
    )
}

/// `fmt % arg` (`__pyfmt`): a tuple spreads, anything else is the one argument (a dict also
/// serves `%(name)s`).
pub fn pyfmt(fmt: &str, arg: Mj) -> Result<String, Error> {
    if arg.downcast_object_ref::<crate::pytext::Tuple>().is_some() {
        let items: Vec<Mj> = arg.try_iter()?.collect();
        return format(fmt, &items, None);
    }
    let map = (arg.kind() == ValueKind::Map).then(|| arg.clone());
    format(fmt, std::slice::from_ref(&arg), map.as_ref())
}

/// `fmt % (a, b, ...)` (`__pyfmt_t`): the tuple written in the template.
pub fn pyfmt_tuple(fmt: &str, args: Rest<Mj>) -> Result<String, Error> {
    format(fmt, &args, None)
}

fn float_of(v: &Mj, conv: char) -> Result<f64, Error> {
    match v.kind() {
        ValueKind::Number | ValueKind::Bool => {
            Ok(f64::try_from(v.clone()).unwrap_or(if v.is_true() { 1.0 } else { 0.0 }))
        }
        _ => Err(type_error(format!(
            "%{conv} format: a real number is required, not {}",
            py_type(v)
        ))),
    }
}

fn int_of(v: &Mj, conv: char) -> Result<i128, Error> {
    match v.kind() {
        ValueKind::Bool => Ok(i128::from(v.is_true())),
        ValueKind::Number if v.is_integer() => {
            i128::try_from(v.clone()).map_err(|_| type_error("integer out of range"))
        }
        ValueKind::Number if matches!(conv, 'd' | 'i' | 'u') => {
            Ok(f64::try_from(v.clone()).unwrap_or(0.0).trunc() as i128)
        }
        _ => Err(type_error(format!(
            "%{conv} format: {} is required, not {}",
            if matches!(conv, 'd' | 'i' | 'u') {
                "a real number"
            } else {
                "an integer"
            },
            py_type(v)
        ))),
    }
}

pub(crate) fn py_type(v: &Mj) -> &'static str {
    match v.kind() {
        ValueKind::String => "str",
        ValueKind::Seq => "list",
        ValueKind::Map => "dict",
        ValueKind::None | ValueKind::Undefined => "NoneType",
        ValueKind::Bool => "bool",
        ValueKind::Number if v.is_integer() => "int",
        ValueKind::Number => "float",
        _ => "object",
    }
}

/// Python's `%e` mantissa/exponent text: `1.500000e+05`.
fn exp_text(x: f64, prec: usize, upper: bool) -> String {
    let s = format!("{x:.prec$e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    let sign = if e < 0 { '-' } else { '+' };
    let out = format!("{m}e{sign}{:02}", e.abs());
    if upper { out.to_uppercase() } else { out }
}

/// Python's `%g`.
fn g_text(x: f64, prec: usize, alt: bool, upper: bool) -> String {
    if !x.is_finite() {
        return nonfinite(x, upper);
    }
    let p = prec.max(1);
    if x == 0.0 {
        return if alt {
            format!("{:.*}", p - 1, 0.0)
        } else {
            "0".into()
        };
    }
    let exp_form = exp_text(x, p - 1, upper);
    let e: i32 = exp_form
        .rsplit_once(['e', 'E'])
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    let text = if e < -4 || e >= p as i32 {
        exp_form
    } else {
        format!("{x:.*}", usize::try_from(p as i32 - 1 - e).unwrap_or(0))
    };
    if alt {
        return text;
    }
    match text.split_once(['e', 'E']) {
        Some((m, rest)) => {
            let m = if m.contains('.') {
                m.trim_end_matches('0').trim_end_matches('.')
            } else {
                m
            };
            format!("{m}{}{rest}", if upper { 'E' } else { 'e' })
        }
        None if text.contains('.') => text.trim_end_matches('0').trim_end_matches('.').to_owned(),
        None => text,
    }
}

fn nonfinite(x: f64, upper: bool) -> String {
    let s = if x.is_nan() {
        "nan"
    } else if x > 0.0 {
        "inf"
    } else {
        "-inf"
    };
    if upper {
        s.to_uppercase()
    } else {
        s.to_owned()
    }
}

/// One `%` conversion of `v`.
fn convert(v: &Mj, conv: char, prec: Option<usize>, flags: &str) -> Result<(String, bool), Error> {
    let alt = flags.contains('#');
    let numeric = !matches!(conv, 's' | 'r' | 'a' | 'c');
    let text = match conv {
        's' => py_text(v),
        'r' | 'a' => py_repr(v),
        'c' => match v.kind() {
            ValueKind::String if v.as_str().map(|s| s.chars().count()) == Some(1) => {
                v.as_str().unwrap_or_default().to_owned()
            }
            ValueKind::Number => char::from_u32(u32::try_from(int_of(v, 'c')?).unwrap_or(0xFFFD))
                .unwrap_or('\u{FFFD}')
                .to_string(),
            _ => return Err(type_error("%c requires int or char")),
        },
        'd' | 'i' | 'u' => int_of(v, conv)?.to_string(),
        'x' | 'X' | 'o' => {
            let n = int_of(v, conv)?;
            let (sign, mag) = if n < 0 {
                ("-", n.unsigned_abs())
            } else {
                ("", n.unsigned_abs())
            };
            let body = match conv {
                'x' => format!("{mag:x}"),
                'X' => format!("{mag:X}"),
                _ => format!("{mag:o}"),
            };
            let prefix = match (alt, conv) {
                (true, 'x') => "0x",
                (true, 'X') => "0X",
                (true, _) => "0o",
                _ => "",
            };
            format!("{sign}{prefix}{body}")
        }
        'f' | 'F' => {
            let x = float_of(v, conv)?;
            if x.is_finite() {
                format!("{x:.*}", prec.unwrap_or(6))
            } else {
                nonfinite(x, conv == 'F')
            }
        }
        'e' | 'E' => {
            let x = float_of(v, conv)?;
            if x.is_finite() {
                exp_text(x, prec.unwrap_or(6), conv == 'E')
            } else {
                nonfinite(x, conv == 'E')
            }
        }
        'g' | 'G' => g_text(float_of(v, conv)?, prec.unwrap_or(6), alt, conv == 'G'),
        other => {
            return Err(value_error(format!(
                "unsupported format character '{other}' (0x{:x})",
                other as u32
            )));
        }
    };
    let text = match (conv, prec) {
        ('s' | 'r' | 'a', Some(p)) => text.chars().take(p).collect(),
        ('d' | 'i' | 'u' | 'x' | 'X' | 'o', Some(p)) => {
            let (sign, digits) = text
                .strip_prefix('-')
                .map_or(("", text.as_str()), |d| ("-", d));
            if digits.len() < p && !alt {
                format!("{sign}{}{digits}", "0".repeat(p - digits.len()))
            } else {
                text.clone()
            }
        }
        _ => text,
    };
    Ok((text, numeric))
}

/// Python's `fmt % args` with `args` already spread (`map` for `%(name)s`).
pub fn format(fmt: &str, args: &[Mj], map: Option<&Mj>) -> Result<String, Error> {
    let mut out = String::with_capacity(fmt.len() + 16);
    let mut next = 0usize;
    let mut used_map = false;
    let mut chars = fmt.chars().peekable();
    let take = |next: &mut usize| -> Result<Mj, Error> {
        let v = args
            .get(*next)
            .cloned()
            .ok_or_else(|| type_error("not enough arguments for format string"))?;
        *next += 1;
        Ok(v)
    };
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut key: Option<String> = None;
        if chars.peek() == Some(&'(') {
            chars.next();
            let mut depth = 1;
            let mut k = String::new();
            for d in chars.by_ref() {
                match d {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                k.push(d);
            }
            key = Some(k);
        }
        let mut flags = String::new();
        while let Some(&f) = chars.peek() {
            if "-+ 0#".contains(f) {
                flags.push(f);
                chars.next();
            } else {
                break;
            }
        }
        let mut width: Option<usize> = None;
        if chars.peek() == Some(&'*') {
            chars.next();
            width = Some(usize::try_from(int_of(&take(&mut next)?, '*')?).unwrap_or(0));
        } else {
            let mut w = String::new();
            while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                w.push(d);
                chars.next();
            }
            width = w.parse().ok().or(width);
        }
        let mut prec: Option<usize> = None;
        if chars.peek() == Some(&'.') {
            chars.next();
            if chars.peek() == Some(&'*') {
                chars.next();
                prec = Some(usize::try_from(int_of(&take(&mut next)?, '*')?).unwrap_or(0));
            } else {
                let mut p = String::new();
                while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    p.push(d);
                    chars.next();
                }
                prec = Some(p.parse().unwrap_or(0));
            }
        }
        while chars.peek().is_some_and(|c| matches!(c, 'h' | 'l' | 'L')) {
            chars.next();
        }
        let Some(conv) = chars.next() else {
            return Err(value_error("incomplete format"));
        };
        if conv == '%' && key.is_none() {
            out.push('%');
            continue;
        }
        let v = match &key {
            Some(k) => {
                let Some(m) = map else {
                    return Err(type_error("format requires a mapping"));
                };
                used_map = true;
                m.get_item(&Mj::from(k.as_str()))
                    .ok()
                    .filter(|v| !v.is_undefined())
                    .ok_or_else(|| {
                        Error::new(
                            ErrorKind::InvalidOperation,
                            format!("KeyError: {}", py_repr(&Mj::from(k.as_str()))),
                        )
                    })?
            }
            None => take(&mut next)?,
        };
        let (mut text, numeric) = convert(&v, conv, prec, &flags)?;
        if numeric && !text.starts_with('-') {
            if flags.contains('+') {
                text.insert(0, '+');
            } else if flags.contains(' ') {
                text.insert(0, ' ');
            }
        }
        let len = text.chars().count();
        if let Some(w) = width.filter(|w| *w > len) {
            let pad = w - len;
            if flags.contains('-') {
                text.push_str(&" ".repeat(pad));
            } else if flags.contains('0') && numeric {
                let split = usize::from(text.starts_with(['-', '+', ' ']));
                let split = if text[split..].starts_with("0x")
                    || text[split..].starts_with("0X")
                    || text[split..].starts_with("0o")
                {
                    split + 2
                } else {
                    split
                };
                text.insert_str(split, &"0".repeat(pad));
            } else {
                text.insert_str(0, &" ".repeat(pad));
            }
        }
        out.push_str(&text);
    }
    if next < args.len() && !used_map && map.is_none() {
        return Err(type_error(
            "not all arguments converted during string formatting",
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(fmt: &str, args: Vec<Mj>) -> String {
        format(fmt, &args, None).unwrap()
    }

    #[test]
    fn percent_like_python() {
        assert_eq!(f("/home/%s", vec![Mj::from("bob")]), "/home/bob");
        assert_eq!(
            f(
                "%d|%5d|%-5d|%05d",
                vec![Mj::from(3), Mj::from(42), Mj::from(7), Mj::from(-12)]
            ),
            "3|   42|7    |-0012"
        );
        assert_eq!(
            f(
                "%5.2f|%.3e|%g|%g",
                vec![
                    Mj::from(2.71555),
                    Mj::from(1234.5),
                    Mj::from(0.0001),
                    Mj::from(1e16)
                ]
            ),
            " 2.72|1.234e+03|0.0001|1e+16"
        );
        assert_eq!(
            f("%r %s %%", vec![Mj::from("a"), Mj::from(())]),
            "'a' None %"
        );
        assert_eq!(
            f("%x %#o %+d", vec![Mj::from(255), Mj::from(8), Mj::from(5)]),
            "ff 0o10 +5"
        );
        let d = Mj::from_serialize(serde_json::json!({"a": 1, "b": "x"}));
        assert_eq!(pyfmt("%(a)s-%(b)s", d).unwrap(), "1-x");
        assert!(format("%s %s", &[Mj::from(1)], None).is_err());
        assert!(format("%s", &[Mj::from(1), Mj::from(2)], None).is_err());
    }
}
