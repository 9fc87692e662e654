//! `ini.*` execution functions (`salt/modules/ini_manage.py`): `set_option`, `get_option`,
//! `remove_option`, `get_section`, `remove_section`, `get_ini`, on [`crate::ini`]'s model.
//! `encoding` other than UTF-8 is refused by name.

use rmpv::Value;

use crate::ini::{Entry, Ini, IniError};
use crate::{Args, Ret};

const ATTR_ITEMS: &str = "AttributeError: 'str' object has no attribute 'items'";

/// `ini.set_option`: merge `sections` in and write the file; the changes.
pub fn set_option(
    path: &str,
    sections: &Value,
    sep: &str,
    no_spaces: bool,
    test: bool,
) -> Result<Value, IniError> {
    let mut ini = Ini::load(path, sep, no_spaces, test)?;
    let entries = match Entry::from_value(sections) {
        Entry::Section(s) => s.items().to_vec(),
        Entry::Text(_) if sections.is_nil() => Vec::new(),
        Entry::Text(_) => {
            return Err(IniError::Python(format!(
                "AttributeError: '{}' object has no attribute 'items'",
                py_type(sections)
            )));
        }
    };
    let changes = ini.top.update(entries)?;
    ini.flush()?;
    Ok(crate::map(changes))
}

/// Python's type name of a decoded value.
fn py_type(v: &Value) -> &'static str {
    match v {
        Value::Nil => "NoneType",
        Value::Boolean(_) => "bool",
        Value::Integer(_) => "int",
        Value::F32(_) | Value::F64(_) => "float",
        Value::String(_) => "str",
        Value::Binary(_) => "bytes",
        Value::Array(_) => "list",
        Value::Map(_) => "dict",
        Value::Ext(..) => "object",
    }
}

/// `ini.get_option`: the option's value (`Nil` when missing); `section` `None`/empty: a
/// top-level option.
pub fn get_option(
    path: &str,
    section: Option<&str>,
    option: &str,
    sep: &str,
    test: bool,
) -> Result<Value, IniError> {
    let ini = Ini::load(path, sep, false, test)?;
    let found = match section.filter(|s| !s.is_empty()) {
        Some(s) => match ini.top.get(s) {
            Some(Entry::Section(sect)) => sect.get(option),
            _ => None,
        },
        None => ini.top.get(option),
    };
    Ok(found.map_or(Value::Nil, Entry::to_value))
}

/// `ini.remove_option`: remove the option and write the file; its value (`Nil` when it was
/// not there).
pub fn remove_option(
    path: &str,
    section: Option<&str>,
    option: &str,
    sep: &str,
    test: bool,
) -> Result<Value, IniError> {
    let mut ini = Ini::load(path, sep, false, test)?;
    let popped = match section.and_then(|s| ini.top.section_mut(s)) {
        Some(sect) => sect.pop(option),
        None => ini.top.pop(option),
    };
    ini.flush()?;
    Ok(popped.map_or(Value::Nil, |e| e.to_value()))
}

/// `ini.get_section`: the section's options (`{}` when missing); a top-level option of that
/// name is Salt's `AttributeError`.
pub fn get_section(path: &str, section: &str, sep: &str, test: bool) -> Result<Value, IniError> {
    let ini = Ini::load(path, sep, false, test)?;
    match ini.top.get(section) {
        None => Ok(Value::Map(Vec::new())),
        Some(Entry::Section(s)) => Ok(non_comment(s.items())),
        Some(Entry::Text(_)) => Err(IniError::Python(ATTR_ITEMS.into())),
    }
}

/// Whether `e` is the `AttributeError` of [`get_section`] on a top-level option.
pub fn is_attribute_error(e: &IniError) -> bool {
    matches!(e, IniError::Python(m) if m.starts_with("AttributeError"))
}

/// The entries whose key does not start with `#` (sections as their full dicts).
fn non_comment(items: &[(String, Entry)]) -> Value {
    Value::Map(
        items
            .iter()
            .filter(|(k, _)| !k.starts_with('#'))
            .map(|(k, v)| (Value::from(k.as_str()), v.to_value()))
            .collect(),
    )
}

/// `ini.remove_section`: remove the section and write the file; its options (`Nil` when
/// it was not there: the file is then left alone).
pub fn remove_section(path: &str, section: &str, sep: &str, test: bool) -> Result<Value, IniError> {
    let mut ini = Ini::load(path, sep, false, test)?;
    let Some(popped) = ini.top.pop(section) else {
        return Ok(Value::Nil);
    };
    ini.flush()?;
    match popped {
        Entry::Section(s) => Ok(non_comment(s.items())),
        Entry::Text(_) => Err(IniError::Python(ATTR_ITEMS.into())),
    }
}

/// `ini.get_ini`: every section and option, comments left out.
pub fn get_ini(path: &str, sep: &str, test: bool) -> Result<Value, IniError> {
    Ok(Ini::load(path, sep, false, test)?.top.to_plain())
}

/// The `encoding` argument: `None` or UTF-8, else refused by name.
fn check_encoding(a: &Args<'_>, idx: usize) -> Result<(), String> {
    match a.str(idx, "encoding") {
        None => Ok(()),
        Some(e) if matches!(e.to_ascii_lowercase().as_str(), "utf-8" | "utf8" | "utf_8") => Ok(()),
        Some(e) => Err(format!(
            "{}: encoding '{e}' is not supported by salt-rs (only UTF-8)",
            a.fun()
        )),
    }
}

/// Dispatch `ini.<f>`.
pub fn call(f: &str, a: &Args<'_>) -> Ret {
    let path = a.req(0, "file_name")?;
    let sep = |idx: usize| a.str(idx, "separator").unwrap_or_else(|| "=".to_owned());
    let done = |r: Result<Value, IniError>| r.map_err(|e| e.to_string());
    match f {
        "set_option" => {
            check_encoding(a, 3)?;
            let sections = a.get(1, "sections").cloned().unwrap_or(Value::Nil);
            let no_spaces = a.get(4, "no_spaces").is_some_and(salt_compat::py_truthy);
            done(set_option(&path, &sections, &sep(2), no_spaces, false))
        }
        "get_option" | "remove_option" => {
            check_encoding(a, 4)?;
            let section = a.str(1, "section");
            let option = a.req(2, "option")?;
            let fun = if f == "get_option" {
                get_option
            } else {
                remove_option
            };
            done(fun(&path, section.as_deref(), &option, &sep(3), false))
        }
        "get_section" | "remove_section" => {
            check_encoding(a, 3)?;
            let section = a.req(1, "section")?;
            let fun = if f == "get_section" {
                get_section
            } else {
                remove_section
            };
            done(fun(&path, &section, &sep(2), false))
        }
        "get_ini" => {
            check_encoding(a, 2)?;
            done(get_ini(&path, &sep(1), false))
        }
        other => Err(format!("'ini.{other}' is not available.")),
    }
}
