//! `file.managed`'s arguments (`salt/states/file.py`): which salt-rs honours, which it takes
//! as Salt does on Linux (the Windows-only ones), and which it refuses by name unless given
//! Salt's default (its entry of `mods::REGISTRY`, checked by `args::refused`); and the
//! `contents`/`contents_pillar`/`contents_grains` text.

use rmpv::Value;

use super::args::Default;
use crate::compile::STATE_INTERNAL_KEYWORDS;
use crate::engine::Ctx;
use crate::{get_str, truthy};
use salt_compat::{map_get, py_str};

/// Arguments `file.managed` honours (plus `name`).
pub const HONOURED: &[&str] = &[
    "name",
    "source",
    "source_hash",
    "user",
    "group",
    "mode",
    "template",
    "makedirs",
    "context",
    "defaults",
    "contents",
    "contents_pillar",
    "contents_grains",
    "contents_newline",
    "contents_delimiter",
    // Salt keeps the cached copy of a source; salt-rs reads `salt://` sources in place.
    "keep_source",
    // Used only on Windows by Salt, ignored elsewhere: as Salt on Linux.
    "win_owner",
    "win_perms",
    "win_deny_perms",
    "win_inheritance",
    "win_perms_reset",
];

/// Arguments salt-rs does not implement, with Salt's default (given with that value they
/// change nothing; any other value is refused by name).
pub const REFUSED: &[(&str, Default)] = &[
    ("source_hash_name", Default::None),
    ("attrs", Default::None),
    ("dir_mode", Default::None),
    ("replace", Default::Bool(true)),
    ("backup", Default::Str("")),
    ("show_changes", Default::Bool(true)),
    ("create", Default::Bool(true)),
    ("tmp_dir", Default::Str("")),
    ("tmp_ext", Default::Str("")),
    ("encoding", Default::None),
    ("encoding_errors", Default::Str("strict")),
    ("allow_empty", Default::Bool(true)),
    ("follow_symlinks", Default::Bool(true)),
    ("check_cmd", Default::None),
    ("skip_verify", Default::Bool(false)),
    ("selinux", Default::None),
    ("verify_ssl", Default::Bool(true)),
    ("use_etag", Default::Bool(false)),
    ("signature", Default::None),
    ("source_hash_sig", Default::None),
    ("signed_by_any", Default::None),
    ("signed_by_all", Default::None),
    ("keyring", Default::None),
    ("gnupghome", Default::None),
];

/// The extra keyword arguments of a `file.managed` (none of its own, none of the state
/// system's): Salt passes them through `file.get_managed` into the template's variables.
pub fn template_kwargs(low: &Value) -> Vec<(String, Value)> {
    let Value::Map(m) = low else {
        return Vec::new();
    };
    m.iter()
        .filter_map(|(k, v)| {
            let k = k.as_str()?;
            let own = HONOURED.contains(&k) || REFUSED.iter().any(|(a, _)| *a == k);
            (!own && !k.starts_with("__") && k != "names" && !STATE_INTERNAL_KEYWORDS.contains(&k))
                .then(|| (k.to_owned(), v.clone()))
        })
        .collect()
}

/// Arguments Salt's `file.managed` reads only after its `test=True` return (the check of
/// the new file): unused, hence not refused, under `test`.
pub const APPLY_ONLY: &[&str] = &["check_cmd", "tmp_dir", "tmp_ext"];

/// The file text of `contents`, `contents_pillar` or `contents_grains` (Salt's checks and
/// messages, each line ended by a newline; `contents_newline: False` strips the last), or
/// `None` when none is given.
pub fn contents(ctx: &Ctx<'_>, low: &Value) -> Result<Option<String>, String> {
    let given = |k: &str| map_get(low, k).filter(|v| !matches!(v, Value::Nil));
    let (contents, pillar, grains) = (
        given("contents"),
        given("contents_pillar"),
        given("contents_grains"),
    );
    let count = [contents, pillar, grains].iter().flatten().count();
    if map_get(low, "source").is_some_and(truthy) && count > 0 {
        return Err("'source' cannot be used in combination with 'contents', 'contents_pillar', or 'contents_grains'".into());
    }
    if count > 1 {
        return Err(
            "Only one of 'contents', 'contents_pillar', and 'contents_grains' is permitted".into(),
        );
    }
    let delim = get_str(low, "contents_delimiter").unwrap_or(":");
    let lookup = |data: &Value, what: &str, keys: &Value| -> Result<Value, String> {
        let one = |k: &Value| {
            let key = py_str(k);
            salt_matcher::traverse(data, &key, delim)
                .cloned()
                .ok_or_else(|| format!("{what} {key} does not exist"))
        };
        match keys {
            Value::Array(ks) => {
                let parts = ks.iter().map(one).collect::<Result<Vec<_>, _>>()?;
                Ok(Value::from(
                    parts.iter().map(py_str).collect::<Vec<_>>().join("\n"),
                ))
            }
            k => one(k),
        }
    };
    let used = match (contents, pillar, grains) {
        (_, Some(p), _) => lookup(&ctx.opts.pillar, "Pillar", p)?,
        (_, _, Some(g)) => lookup(&ctx.opts.grains, "Grain", g)?,
        (Some(c), _, _) => c.clone(),
        _ => return Ok(None),
    };
    // `_validate_str_list`: a string, or each item of a list as `str()`.
    let parts: Vec<String> = match &used {
        Value::Array(items) => items.iter().map(py_str).collect(),
        Value::Binary(b) => vec![String::from_utf8_lossy(b).into_owned()],
        other => vec![py_str(other)],
    };
    let mut text = String::new();
    for part in &parts {
        for line in splitlines(part) {
            text.push_str(line);
            text.push('\n');
        }
    }
    if map_get(low, "contents_newline").is_some_and(|v| !truthy(v)) {
        let t = text.trim_end_matches('\n').trim_end_matches('\r');
        text = t.to_owned();
    }
    Ok(Some(text))
}

/// Python's `str.splitlines()` for `\n`, `\r\n` and `\r`.
pub fn splitlines(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        match rest.find(['\n', '\r']) {
            Some(i) => {
                out.push(&rest[..i]);
                let skip = if rest[i..].starts_with("\r\n") { 2 } else { 1 };
                rest = &rest[i + skip..];
            }
            None => {
                out.push(rest);
                rest = "";
            }
        }
    }
    out
}
