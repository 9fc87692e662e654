//! `file.blockreplace`, `file.comment`, `file.uncomment` (`salt/states/file.py`), with
//! the edits of Salt's `file.blockreplace` and `file.comment_line` execution functions
//! (`salt/modules/file.py`) and `file.search`'s multiline test.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use regex::Regex;
use rmpv::Value;

use super::args::{Args, Default as D};
use super::ret::{self, comment, fail};
use crate::engine::Ctx;
use crate::{set, truthy};
use salt_compat::{map_get, py_str};
use salt_execmods::file_edit::unified_diff;

/// `file.blockreplace`: `source`/`sources` (and what templates them) are refused; with no
/// `file.accumulated` here, no accumulator can feed the block.
pub const FILE_BLOCKREPLACE: Args = Args {
    honoured: &[
        "name",
        "marker_start",
        "marker_end",
        "content",
        "append_if_not_found",
        "prepend_if_not_found",
        "backup",
        "show_changes",
        "append_newline",
        "insert_before_match",
        "insert_after_match",
    ],
    refused: &[
        ("source", D::None),
        ("source_hash", D::None),
        ("template", D::Str("jinja")),
        ("sources", D::None),
        ("source_hashes", D::None),
        ("defaults", D::None),
        ("context", D::None),
    ],
    apply_only: &[],
};

/// `file.comment`.
pub const FILE_COMMENT: Args = Args {
    honoured: &["name", "regex", "char", "backup", "ignore_missing"],
    refused: &[("encoding", D::None), ("encoding_errors", D::Str("strict"))],
    apply_only: &[],
};

/// `file.uncomment`.
pub const FILE_UNCOMMENT: Args = Args {
    honoured: &["name", "regex", "char", "backup"],
    refused: &[],
    apply_only: &[],
};

/// An argument as text, or its Salt default.
fn arg_or(low: &Value, k: &str, default: &str) -> String {
    map_get(low, k).map_or_else(|| default.to_owned(), py_str)
}

/// `_check_file`.
fn check_file(name: &str) -> Result<(), String> {
    if !Path::new(name).is_absolute() {
        Err(format!("Specified file {name} is not an absolute path"))
    } else if !Path::new(name).exists() {
        Err(format!("{name}: file not found"))
    } else {
        Ok(())
    }
}

fn read_text(path: &str) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("Failed to read from {path}: {e}"))?;
    String::from_utf8(bytes)
        .map_err(|_| format!("Cannot perform string replacements on a binary file: {path}"))
}

/// Lines with their ends (`\n`, `\r\n`).
fn lines_with_ends(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_owned).collect()
}

/// `file.search(path, pattern, multiline=True)`: `re.search` with `MULTILINE` on the text.
fn search(text: &str, pattern: &str) -> Result<bool, String> {
    Regex::new(&format!("(?m){pattern}"))
        .map(|re| re.is_match(text))
        .map_err(|e| format!("{pattern}: {e}"))
}

/// A copy of `path` at `path{ext}` with its mode and owner (`shutil.copy2` + `check_perms`).
fn backup_copy(path: &str, ext: &str) -> Result<(), String> {
    let to = format!("{path}{ext}");
    std::fs::copy(path, &to).map_err(|e| format!("Unable to back up {path} to {to}: {e}"))?;
    if let Ok(m) = std::fs::metadata(path) {
        let _ = std::os::unix::fs::lchown(&to, Some(m.uid()), Some(m.gid()));
    }
    Ok(())
}

/// Replace `path`'s text atomically, keeping its mode and owner.
fn rewrite(path: &str, text: &str) -> Result<(), String> {
    let m = std::fs::metadata(path).map_err(|e| format!("{path}: {e}"))?;
    salt_pki::files::atomic_write(Path::new(path), text.as_bytes(), m.mode() & 0o7777)
        .map_err(|e| format!("Unable to write {path}: {e}"))?;
    let _ = std::os::unix::fs::lchown(path, Some(m.uid()), Some(m.gid()));
    Ok(())
}

struct Block<'a> {
    start: &'a str,
    end: &'a str,
    content: Vec<&'a str>,
    append_newline: bool,
}

