//! The Python `str` and `dict` methods formulas call that minijinja-contrib's `pycompat`
//! lacks (`partition`, `rpartition`, `rsplit`, `zfill`, `index`, `ljust`, ..., `dict.items()`
//! as tuples), then `pycompat`'s.

use minijinja::value::{Value as Mj, ValueKind};
use minijinja::{Error, State};

use crate::pyformat::{py_type, type_error, value_error};
use crate::pytext::tuple;
use crate::values::mutable;

/// Python `str` methods beyond `pycompat`'s, then `pycompat`'s (lists from `split` made
/// mutable, as Python's are).
pub fn unknown_method(state: &State, value: &Mj, method: &str, args: &[Mj]) -> Result<Mj, Error> {
    if let Some(s) = value.as_str()
        && let Some(r) = str_method(s, method, args)?
    {
        return Ok(r);
    }
    // `dict.items()`: (key, value) tuples.
    if method == "items" && value.kind() == ValueKind::Map && args.is_empty() {
        let pairs: Vec<Mj> = value
            .try_iter()?
            .map(|k| {
                let v = value.get_item(&k).unwrap_or_default();
                tuple(vec![k, v])
            })
            .collect();
        return Ok(Mj::from(pairs));
    }
    let r = minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)?;
    Ok(match method {
        "split" | "splitlines" => mutable(&r),
        _ => r,
    })
}

fn arg_str<'a>(args: &'a [Mj], i: usize, method: &str) -> Result<Option<&'a str>, Error> {
    match args.get(i) {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => v.as_str().map(Some).ok_or_else(|| {
            type_error(format!(
                "{method}() argument must be str, not {}",
                py_type(v)
            ))
        }),
    }
}

fn arg_int(args: &[Mj], i: usize) -> Option<i64> {
    args.get(i).and_then(Mj::as_i64)
}

fn pad(s: &str, width: usize, fill: char, how: char) -> String {
    let len = s.chars().count();
    if width <= len {
        return s.to_owned();
    }
    let total = width - len;
    let (left, right) = match how {
        'l' => (0, total),
        'r' => (total, 0),
        // Python's center: the extra fill goes left when the padding and width are odd.
        _ => {
            let left = total / 2 + (total & width & 1);
            (left, total - left)
        }
    };
    let f = |n: usize| fill.to_string().repeat(n);
    format!("{}{s}{}", f(left), f(right))
}

fn str_method(s: &str, method: &str, args: &[Mj]) -> Result<Option<Mj>, Error> {
    let strs = |v: Vec<&str>| Mj::from(v.into_iter().map(Mj::from).collect::<Vec<_>>());
    Ok(Some(match method {
        "partition" | "rpartition" => {
            let sep = arg_str(args, 0, method)?.unwrap_or_default();
            if sep.is_empty() {
                return Err(value_error("empty separator"));
            }
            let found = if method == "partition" {
                s.split_once(sep)
            } else {
                s.rsplit_once(sep)
            };
            let parts = match found {
                Some((a, b)) => vec![a, sep, b],
                None if method == "partition" => vec![s, "", ""],
                None => vec!["", "", s],
            };
            tuple(parts.into_iter().map(Mj::from).collect())
        }
        "rsplit" => {
            let sep = arg_str(args, 0, method)?;
            let max = arg_int(args, 1).unwrap_or(-1);
            let mut parts: Vec<&str> = match (sep, max) {
                (Some(""), _) => return Err(value_error("empty separator")),
                (Some(sep), m) if m < 0 => s.rsplit(sep).collect(),
                (Some(sep), m) => s
                    .rsplitn(usize::try_from(m).unwrap_or(0) + 1, sep)
                    .collect(),
                (None, m) => {
                    let mut out = Vec::new();
                    let mut rest = s.trim_end();
                    while !rest.is_empty() {
                        if m >= 0 && out.len() as i64 == m {
                            out.push(rest.trim_end());
                            break;
                        }
                        match rest.rfind(char::is_whitespace) {
                            Some(i) => {
                                let w = rest[i..].chars().next().map_or(1, char::len_utf8);
                                out.push(&rest[i + w..]);
                                rest = rest[..i].trim_end();
                            }
                            None => {
                                out.push(rest);
                                rest = "";
                            }
                        }
                    }
                    out
                }
            };
            parts.reverse();
            mutable(&strs(parts))
        }
        "zfill" => {
            let w = usize::try_from(arg_int(args, 0).unwrap_or(0)).unwrap_or(0);
            let (sign, rest) = match s.chars().next() {
                Some(c @ ('+' | '-')) => (c.to_string(), &s[1..]),
                _ => (String::new(), s),
            };
            let len = s.chars().count();
            Mj::from(if w > len {
                format!("{sign}{}{rest}", "0".repeat(w - len))
            } else {
                s.to_owned()
            })
        }
        "index" | "rindex" => {
            let sub = arg_str(args, 0, method)?.unwrap_or_default();
            let at = if method == "index" {
                s.find(sub)
            } else {
                s.rfind(sub)
            };
            match at {
                Some(i) => Mj::from(s[..i].chars().count() as i64),
                None => return Err(value_error("substring not found")),
            }
        }
        "ljust" | "rjust" | "center" => {
            let w = usize::try_from(arg_int(args, 0).unwrap_or(0)).unwrap_or(0);
            let fill = arg_str(args, 1, method)?
                .and_then(|f| f.chars().next())
                .unwrap_or(' ');
            Mj::from(pad(s, w, fill, method.chars().next().unwrap_or('c')))
        }
        "swapcase" => Mj::from(
            s.chars()
                .map(|c| {
                    if c.is_uppercase() {
                        c.to_lowercase().to_string()
                    } else {
                        c.to_uppercase().to_string()
                    }
                })
                .collect::<String>(),
        ),
        "casefold" => Mj::from(s.to_lowercase()),
        "removeprefix" => Mj::from(
            s.strip_prefix(arg_str(args, 0, method)?.unwrap_or_default())
                .unwrap_or(s),
        ),
        "removesuffix" => Mj::from(
            s.strip_suffix(arg_str(args, 0, method)?.unwrap_or_default())
                .unwrap_or(s),
        ),
        "istitle" => {
            let mut prev_cased = false;
            let mut any = false;
            let mut ok = true;
            for c in s.chars() {
                if c.is_uppercase() {
                    ok &= !prev_cased;
                    prev_cased = true;
                    any = true;
                } else if c.is_lowercase() {
                    ok &= prev_cased;
                    prev_cased = true;
                    any = true;
                } else {
                    prev_cased = false;
                }
            }
            Mj::from(ok && any)
        }
        "isdecimal" => Mj::from(!s.is_empty() && s.chars().all(|c| c.is_ascii_digit())),
        "isidentifier" => Mj::from(
            s.chars()
                .next()
                .is_some_and(|c| c == '_' || c.is_alphabetic())
                && s.chars().all(|c| c == '_' || c.is_alphanumeric()),
        ),
        _ => return Ok(None),
    }))
}
