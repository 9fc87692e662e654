//! `ini.options_present`, `ini.options_absent`, `ini.sections_present`,
//! `ini.sections_absent` (`salt/states/ini_manage.py`) on `salt-execmods`' `ini` model
//! (`salt/modules/ini_manage.py`): the same files written, the same returns. Where Salt
//! raises, the state fails with `An exception occurred in this state: Type: message` (Salt's
//! comment has the whole traceback). `strict` removes options and sections in the file's
//! order (Salt: in its set's order, which varies from run to run).

use rmpv::Value;
use salt_execmods::ini::IniError;
use salt_execmods::ini_call as ini;

use super::args::{Args, Default as D};
use super::ret;
use crate::engine::Ctx;
use crate::{map, set};
use salt_compat::{map_get, py_str, py_truthy};

/// `ini.options_present`.
pub const OPTIONS_PRESENT: Args = Args {
    honoured: &["name", "sections", "separator", "strict", "no_spaces"],
    refused: &[("encoding", D::None)],
    apply_only: &[],
};
/// `ini.options_absent`.
pub const OPTIONS_ABSENT: Args = Args {
    honoured: &["name", "sections", "separator"],
    refused: &[("encoding", D::None)],
    apply_only: &[],
};
/// `ini.sections_present`.
pub const SECTIONS_PRESENT: Args = OPTIONS_ABSENT;
/// `ini.sections_absent`.
pub const SECTIONS_ABSENT: Args = OPTIONS_ABSENT;

/// Dispatch `ini.<fun>`.
pub fn call(ctx: &Ctx<'_>, fun: &str, low: &Value) -> Value {
    let name = super::name_of(low);
    let sections = map_get(low, "sections").unwrap_or(&Value::Nil);
    let sep = map_get(low, "separator")
        .filter(|v| !v.is_nil())
        .map_or_else(|| "=".to_owned(), py_str);
    let flag = |k: &str| map_get(low, k).is_some_and(py_truthy);
    let st = St {
        name: &name,
        sections,
        sep: &sep,
        test: ctx.opts.test,
    };
    let out = match fun {
        "options_present" => st.options_present(flag("strict"), flag("no_spaces")),
        "options_absent" => st.options_absent(),
        "sections_present" => st.sections_present(),
        "sections_absent" => st.sections_absent(),
        other => {
            let mut r = super::base_ret(low);
            ret::comment(&mut r, format!("'ini.{other}' is not available."));
            return r;
        }
    };
    out.unwrap_or_else(|e| {
        map(vec![
            ("result", Value::Boolean(false)),
            ("name", Value::from(name.as_str())),
            ("changes", Value::Map(vec![])),
            (
                "comment",
                Value::from(format!(
                    "An exception occurred in this state: {}",
                    e.with_type()
                )),
            ),
        ])
    })
}

/// One call's arguments.
struct St<'a> {
    name: &'a str,
    sections: &'a Value,
    sep: &'a str,
    test: bool,
}

/// An ordered dict being built: `d[k] = v`.
fn put(d: &mut Vec<(String, Value)>, k: &str, v: Value) {
    match d.iter_mut().find(|(x, _)| x == k) {
        Some(slot) => slot.1 = v,
        None => d.push((k.to_owned(), v)),
    }
}

fn lookup<'v>(m: &'v Value, k: &str) -> Option<&'v Value> {
    match m {
        Value::Map(e) => e.iter().find(|(x, _)| py_str(x) == k).map(|(_, v)| v),
        _ => None,
    }
}

fn entries(m: &Value) -> Vec<(String, &Value)> {
    match m {
        Value::Map(e) => e.iter().map(|(k, v)| (py_str(k), v)).collect(),
        _ => Vec::new(),
    }
}

fn type_error(v: &Value) -> IniError {
    let t = match v {
        Value::Nil => "NoneType",
        Value::Boolean(_) => "bool",
        Value::Integer(_) => "int",
        _ => "float",
    };
    IniError::Python(format!("TypeError: '{t}' object is not iterable"))
}