impl Block<'_> {
    /// `_add_content`: the block's lines after `marker_start` (included when `with_start`).
    fn lines(&self, linesep: &str, with_start: bool, end_line: Option<&str>) -> Vec<String> {
        let end = format!(
            "{}{linesep}",
            end_line.unwrap_or(self.end).trim_end_matches(['\r', '\n'])
        );
        let mut out = Vec::new();
        if with_start {
            out.push(format!("{}{linesep}", self.start));
        }
        let n = self.content.len();
        for (i, line) in self.content.iter().enumerate() {
            if i + 1 != n {
                out.push(format!("{line}{linesep}"));
            } else if self.append_newline {
                out.push(format!("{line}{linesep}"));
                out.push(end.clone());
            } else {
                out.push(format!("{line}{end}"));
            }
        }
        if n == 0 {
            out.push(end);
        }
        out
    }
}

/// Salt's `file.blockreplace` execution function: the file's old and new lines.
fn edit_block(low: &Value, path: &str) -> Result<(Vec<String>, Vec<String>), String> {
    let flag = |k: &str| map_get(low, k).is_some_and(truthy);
    let (before, after) = (
        map_get(low, "insert_before_match").filter(|v| truthy(v)),
        map_get(low, "insert_after_match").filter(|v| truthy(v)),
    );
    let exclusive = [
        flag("append_if_not_found"),
        flag("prepend_if_not_found"),
        before.is_some(),
        after.is_some(),
    ];
    if exclusive.iter().filter(|b| **b).count() > 1 {
        return Err("Only one of append_if_not_found, prepend_if_not_found, insert_before_match, and insert_after_match is permitted".into());
    }
    if before.or(after).is_some_and(|v| !v.is_str()) {
        let which = if before.is_some() {
            "insert_before_match"
        } else {
            "insert_after_match"
        };
        return Err(format!("RegEx expected in {which} parameter."));
    }
    let text = read_text(path)?;
    let content = arg_or(low, "content", "");
    let append_newline = match map_get(low, "append_newline") {
        None | Some(Value::Nil) => !content.ends_with('\n'),
        Some(v) => truthy(v),
    };
    let (start, end) = (
        arg_or(low, "marker_start", "#-- start managed zone --"),
        arg_or(low, "marker_end", "#-- end managed zone --"),
    );
    let block = Block {
        start: &start,
        end: &end,
        content: content.split("\r\n").flat_map(|l| l.split('\n')).collect(),
        append_newline,
    };
    let orig = lines_with_ends(&text);
    let mut new: Vec<String> = Vec::new();
    let mut linesep: Option<&str> = None;
    let (mut in_block, mut found) = (false, false);
    for line in &orig {
        let sep = *linesep.get_or_insert(if line.ends_with("\r\n") { "\r\n" } else { "\n" });
        let mut keep = true;
        if line.contains(block.start) {
            in_block = true;
        } else if in_block {
            keep = false;
            if let Some(pos) = line.find(block.end) {
                in_block = false;
                found = true;
                new.extend(block.lines(sep, false, Some(&line[pos..])));
            }
        }
        if keep {
            new.push(line.clone());
        }
    }
    let sep = linesep.unwrap_or("\n");
    if in_block {
        return Err("Unterminated marked block. End of file reached before marker_end.".into());
    }
    if !found {
        if flag("prepend_if_not_found") {
            let mut lines = block.lines(sep, true, None);
            lines.append(&mut new);
            new = lines;
        } else if flag("append_if_not_found") {
            if let Some(last) = new.last_mut()
                && !last.ends_with(sep)
            {
                last.push_str(sep);
            }
            new.extend(block.lines(sep, true, None));
        } else if let Some(pat) = before.or(after) {
            let pat = py_str(pat);
            let re = Regex::new(&pat).map_err(|e| format!("{pat}: {e}"))?;
            let Some(mut idx) = orig.iter().position(|l| re.is_match(l)) else {
                return Err("Cannot edit marked block. Markers were not found in file.".into());
            };
            for line in block.lines(sep, true, None) {
                if after.is_some() {
                    idx += 1;
                }
                new.insert(idx.min(new.len()), line);
                if before.is_some() {
                    idx += 1;
                }
            }
        } else {
            return Err("Cannot edit marked block. Markers were not found in file.".into());
        }
    }
    Ok((orig, new))
}

