//! `file.replace` (`salt/modules/file.py`): a regex substitution over the whole file, with
//! Salt's `append_if_not_found`/`prepend_if_not_found`, `.bak` backup and unified diff.
//! Patterns use Rust's `regex` syntax, which is Python's without look-around and
//! backreferences in the pattern (those are refused by the regex compiler, by name).

use rmpv::Value;

use crate::{Args, Ret, is_true, text};

/// Python's `difflib.unified_diff` of two texts, as Salt's `get_diff` joins it: a last
/// line without a newline runs into the next one (no `\ No newline at end of file`).
pub fn unified_diff(old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header("", "")
        .to_string()
        .replace("\n\\ No newline at end of file\n", "")
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

fn eol(line: &str) -> &str {
    if line.ends_with("\r\n") {
        "\r\n"
    } else if line.ends_with('\n') {
        "\n"
    } else if line.ends_with('\r') {
        "\r"
    } else {
        ""
    }
}

fn set_eol(src: &str, line: &str) -> String {
    let e = match eol(src) {
        "" => "\n",
        e => e,
    };
    format!("{}{e}", line.trim_end())
}

fn set_indent(src: &str, line: &str, indent: bool) -> String {
    if !indent {
        return line.to_owned();
    }
    let idt: String = src
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    format!("{idt}{}", line.trim_start())
}

/// `_regex_to_static`: the lines matching `re` (DOTALL search, or containing it).
fn to_static(lines: &[String], re: Option<&str>) -> Result<Option<Vec<String>>, String> {
    let Some(re) = re.filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    if lines.is_empty() {
        return Ok(None);
    }
    let c = regex::Regex::new(&format!("(?s){re}")).map_err(|e| format!("{e}: '{re}'"))?;
    Ok(Some(
        lines
            .iter()
            .filter(|l| c.is_match(l) || l.contains(re))
            .cloned()
            .collect(),
    ))
}

fn assert_one(probe: &[String], target: &str) -> Result<(), String> {
    let msg = match probe.len() {
        0 => "less than",
        1 => return Ok(()),
        _ => "more than",
    };
    Err(format!(
        "Found {msg} expected occurrences in \"{target}\" expression"
    ))
}

/// `_set_line`.
#[allow(clippy::too_many_arguments)]
fn set_line(
    mut lines: Vec<String>,
    content: Option<&str>,
    matcher: Option<&str>,
    mode: &str,
    location: Option<&str>,
    before: Option<&str>,
    after: Option<&str>,
    indent: bool,
) -> Result<Vec<String>, String> {
    let matcher = if matcher.is_none_or(str::is_empty) && before.is_none() && after.is_none() {
        content
    } else {
        matcher
    };
    let after = to_static(&lines, after)?;
    let before = to_static(&lines, before)?;
    let m = to_static(&lines, matcher)?;
    let content = content.unwrap_or("");
    let pos = |l: &[String], x: &str| l.iter().position(|y| y == x).unwrap_or(0);
    let some = |v: &Option<Vec<String>>| v.as_ref().is_some_and(|v| !v.is_empty());
    if lines.is_empty() && (mode == "delete" || mode == "replace") {
        return Ok(Vec::new());
    }
    match mode {
        "delete" if some(&m) => {
            let first = m.as_ref().map(|v| v[0].clone()).unwrap_or_default();
            lines.retain(|l| *l != first);
        }
        "replace" if some(&m) => {
            let first = m.as_ref().map(|v| v[0].clone()).unwrap_or_default();
            let idx = pos(&lines, &first);
            let orig = lines.remove(idx);
            lines.insert(idx, set_indent(&orig, content, indent));
        }
        "insert" => {
            if before.is_none() && after.is_none() && location.is_none() {
                return Err(
                    "On insert either \"location\" or \"before/after\" conditions are required."
                        .into(),
                );
            }
            if let Some(loc) = location.filter(|l| !l.is_empty()) {
                if loc == "end" {
                    let last = lines.last().cloned();
                    match last {
                        Some(l) => lines.push(set_indent(&l, content, indent)),
                        None => lines.push(content.to_owned()),
                    }
                } else if loc == "start" {
                    if lines.is_empty() {
                        lines = vec![format!("{content}\n")];
                    } else {
                        let l = set_eol(&lines[0], content);
                        lines.insert(0, l);
                    }
                }
            } else if some(&before) && some(&after) {
                let (b, a) = (before.unwrap_or_default(), after.unwrap_or_default());
                assert_one(&b, "before")?;
                assert_one(&a, "after")?;
                let last = pos(&lines, &b[0]);
                let l = set_indent(&lines[last], content, indent);
                lines.insert(last, l);
            } else if some(&after) {
                let a = after.unwrap_or_default();
                assert_one(&a, "after")?;
                let idx = pos(&lines, &a[0]);
                let next = lines.get(idx + 1);
                if next.is_none_or(|n| {
                    n.trim_end_matches(['\r', '\n']) != content.trim_end_matches(['\r', '\n'])
                }) {
                    let l = set_indent(&lines[idx], content, indent);
                    lines.insert(idx + 1, l);
                }
            } else if some(&before) {
                let b = before.unwrap_or_default();
                assert_one(&b, "before")?;
                let idx = pos(&lines, &b[0]);
                let prev = &lines[if idx == 0 { lines.len() - 1 } else { idx - 1 }];
                if prev.trim_end_matches(['\r', '\n']) != content.trim_end_matches(['\r', '\n']) {
                    let l = set_indent(&lines[idx], content, indent);
                    lines.insert(idx, l);
                }
            } else {
                return Err("Neither before or after was found in file".into());
            }
        }
        "ensure" => {
            if some(&before) && some(&after) {
                let (b, a) = (before.unwrap_or_default(), after.unwrap_or_default());
                assert_one(&a, "after")?;
                assert_one(&b, "before")?;
                let ai = pos(&lines, &a[0]);
                let bi = pos(&lines, &b[0]);
                if !lines.iter().any(|l| l.trim_start() == content) {
                    if ai + 1 == bi {
                        let l = set_indent(&lines[ai], content, indent);
                        lines.insert(ai + 1, l);
                    } else if ai + 2 == bi {
                        lines[ai + 1] = set_indent(&lines[ai], content, indent);
                    } else {
                        return Err(
                            "Found more than one line between boundaries \"before\" and \"after\"."
                                .into(),
                        );
                    }
                }
            } else if some(&before) {
                let b = before.unwrap_or_default();
                assert_one(&b, "before")?;
                let bi = pos(&lines, &b[0]);
                let prev_idx = if bi == 0 { lines.len() - 1 } else { bi - 1 };
                if bi == 0
                    || lines[bi - 1].trim_end_matches(['\r', '\n'])
                        != content.trim_end_matches(['\r', '\n'])
                {
                    let l = set_indent(&lines[prev_idx], content, indent);
                    lines.insert(bi, l);
                }
            } else if some(&after) {
                let a = after.unwrap_or_default();
                assert_one(&a, "after")?;
                let ai = pos(&lines, &a[0]);
                if ai + 1 >= lines.len()
                    || lines[ai + 1].trim_end_matches(['\r', '\n'])
                        != content.trim_end_matches(['\r', '\n'])
                {
                    let l = set_indent(&lines[ai], content, indent);
                    lines.insert(ai + 1, l);
                }
            } else {
                return Err("Wrong conditions? Unable to ensure line without knowing where to put it before and/or after.".into());
            }
        }
        _ => {}
    }
    Ok(lines)
}

/// `file.line`; `test=True` (the minion's test mode) computes without writing.
pub fn line_fn(path: &str, a: &Args<'_>) -> Ret {
    let real = std::fs::canonicalize(path)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.to_owned());
    if !std::path::Path::new(&real).is_file() {
        if a.flag("quiet", false) {
            return Ok(Value::Boolean(false));
        }
        return Err(format!("File \"{real}\" does not exists or is not a file."));
    }
    let mode = a.str(3, "mode").map(|m| m.to_lowercase());
    let mode = match mode.as_deref() {
        None => return Err("Mode was not defined. How to process the file?".into()),
        Some(m @ ("insert" | "ensure" | "delete" | "replace")) => m.to_owned(),
        Some(m) => return Err(format!("Unknown mode: \"{m}\"")),
    };
    let content = a.str(1, "content");
    if mode != "delete" && content.is_none() {
        return Err("Content can only be empty if mode is \"delete\"".into());
    }
    let test = a.flag("test", false);
    let text = std::fs::read_to_string(&real).map_err(|e| format!("{real}: {e}"))?;
    let mut body: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
    if body.last().is_some_and(|l| !eol(l).is_empty()) {
        body.push(String::new());
    }
    if text.is_empty() && (mode == "delete" || mode == "replace") {
        body.clear();
    }
    let mut body = set_line(
        body,
        content.as_deref(),
        a.str(2, "match").as_deref(),
        &mode,
        a.str(4, "location").as_deref(),
        a.str(5, "before").as_deref(),
        a.str(6, "after").as_deref(),
        a.kwarg("indent").is_none_or(is_true),
    )?;
    let n = body.len();
    for idx in 0..n {
        if eol(&body[idx]).is_empty() && idx + 1 < n {
            let prev = if idx == 0 { 1 } else { idx - 1 };
            body[idx] = set_eol(&body[prev].clone(), &body[idx].clone());
        }
    }
    if body.last().is_some_and(String::is_empty) {
        body.pop();
    }
    let new = body.concat();
    let changed = new != text;
    if a.flag("backup", false) && changed && !test {
        return Err("file.line: 'backup' is not supported by salt-rs".into());
    }
    let show = a.kwarg("show_changes").is_none_or(is_true);
    let diff = if changed && show {
        unified_diff(&text, &new)
    } else {
        String::new()
    };
    if changed && !test {
        std::fs::write(&real, &new).map_err(|e| format!("{real}: {e}"))?;
    }
    if show && changed {
        return Ok(Value::from(diff));
    }
    Ok(Value::Boolean(changed))
}
