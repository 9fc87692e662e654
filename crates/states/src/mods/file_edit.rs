//! `file.append`, `file.replace`, `file.touch` states (`salt/states/file.py`), on
//! `salt-execmods`' `file` module.

use std::path::Path;

use rmpv::Value;
use salt_execmods::Args;

use super::ret::{self, comment, fail};
use crate::engine::Ctx;
use crate::{map, set, truthy};
use salt_compat::map_get;
use salt_compat::py_str;

fn check_file(name: &str) -> Result<(), String> {
    if !Path::new(name).is_absolute() {
        Err(format!("Specified file {name} is not an absolute path"))
    } else if !Path::new(name).exists() {
        Err(format!("{name}: file not found"))
    } else {
        Ok(())
    }
}

/// `"\n".join(difflib.unified_diff(a, b))` on lines without their newlines.
fn joined_diff(old: &[String], new: &[String]) -> String {
    let text = |l: &[String]| l.iter().map(|x| format!("{x}\n")).collect::<String>();
    let d = super::file::unified_diff(&text(old), &text(new));
    d.lines()
        .map(|l| {
            if l.starts_with("--- ") || l.starts_with("+++ ") || l.starts_with("@@ ") {
                format!("{l}\n")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn lines_of(name: &str) -> Vec<String> {
    std::fs::read_to_string(name)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `build_whitespace_split_regex` (whitespace-split words; shlex quoting not applied).
fn ws_regex(chunk: &str) -> String {
    let mut re = String::new();
    for line in chunk.lines() {
        let parts: Vec<String> = line.split_whitespace().map(regex::escape).collect();
        re.push_str(&format!(
            r"(?:[\s]+)?{}(?:[\s]+)?",
            parts.join(r"(?:[\s]+)")
        ));
    }
    format!("(?m)^{re}$")
}

/// `file.touch`.
pub fn touch(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name = super::name_of(low);
    let mut r = map(vec![
        ("name", Value::from(name.as_str())),
        ("changes", Value::Map(vec![])),
    ]);
    if map_get(low, "atime").is_some() || map_get(low, "mtime").is_some() {
        return fail(
            r,
            "file.touch: 'atime'/'mtime' are not supported by salt-rs".into(),
        );
    }
    if !Path::new(&name).is_absolute() {
        return fail(r, format!("Specified file {name} is not an absolute path"));
    }
    let p = Path::new(&name);
    if ctx.opts.test {
        set(&mut r, "result", Value::Nil);
        if !p.exists() {
            comment(&mut r, format!("File {name} is set to be created"));
            set(
                &mut r,
                "changes",
                map(vec![("new", Value::from(name.as_str()))]),
            );
        } else {
            set(&mut r, "result", Value::Boolean(true));
            comment(
                &mut r,
                format!("File {name} exists and has the correct times"),
            );
            set(
                &mut r,
                "changes",
                map(vec![("new", Value::from(name.as_str()))]),
            );
        }
        return r;
    }
    if map_get(low, "makedirs").is_some_and(truthy)
        && let Some(d) = p.parent()
    {
        let _ = std::fs::create_dir_all(d);
    }
    if !p.parent().is_some_and(Path::is_dir) {
        return fail(r, format!("Directory not present to touch file {name}"));
    }
    let extant = p.exists();
    let pos = [Value::from(name.as_str())];
    let ok = salt_execmods::file::call("touch", &Args::new("file.touch", &pos, &[])).is_ok();
    set(&mut r, "result", Value::Boolean(ok));
    if ok && !extant {
        comment(&mut r, format!("Created empty file {name}"));
        set(
            &mut r,
            "changes",
            map(vec![("new", Value::from(name.as_str()))]),
        );
    } else if ok {
        let kind = if p.is_dir() { "directory" } else { "file" };
        comment(&mut r, format!("Updated times on {kind} {name}"));
        set(
            &mut r,
            "changes",
            map(vec![("touched", Value::from(name.as_str()))]),
        );
    }
    r
}

/// `file.append` (`text` only; `source`/`sources`/templates are refused).
pub fn append(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name = super::name_of(low);
    let mut r = ret::new(name.as_str(), false, "");
    for k in [
        "source",
        "sources",
        "source_hash",
        "source_hashes",
        "encoding",
    ] {
        if map_get(low, k).is_some_and(|v| !v.is_nil()) {
            return fail(
                r,
                format!("file.append option '{k}' is not supported by salt-rs"),
            );
        }
    }
    if name.is_empty() {
        return fail(r, "Must provide name to file.append".into());
    }
    let makedirs = map_get(low, "makedirs") == Some(&Value::Boolean(true));
    let dir = Path::new(&name)
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    if makedirs {
        if ctx.opts.test {
            comment(&mut r, format!("Directory {dir} is set to be updated"));
            set(&mut r, "result", Value::Nil);
        } else if !Path::new(&dir).is_dir()
            && let Err(e) = std::fs::create_dir_all(&dir)
        {
            return fail(r, e.to_string());
        }
    }
    if let Err(msg) = check_file(&name) {
        let t = touch(ctx, low);
        if ctx.opts.test {
            return t;
        }
        if check_file(&name).is_err() {
            return fail(r, msg);
        }
    }
    let text: Vec<String> = match map_get(low, "text") {
        Some(Value::Array(a)) => a.iter().map(py_str).collect(),
        Some(Value::Nil) | None => {
            return fail(r, "No text found to append. Nothing appended".into());
        }
        Some(v) => vec![py_str(v)],
    };
    let body = std::fs::read_to_string(&name).unwrap_or_default();
    let slines = lines_of(&name);
    let ignore_ws = map_get(low, "ignore_whitespace").is_none_or(truthy);
    let mut add = Vec::new();
    for chunk in &text {
        let pat = if ignore_ws {
            ws_regex(chunk)
        } else {
            format!("(?m){chunk}")
        };
        if regex::Regex::new(&pat).is_ok_and(|re| re.is_match(&body)) {
            continue;
        }
        add.extend(chunk.lines().map(str::to_owned));
    }
    if ctx.opts.test {
        comment(&mut r, format!("File {name} is set to be updated"));
        set(&mut r, "result", Value::Nil);
        let mut n = slines.clone();
        n.extend(add.iter().cloned());
        if n != slines {
            set(
                &mut r,
                "changes",
                map(vec![("diff", Value::from(joined_diff(&slines, &n)))]),
            );
        } else {
            comment(&mut r, format!("File {name} is in correct state"));
            set(&mut r, "result", Value::Boolean(true));
        }
        return r;
    }
    if add.is_empty() {
        comment(&mut r, format!("File {name} is in correct state"));
    } else {
        if let Err(e) = salt_execmods::file::append(&name, &add) {
            return fail(r, e);
        }
        comment(&mut r, format!("Appended {} lines", add.len()));
    }
    let n = lines_of(&name);
    if n != slines {
        set(
            &mut r,
            "changes",
            map(vec![("diff", Value::from(joined_diff(&slines, &n)))]),
        );
    }
    set(&mut r, "result", Value::Boolean(true));
    r
}

/// `file.replace`.
pub fn replace(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name = super::name_of(low);
    let mut r = ret::new(name.as_str(), true, "");
    if let Err(msg) = check_file(&name) {
        if map_get(low, "ignore_if_missing").is_some_and(truthy) && msg.contains("file not found") {
            comment(&mut r, "No changes needed to be made");
            return r;
        }
        return fail(r, msg);
    }
    let mut kw: Vec<(String, Value)> = Vec::new();
    for k in [
        "pattern",
        "repl",
        "count",
        "flags",
        "append_if_not_found",
        "prepend_if_not_found",
        "not_found_content",
        "backup",
        "show_changes",
        "backslash_literal",
        "encoding",
        "bufsize",
    ] {
        if let Some(v) = map_get(low, k) {
            if k == "bufsize" && (v == &Value::from(1) || v == &Value::from("file")) {
                continue;
            }
            if k == "backslash_literal" && !truthy(v) || k == "encoding" && v.is_nil() {
                continue;
            }
            kw.push((k.to_owned(), v.clone()));
        }
    }
    kw.push(("dry_run".into(), Value::Boolean(ctx.opts.test)));
    let pos = [Value::from(name.as_str())];
    match salt_execmods::file::call("replace", &Args::new("file.replace", &pos, &kw)) {
        Ok(changes) if truthy(&changes) => {
            let test = ctx.opts.test;
            let msg = if test {
                "Changes would have been made"
            } else {
                "Changes were made"
            };
            ret::changed(r, test, map(vec![("diff", changes)]), msg)
        }
        Ok(_) => {
            comment(&mut r, "No changes needed to be made");
            r
        }
        Err(e) => fail(r, e),
    }
}

/// `file.line` on `salt-execmods`' `file.line`. A missing file is "file not found", as
/// Salt 3007 answers in practice (its internal `file.managed(..., replace=False)` call
/// does not create it).
pub fn line(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name = super::name_of(low);
    let r = ret::new(name.as_str(), true, "");
    if name.is_empty() {
        return fail(r, "Must provide name to file.line".into());
    }
    for k in ["user", "group", "file_mode", "backup"] {
        if map_get(low, k).is_some_and(|v| !v.is_nil() && *v != Value::Boolean(false)) {
            return fail(
                r,
                format!("file.line option '{k}' is not supported by salt-rs"),
            );
        }
    }
    if let Err(msg) = check_file(&name) {
        return fail(r, msg);
    }
    let mode = map_get(low, "mode").filter(|v| !v.is_nil()).map(py_str);
    let Some(mode) = mode.map(|m| m.to_lowercase()) else {
        return fail(r, "Mode was not defined. How to process the file?".into());
    };
    if mode != "delete" && map_get(low, "content").is_none_or(Value::is_nil) {
        return fail(r, "Content can only be empty if mode is ['delete']".into());
    }
    let mut kw: Vec<(String, Value)> = vec![("mode".into(), Value::from(mode))];
    for k in [
        "content",
        "match",
        "location",
        "before",
        "after",
        "show_changes",
        "quiet",
        "indent",
    ] {
        if let Some(v) = map_get(low, k).filter(|v| !v.is_nil()) {
            kw.push((k.to_owned(), v.clone()));
        }
    }
    kw.push(("test".into(), Value::Boolean(ctx.opts.test)));
    let pos = [Value::from(name.as_str())];
    let mut r = r;
    match salt_execmods::file::call("line", &Args::new("file.line", &pos, &kw)) {
        Ok(ch) if truthy(&ch) => {
            let test = ctx.opts.test;
            let msg = if test {
                "Changes would be made"
            } else {
                "Changes were made"
            };
            ret::changed(r, test, map(vec![("diff", ch)]), msg)
        }
        Ok(_) => {
            comment(&mut r, "No changes needed to be made");
            r
        }
        Err(e) => fail(r, e),
    }
}