/// `file.blockreplace`.
pub fn blockreplace(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name = super::name_of(low);
    let r = ret::new(name.as_str(), false, "");
    if name.is_empty() {
        return fail(r, "Must provide name to file.blockreplace".into());
    }
    if let Err(msg) = check_file(&name) {
        return fail(r, msg);
    }
    let (orig, new) = match edit_block(low, &name) {
        Ok(x) => x,
        Err(e) => {
            let mut r = r;
            comment(
                &mut r,
                format!("Encountered error managing block: {e}. See the log for details."),
            );
            return r;
        }
    };
    let diff = unified_diff(&orig.concat(), &new.concat());
    let test = ctx.opts.test;
    if !diff.is_empty() && !test {
        let backup = map_get(low, "backup")
            .cloned()
            .unwrap_or(Value::from(".bak"));
        let written = if backup == Value::Boolean(false) {
            Ok(())
        } else {
            backup_copy(&name, &py_str(&backup))
        }
        .and_then(|()| rewrite(&name, &new.concat()));
        if let Err(e) = written {
            let mut r = r;
            comment(
                &mut r,
                format!("Encountered error managing block: {e}. See the log for details."),
            );
            return r;
        }
    }
    if diff.is_empty() {
        let mut r = r;
        set(&mut r, "result", Value::Boolean(true));
        comment(&mut r, "No changes needed to be made");
        return r;
    }
    let shown = if map_get(low, "show_changes").is_none_or(truthy) {
        Value::from(diff)
    } else {
        Value::Boolean(true)
    };
    let changes = crate::map(vec![("diff", shown)]);
    let mut r = r;
    set(&mut r, "result", Value::Boolean(true));
    let msg = if test {
        "Changes would be made"
    } else {
        "Changes were made"
    };
    ret::changed(r, test, changes, msg)
}

/// `file.comment_line`: comment (`cmnt`) or uncomment the lines `regex` matches, keeping a
/// copy at `path{backup}` when `backup` is truthy.
fn comment_line(
    path: &str,
    regex: &str,
    ch: &str,
    cmnt: bool,
    backup: &Value,
) -> Result<(), String> {
    let core = regex.trim_start_matches('^').trim_end_matches('$');
    let tail = if regex.ends_with('$') { "$" } else { "" };
    let pat = if cmnt {
        let head = if regex.starts_with('^') { "^" } else { "" };
        format!("{head}({core}){tail}")
    } else {
        format!(r"^{ch}\s*({core}){tail}")
    };
    // `re.match`: anchored at the line's start; `$` also before its newline.
    let re = Regex::new(&format!(r"(?m)\A(?:{pat})")).map_err(|e| format!("{regex}: {e}"))?;
    let text = read_text(path)?;
    let chars: Vec<char> = ch.chars().collect();
    let mut hit = false;
    let new: String = lines_with_ends(&text)
        .into_iter()
        .map(|line| {
            if !re.is_match(&line) {
                return line;
            }
            hit = true;
            if cmnt {
                format!("{ch}{line}")
            } else {
                line.trim_start_matches(chars.as_slice()).to_owned()
            }
        })
        .collect();
    if !hit {
        return Ok(());
    }
    if truthy(backup) {
        backup_copy(path, &py_str(backup))?;
    }
    let m = std::fs::metadata(path).map_err(|e| format!("{path}: {e}"))?;
    std::fs::write(path, new).map_err(|e| format!("Unable to write file '{path}': {e}"))?;
    let _ = std::os::unix::fs::lchown(path, Some(m.uid()), Some(m.gid()));
    Ok(())
}

/// Whether a line of `text` does not start with `\s*{ch}` and matches `^\s*{pattern}`
/// (Salt's `^(?!\s*{ch})\s*{pattern}` with `MULTILINE`, the lookahead done by hand).
fn uncommented_match(text: &str, ch: &str, pattern: &str) -> Result<bool, String> {
    let commented = Regex::new(&format!(r"(?m)\A\s*{ch}")).map_err(|e| e.to_string())?;
    let wanted =
        Regex::new(&format!(r"(?m)\A\s*(?:{pattern})")).map_err(|e| format!("{pattern}: {e}"))?;
    let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1));
    Ok(starts
        .map(|p| &text[p..])
        .any(|rest| !commented.is_match(rest) && wanted.is_match(rest)))
}

