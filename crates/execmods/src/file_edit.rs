//! `file.replace` (`salt/modules/file.py`): a regex substitution over the whole file, with
//! Salt's `append_if_not_found`/`prepend_if_not_found`, `.bak` backup and unified diff.
//! Patterns use Rust's `regex` syntax, which is Python's without look-around and
//! backreferences in the pattern (those are refused by the regex compiler, by name).

use rmpv::Value;

use crate::{Args, Ret, is_true, text};

/// Python's `difflib.unified_diff` of two texts, as Salt's `get_diff` joins it.
pub fn unified_diff(old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header("", "")
        .to_string()
}

fn flags(v: Option<&Value>) -> Result<String, String> {
    let mut out = String::new();
    let mut add = |name: &str| -> Result<(), String> {
        match name.to_ascii_uppercase().as_str() {
            "MULTILINE" | "M" => out.push('m'),
            "IGNORECASE" | "I" => out.push('i'),
            "DOTALL" | "S" => out.push('s'),
            "VERBOSE" | "X" => out.push('x'),
            other => {
                return Err(format!(
                    "file.replace: flag '{other}' is not supported by salt-rs"
                ));
            }
        }
        Ok(())
    };
    match v {
        None => add("MULTILINE")?,
        Some(Value::Array(items)) => {
            for i in items {
                add(&text(i))?;
            }
        }
        Some(Value::Integer(n)) => {
            let n = n.as_u64().unwrap_or(0);
            for (bit, name) in [(2, "I"), (8, "M"), (16, "S"), (64, "X")] {
                if n & bit != 0 {
                    add(name)?;
                }
            }
            if n & !(2 | 8 | 16 | 64) != 0 {
                return Err(format!(
                    "file.replace: flags {n} are not supported by salt-rs"
                ));
            }
        }
        Some(other) => add(&text(other))?,
    }
    Ok(out)
}

/// Python's replacement syntax (`\1`, `\g<name>`) in Rust's (`${1}`, `${name}`).
fn repl_syntax(repl: &str) -> String {
    let re = regex::Regex::new(r"\\(\d+)|\\g<(\w+)>|\$").unwrap_or_else(|_| unreachable!());
    re.replace_all(repl, |c: &regex::Captures<'_>| {
        if let Some(d) = c.get(1).or(c.get(2)) {
            format!("${{{}}}", d.as_str())
        } else {
            "$$".into()
        }
    })
    .into_owned()
}

/// `file.replace` with its keyword arguments; `dry_run` as the state's `test=True`.
pub fn replace_fn(path: &str, a: &Args<'_>) -> Ret {
    a.refuse(&[
        "bufsize",
        "ignore_if_missing",
        "backslash_literal",
        "preserve_inode",
    ])?;
    let pattern = a.req(1, "pattern")?;
    let repl = a.req(2, "repl")?;
    let count = a.get(3, "count").and_then(Value::as_u64).unwrap_or(0) as usize;
    let fl = flags(a.get(4, "flags"))?;
    let append = a.flag("append_if_not_found", false);
    let prepend = a.flag("prepend_if_not_found", false);
    let nfc = a.str(99, "not_found_content");
    let backup = match a.kwarg("backup") {
        None => Some(".bak".to_owned()),
        Some(Value::Boolean(false) | Value::Nil) => None,
        Some(v) => Some(text(v)),
    };
    let dry = a.flag("dry_run", false);
    let search_only = a.flag("search_only", false);
    let show = a.kwarg("show_changes").map(is_true).unwrap_or(true);
    if search_only && (append || prepend) {
        return Err("search_only cannot be used with append/prepend_if_not_found".into());
    }
    if append && prepend {
        return Err("Only one of append and prepend_if_not_found is permitted".into());
    }
    if !std::path::Path::new(path).exists() {
        return Err(format!("{path}: File not found"));
    }
    let re = regex::Regex::new(&format!("(?{fl}){pattern}"))
        .map_err(|e| format!("file.replace: pattern not supported by salt-rs regex: {e}"))?;
    let orig = std::fs::read_to_string(path)
        .map_err(|e| format!("Unable to open file '{path}'. Exception: {e}"))?;
    if search_only {
        return Ok(Value::Boolean(re.is_match(&orig)));
    }
    let nrepl = re.find_iter(&orig).count();
    let nrepl = if count == 0 { nrepl } else { nrepl.min(count) };
    let mut result = re
        .replacen(&orig, count, repl_syntax(&repl).as_str())
        .into_owned();
    let mut found = nrepl > 0;
    let content = nfc
        .clone()
        .filter(|_| append || prepend)
        .unwrap_or(repl.clone());
    if append || prepend {
        let f = regex::Regex::new(&format!("(?{fl})^{}(?:$|\r\n)", regex::escape(&content)))
            .map_err(|e| e.to_string())?;
        if f.is_match(&orig) {
            found = true;
        }
    }
    if !found && (append || prepend) {
        let add = format!("{}\n", nfc.unwrap_or(repl));
        if prepend {
            result = format!("{add}{result}");
        } else {
            if !result.is_empty() && !result.ends_with('\n') {
                result.push('\n');
            }
            result.push_str(&add);
        }
    }
    let changed = orig != result;
    if changed && !dry {
        if let Some(b) = &backup {
            std::fs::copy(path, format!("{path}{b}")).map_err(|e| format!("Exception: {e}"))?;
        }
        std::fs::write(path, &result).map_err(|e| format!("Unable to write file '{path}': {e}"))?;
    }
    let diff = unified_diff(&orig, &result);
    if show {
        return Ok(Value::from(diff));
    }
    Ok(Value::Boolean(changed && !diff.is_empty()))
}

/// `file.line` is not done in salt-rs.
pub fn line_fn(_path: &str, _a: &Args<'_>) -> Ret {
    Err("'file.line' is not available.".into())
}