/// Python's `for x in v`: a dict's keys, a list's items, a string's characters.
fn iterate(v: &Value) -> Result<Vec<String>, IniError> {
    match v {
        Value::Map(e) => Ok(e.iter().map(|(k, _)| py_str(k)).collect()),
        Value::Array(a) => Ok(a.iter().map(py_str).collect()),
        Value::String(_) | Value::Binary(_) => Ok(py_str(v).chars().map(String::from).collect()),
        other => Err(type_error(other)),
    }
}

/// `{"before": b, "after": a}`.
fn before_after(before: Value, after: Value) -> Value {
    map(vec![("before", before), ("after", after)])
}

impl St<'_> {
    fn ret(&self, comment: &str) -> Value {
        ret::new(Value::from(self.name), true, comment)
    }

    /// The dict items of `sections` (`None`/empty: none); another type is Salt's error.
    fn section_items(&self) -> Result<Vec<(String, &Value)>, IniError> {
        match self.sections {
            Value::Map(_) => Ok(entries(self.sections)),
            v if !py_truthy(v) => Ok(Vec::new()),
            v => Err(IniError::Python(format!(
                "AttributeError: '{}' object has no attribute 'items'",
                if v.is_array() { "list" } else { "str" }
            ))),
        }
    }

    /// Test mode's return: `comment` (or `No changes detected.`), `result` None when
    /// something would change.
    fn test_ret(&self, comment: String, would: bool, empty: &str) -> Value {
        let mut r = self.ret(if comment.is_empty() { empty } else { &comment });
        if would {
            set(&mut r, "result", Value::Nil);
        }
        r
    }

    fn options_present(&self, strict: bool, no_spaces: bool) -> Result<Value, IniError> {
        let (name, sep, test) = (self.name, self.sep, self.test);
        let mut comment = String::new();
        let mut would = false;
        let mut changes: Vec<(String, Value)> = Vec::new();
        let mut note = |c: &mut String, text: String, changed: bool| {
            c.push_str(&text);
            would |= changed;
        };
        if py_truthy(self.sections) {
            let items = self.section_items()?;
            let (bodies, options): (Vec<_>, Vec<_>) =
                items.into_iter().partition(|(_, b)| b.is_map());
            let cur = ini::get_ini(name, sep, test)?;
            let (orig_sections, orig_top): (Vec<_>, Vec<_>) =
                entries(&cur).into_iter().partition(|(_, v)| v.is_map());
            let orig_top_get = |k: &str| orig_top.iter().find(|(x, _)| x == k).map(|(_, v)| *v);
            let orig_section = |s: &str| orig_sections.iter().find(|(x, _)| x == s).map(|x| x.1);
            if test {
                for (k, v) in &options {
                    match orig_top_get(k) {
                        Some(o) if py_str(o) == py_str(v) => {
                            note(&mut comment, format!("Unchanged key {k}.\n"), false);
                        }
                        _ => note(&mut comment, format!("Changed key {k}.\n"), true),
                    }
                }
            } else {
                let given = Value::Map(
                    options
                        .iter()
                        .map(|(k, v)| (Value::from(k.as_str()), (*v).clone()))
                        .collect(),
                );
                if let Value::Map(m) = ini::set_option(name, &given, sep, no_spaces, test)? {
                    changes.extend(m.into_iter().map(|(k, v)| (py_str(&k), v)));
                }
            }
            if strict {
                for (k, before) in &orig_top {
                    if options.iter().any(|(o, _)| o == k) {
                        continue;
                    }
                    if test {
                        note(&mut comment, format!("Removed key {k}.\n"), true);
                    } else {
                        ini::remove_option(name, None, k, sep, test)?;
                        put(&mut changes, k, before_after((*before).clone(), Value::Nil));
                    }
                }
                for (s, before) in &orig_sections {
                    if bodies.iter().any(|(b, _)| b == s) {
                        continue;
                    }
                    if test {
                        note(&mut comment, format!("Removed section {s}.\n"), true);
                    } else {
                        ini::remove_section(name, s, sep, test)?;
                        put(&mut changes, s, before_after((*before).clone(), Value::Nil));
                    }
                }
            }
            for (s, body) in &bodies {
                let descr = if s.is_empty() {
                    String::new()
                } else {
                    format!(" in section {s}")
                };
                put(&mut changes, s, Value::Map(vec![]));
                let mut sch: Vec<(String, Value)> = Vec::new();
                let orig = orig_section(s);
                if strict {
                    let have = match lookup(&cur, s) {
                        None => Vec::new(),
                        Some(v) if v.is_map() => entries(v),
                        Some(_) => {
                            return Err(IniError::Python(
                                "AttributeError: 'str' object has no attribute 'keys'".into(),
                            ));
                        }
                    };
                    for (k, _) in have {
                        if lookup(body, &k).is_some() {
                            continue;
                        }
                        let before = orig
                            .and_then(|o| lookup(o, &k))
                            .cloned()
                            .unwrap_or_else(|| Value::from("#-#-"));
                        if test {
                            note(&mut comment, format!("Deleted key {k}{descr}.\n"), true);
                        } else {
                            ini::remove_option(name, Some(s), &k, sep, test)?;
                            put(&mut sch, &k, before_after(before, Value::Nil));
                        }
                    }
                }
                if test {
                    for (k, v) in entries(body) {
                        let o = orig.and_then(|o| lookup(o, &k)).map(py_str);
                        if o.as_deref().unwrap_or("#-#-") == py_str(v) {
                            note(&mut comment, format!("Unchanged key {k}{descr}.\n"), false);
                        } else {
                            note(&mut comment, format!("Changed key {k}{descr}.\n"), true);
                        }
                    }
                    continue;
                }
                let given = map(vec![(s.as_str(), (*body).clone())]);
                let upd = ini::set_option(name, &given, sep, no_spaces, test)?;
                if let Some(Value::Map(m)) = lookup(&upd, s) {
                    for (k, v) in m {
                        put(&mut sch, &py_str(k), v.clone());
                    }
                }
                if sch.is_empty() {
                    changes.retain(|(k, _)| k != s);
                } else {
                    put(&mut changes, s, salt_execmods::map(sch));
                }
            }
        } else if !test
            && let Value::Map(m) = ini::set_option(name, self.sections, sep, no_spaces, test)?
        {
            changes.extend(m.into_iter().map(|(k, v)| (py_str(&k), v)));
        }
        let mut r = self.ret(if test { "" } else { "No anomaly detected" });
        if test {
            ret::comment(&mut r, comment);
            if would {
                set(&mut r, "result", Value::Nil);
            }
        }
        if let Some((_, e)) = changes.iter().find(|(k, _)| k == "error") {
            set(&mut r, "result", Value::Boolean(false));
            ret::comment(&mut r, format!("Errors encountered. {}", py_str(e)));
            return Ok(r);
        }
        let kept: Vec<(String, Value)> =
            changes.into_iter().filter(|(_, b)| py_truthy(b)).collect();
        if !kept.is_empty() {
            ret::comment(&mut r, "Changes take effect");
            set(&mut r, "changes", salt_execmods::map(kept));
        }
        Ok(r)
    }

    fn options_absent(&self) -> Result<Value, IniError> {
        let (name, sep, test) = (self.name, self.sep, self.test);
        if test {
            let mut comment = String::new();
            let mut would = false;
            for s in iterate_or_empty(self.sections)? {
                let descr = if s.is_empty() {
                    String::new()
                } else {
                    format!(" in section {s}")
                };
                let cur = match ini::get_section(name, &s, sep, test) {
                    Ok(v) => Some(v),
                    Err(e) if ini::is_attribute_error(&e) => None,
                    Err(e) => return Err(e),
                };
                match lookup(self.sections, &s) {
                    Some(Value::Array(keys)) => {
                        let Some(cur) = cur else {
                            return Err(IniError::Python(
                                "AttributeError: 'str' object has no attribute 'get'".into(),
                            ));
                        };
                        for key in keys.iter().map(py_str) {
                            if lookup(&cur, &key).is_some_and(py_truthy) {
                                comment.push_str(&format!("Deleted key {key}{descr}.\n"));
                                would = true;
                            } else {
                                comment.push_str(&format!("Key {key}{descr} does not exist.\n"));
                            }
                        }
                    }
                    _ => {
                        if py_truthy(&ini::get_option(name, None, &s, sep, test)?) {
                            comment.push_str(&format!("Deleted key {s}.\n"));
                            would = true;
                        } else {
                            comment.push_str(&format!("Key {s} does not exist.\n"));
                        }
                    }
                }
            }
            return Ok(self.test_ret(comment, would, "No changes detected."));
        }
        let mut r = self.ret("No anomaly detected");
        let mut changes: Vec<(String, Value)> = Vec::new();
        for (s, keys) in self.section_items()? {
            for key in iterate(keys)? {
                let current = ini::remove_option(name, Some(&s), &key, sep, test)?;
                if !py_truthy(&current) {
                    continue;
                }
                let mut sub = match changes.iter().find(|(k, _)| *k == s) {
                    None => Vec::new(),
                    Some((_, Value::Map(m))) => m.clone(),
                    Some(_) => {
                        return Err(IniError::Python(
                            "AttributeError: 'str' object has no attribute 'update'".into(),
                        ));
                    }
                };
                sub.retain(|(k, _)| py_str(k) != key);
                sub.push((Value::from(key.as_str()), current.clone()));
                let v = if keys.is_array() {
                    Value::Map(sub)
                } else {
                    current
                };
                put(&mut changes, &s, v);
                ret::comment(&mut r, "Changes take effect");
            }
        }
        set(&mut r, "changes", salt_execmods::map(changes));
        Ok(r)
    }

    fn sections_present(&self) -> Result<Value, IniError> {
        let (name, sep, test) = (self.name, self.sep, self.test);
        if !test {
            iterate_or_empty(self.sections)?;
            return Err(IniError::Python(
                "TypeError: set_option() got an unexpected keyword argument 'section'".into(),
            ));
        }
        let cur = ini::get_ini(name, sep, test)?;
        let mut comment = String::new();
        let mut would = false;
        for s in iterate_or_empty(self.sections)? {
            if lookup(&cur, &s).is_some() {
                comment.push_str(&format!("Section unchanged {s}.\n"));
            } else {
                comment.push_str(&format!("Created new section {s}.\n"));
                would = true;
            }
        }
        Ok(self.test_ret(comment, would, "No changes detected."))
    }

    fn sections_absent(&self) -> Result<Value, IniError> {
        let (name, sep, test) = (self.name, self.sep, self.test);
        if test {
            let cur = ini::get_ini(name, sep, test)?;
            let mut comment = String::new();
            let mut would = false;
            for s in iterate_or_empty(self.sections)? {
                if lookup(&cur, &s).is_some() {
                    comment.push_str(&format!("Deleted section {s}.\n"));
                    would = true;
                } else {
                    comment.push_str(&format!("Section {s} does not exist.\n"));
                }
            }
            return Ok(self.test_ret(comment, would, "No changes detected."));
        }
        let mut r = self.ret("No anomaly detected");
        let mut changes: Vec<(String, Value)> = Vec::new();
        for s in iterate_or_empty(self.sections)? {
            let cur = ini::remove_section(name, &s, sep, test)?;
            if py_truthy(&cur) {
                put(&mut changes, &s, cur);
                ret::comment(&mut r, "Changes take effect");
            }
        }
        set(&mut r, "changes", salt_execmods::map(changes));
        Ok(r)
    }
}

/// `for x in (v or [])`.
fn iterate_or_empty(v: &Value) -> Result<Vec<String>, IniError> {
    if py_truthy(v) {
        iterate(v)
    } else {
        Ok(Vec::new())
    }
}