fn edit_ret(ctx: &Ctx<'_>, low: &Value, uncomment: bool) -> Value {
    let name = super::name_of(low);
    let mut r = ret::new(name.as_str(), false, "");
    let what = if uncomment { "uncomment" } else { "comment" };
    if name.is_empty() {
        return fail(r, format!("Must provide name to file.{what}"));
    }
    if let Err(msg) = check_file(&name) {
        return fail(r, msg);
    }
    let Some(regex) = map_get(low, "regex").filter(|v| !v.is_nil()).map(py_str) else {
        return fail(r, format!("file.{what}: missing required argument 'regex'"));
    };
    let ch = arg_or(low, "char", "#");
    let backup = map_get(low, "backup")
        .cloned()
        .unwrap_or(Value::from(".bak"));
    let old = match read_text(&name) {
        Ok(t) => t,
        Err(e) => return fail(r, e),
    };
    let bare = regex.trim_start_matches('^');
    let uncommented_re = format!(r"^[ \t]*{bare}");
    // The pattern's state before, and the test after the edit.
    let checked: Result<Result<String, Value>, String> = (|| {
        if uncomment {
            if search(&old, &format!("{ch}[ \t]*{bare}"))? {
                return Ok(Ok(uncommented_re.clone()));
            }
            if search(&old, &uncommented_re)? {
                set(&mut r, "result", Value::Boolean(true));
                comment(&mut r, "Pattern already uncommented");
                return Ok(Err(r.clone()));
            }
            return Ok(Err(fail(r.clone(), format!("{regex}: Pattern not found"))));
        }
        let unanchor = Regex::new(r"^(\(\?[iLmsux]\))?\^?(.*?)\$?$")
            .map_err(|e| e.to_string())?
            .replace(&regex, "${2}")
            .into_owned();
        let commented_re = format!("{ch}{unanchor}");
        if uncommented_match(&old, &ch, &unanchor)? {
            return Ok(Ok(commented_re));
        }
        if search(&old, &commented_re)? {
            set(&mut r, "result", Value::Boolean(true));
            comment(&mut r, "Pattern already commented");
        } else if map_get(low, "ignore_missing").is_some_and(truthy) {
            set(&mut r, "result", Value::Boolean(true));
            comment(&mut r, "Pattern not found and ignore_missing set to True");
        } else {
            return Ok(Err(fail(
                r.clone(),
                format!("{unanchor}: Pattern not found"),
            )));
        }
        Ok(Err(r.clone()))
    })();
    let after_re = match checked {
        Ok(Ok(re)) => re,
        Ok(Err(done)) => return done,
        Err(e) => return fail(r, e),
    };
    if ctx.opts.test {
        set(
            &mut r,
            "changes",
            crate::map(vec![(name.as_str(), Value::from("updated"))]),
        );
        return ret::would(r, format!("File {name} is set to be updated"));
    }
    if let Err(e) = comment_line(&name, &regex, &ch, !uncomment, &backup) {
        return fail(r, e);
    }
    let new = read_text(&name).unwrap_or_default();
    let ok = search(&new, &after_re).unwrap_or(false);
    set(&mut r, "result", Value::Boolean(ok));
    if old != new {
        set(
            &mut r,
            "changes",
            crate::map(vec![("diff", Value::from(unified_diff(&old, &new)))]),
        );
    }
    let done = match (uncomment, ok) {
        (false, true) => "Commented lines successfully",
        (false, false) => "Expected commented lines not found",
        (true, true) => "Uncommented lines successfully",
        (true, false) => "Expected uncommented lines not found",
    };
    comment(&mut r, done);
    r
}

/// `file.comment`.
pub fn comment_state(ctx: &Ctx<'_>, low: &Value) -> Value {
    edit_ret(ctx, low, false)
}

/// `file.uncomment`.
pub fn uncomment_state(ctx: &Ctx<'_>, low: &Value) -> Value {
    edit_ret(ctx, low, true)
}
