//! `file.recurse` (`salt/states/file.py`): every file under a `salt://` directory through
//! `file.managed` (with `makedirs`), each parent directory through `file.directory`, the
//! results merged as Salt merges them. Refused by name: `clean`, `include_pat`,
//! `exclude_pat`, `maxdepth`, `keep_symlinks`, `force_symlinks`, `include_empty`,
//! `sym_mode`, `replace: False`, `keep_source`, `backup`; `mode` is Salt's own error.
//! Salt walks Python sets here, so its comment order (several pending files) and, for
//! nested new directories, which of them report `changes` vary between its runs; salt-rs
//! goes in path order. Needs a file client that can list files (`file_roots` locally).

use rmpv::Value;

use super::ret::{comment, fail};
use crate::engine::Ctx;
use crate::fileclient::parse_salt_url;
use crate::{get_str, map, set};
use salt_compat::map_get;
use salt_compat::py_str;

/// The `file.recurse` state.
pub fn recurse(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name = super::name_of(low);
    let r = map(vec![
        ("name", Value::from(name.as_str())),
        ("changes", Value::Map(vec![])),
        ("result", Value::Boolean(true)),
        ("comment", Value::Map(vec![])),
    ]);
    if map_get(low, "mode").is_some() {
        return fail(
            r,
            "'mode' is not allowed in 'file.recurse'. Please use 'file_mode' and 'dir_mode'."
                .into(),
        );
    }
    for k in [
        "clean",
        "include_pat",
        "exclude_pat",
        "maxdepth",
        "keep_symlinks",
        "force_symlinks",
        "include_empty",
        "sym_mode",
        "keep_source",
        "backup",
    ] {
        if map_get(low, k).is_some_and(crate::truthy) {
            return fail(
                r,
                format!("file.recurse option '{k}' is not supported by salt-rs"),
            );
        }
    }
    if map_get(low, "replace") == Some(&Value::Boolean(false)) {
        return fail(
            r,
            "file.recurse option 'replace' is not supported by salt-rs".into(),
        );
    }
    if !std::path::Path::new(&name).is_absolute() {
        return fail(r, format!("Specified file {name} is not an absolute path"));
    }
    let saltenv = get_str(low, "__env__")
        .unwrap_or(&ctx.opts.saltenv)
        .to_owned();
    let sources: Vec<String> = match map_get(low, "source") {
        Some(Value::Array(a)) => a.iter().map(py_str).collect(),
        Some(v) => vec![py_str(v)],
        None => Vec::new(),
    };
    let sources: Vec<String> = sources
        .iter()
        .map(|s| s.trim_end_matches('/').to_owned())
        .collect();
    if let Some(bad) = sources.iter().find(|s| !s.starts_with("salt://")) {
        return fail(r, format!("Invalid source '{bad}' (must be a salt:// URI)"));
    }
    // `file.source_list`: the first source that is a directory on the file server.
    let mut chosen = None;
    let mut listing = Vec::new();
    for s in &sources {
        let Some((path, env)) = parse_salt_url(s, &saltenv) else {
            continue;
        };
        let files = match ctx.client.list_files(&env) {
            Ok(f) => f,
            Err(e) => return fail(r, format!("Recurse failed: {e}")),
        };
        let prefix = format!("{path}/");
        let under: Vec<String> = files
            .into_iter()
            .filter(|f| f.starts_with(&prefix))
            .collect();
        if !under.is_empty() {
            chosen = Some((path, env));
            listing = under;
            break;
        }
    }
    let Some((srcpath, senv)) = chosen else {
        // `file.source_list` finds a file too; only a directory can be recursed.
        let file = sources.iter().find_map(|s| {
            let (p, e) = parse_salt_url(s, &saltenv)?;
            let found = ctx.client.get_file(&p, &e).ok().flatten().is_some();
            found.then_some((p, e))
        });
        let msg = match file {
            Some((p, e)) => {
                format!(
                    "The directory '{p}' does not exist on the salt fileserver in saltenv '{e}'"
                )
            }
            None => "Recurse failed: none of the specified sources were found".to_owned(),
        };
        return fail(r, msg);
    };
    let mut r = r;
    let root = std::path::Path::new(&name);
    if !root.is_dir() {
        if root.exists() {
            return fail(r, format!("The path {name} exists and is not a directory"));
        }
        if !ctx.opts.test {
            let _ = std::fs::create_dir_all(root);
        }
    }
    let mut comments: Vec<(String, Vec<String>)> = Vec::new();
    let mut changes: Vec<(Value, Value)> = Vec::new();
    let mut merge = |r: &mut Value, path: &str, sub: &Value| {
        let res = map_get(sub, "result").cloned().unwrap_or(Value::Nil);
        if res == Value::Boolean(false) || map_get(r, "result") == Some(&Value::Boolean(true)) {
            set(r, "result", res.clone());
        }
        let c = map_get(sub, "comment").map(py_str).unwrap_or_default();
        if res != Value::Boolean(true) && !c.is_empty() {
            match comments.iter_mut().find(|(p, _)| p == path) {
                Some((_, v)) => v.push(c),
                None => comments.push((path.to_owned(), vec![c])),
            }
        }
        if let Some(ch) = map_get(sub, "changes").filter(|c| crate::truthy(c)) {
            changes.push((Value::from(path), ch.clone()));
        }
    };
    let files: Vec<(String, String)> = listing
        .iter()
        .map(|f| {
            let rel = &f[srcpath.len() + 1..];
            (format!("{}/{rel}", name.trim_end_matches('/')), f.clone())
        })
        .collect();
    let mut dirs: Vec<String> = files
        .iter()
        .filter_map(|(d, _)| {
            std::path::Path::new(d)
                .parent()
                .map(|p| p.display().to_string())
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    let pass = |keys: &[(&str, &str)]| -> Vec<(Value, Value)> {
        keys.iter()
            .filter_map(|(from, to)| {
                map_get(low, from)
                    .filter(|v| !v.is_nil())
                    .map(|v| (Value::from(*to), v.clone()))
            })
            .collect()
    };
    for d in &dirs {
        let mut l = vec![
            (Value::from("name"), Value::from(d.as_str())),
            (Value::from("makedirs"), Value::Boolean(true)),
        ];
        l.extend(pass(&[
            ("user", "user"),
            ("group", "group"),
            ("dir_mode", "dir_mode"),
        ]));
        let sub = super::file::call(ctx, "directory", &Value::Map(l));
        merge(&mut r, d, &sub);
    }
    for (dest, src) in &files {
        let mut l = vec![
            (Value::from("name"), Value::from(dest.as_str())),
            (
                Value::from("source"),
                Value::from(format!("salt://{src}?saltenv={senv}")),
            ),
            (Value::from("makedirs"), Value::Boolean(true)),
            (Value::from("__env__"), Value::from(senv.as_str())),
        ];
        l.extend(pass(&[
            ("user", "user"),
            ("group", "group"),
            ("file_mode", "mode"),
            ("template", "template"),
            ("context", "context"),
            ("defaults", "defaults"),
        ]));
        let sub = super::file::call(ctx, "managed", &Value::Map(l));
        merge(&mut r, dest, &sub);
    }
    set(&mut r, "changes", Value::Map(changes));
    let text = comments
        .iter()
        .map(|(k, v)| format!("\n#### {k} ####\n{}", v.join("\n")))
        .collect::<Vec<_>>()
        .join("\n");
    let mut text = text.trim().to_owned();
    if text.is_empty() {
        text = format!("Recursively updated {name}");
    }
    let no_changes = map_get(&r, "changes").is_none_or(|c| !crate::truthy(c));
    if no_changes && map_get(&r, "result") == Some(&Value::Boolean(true)) {
        text = format!("The directory {name} is in the correct state");
    }
    comment(&mut r, text);
    r
}
