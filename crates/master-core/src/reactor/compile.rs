//! From an event to its reactions: the sls files of the matching tags rendered with `tag`
//! and `data` (Salt's `Reactor.render_reaction`), padded, checked and compiled into ordered
//! low chunks (Salt's `Compiler.pad_funcs`, `verify_high`, `compile_high_data`,
//! `order_chunks`), `cmd` read as `local` (Salt's `Reactor.aliases`).
//!
//! A file that is missing or fails to render is logged with the sls and the tag, as Salt logs
//! it, and contributes nothing; the reactor goes on.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::shared::Shared;

/// One reaction: Salt's low chunk (`state`, `fun`, `name`, `__id__`, `__sls__`, `order` and
/// the arguments written in the sls).
pub(crate) type Low = Map<String, Value>;

/// The ordered reactions of `tag`/`data` for the sls paths `reactors`.
pub(crate) fn reactions(shared: &Shared, tag: &str, data: &Value, reactors: &[String]) -> Vec<Low> {
    let mut high = Map::new();
    for sls in reactors {
        for file in resolve(shared, sls, tag) {
            match render(&file, tag, data) {
                Ok(Value::Object(ids)) => {
                    let shown = file.display().to_string();
                    for (id, mut body) in ids {
                        if let Value::Object(b) = &mut body {
                            b.insert("__sls__".into(), Value::String(shown.clone()));
                        }
                        high.insert(id, body);
                    }
                }
                // An empty file (or one whose Jinja left nothing): no reaction.
                Ok(Value::Null) => {}
                Ok(other) => tracing::error!(
                    "Failed to render \"{}\" for tag {tag}: the sls renders to {}, not a \
                     mapping of ids",
                    file.display(),
                    kind(&other)
                ),
                Err(e) => {
                    tracing::error!("Failed to render \"{}\" for tag {tag}: {e}", file.display())
                }
            }
        }
    }
    if high.is_empty() {
        return Vec::new();
    }
    pad_funcs(&mut high);
    let errors = verify_high(&high);
    if !errors.is_empty() {
        tracing::error!(
            "Unable to render reactions for event {tag} due to errors ({}) in one or more of \
             the sls files ({})",
            errors.join("; "),
            reactors.join(", ")
        );
        return Vec::new();
    }
    let mut chunks = order_chunks(compile_high(&high));
    for c in &mut chunks {
        if c.get("state").and_then(Value::as_str) == Some("cmd") {
            c.insert("state".into(), "local".into());
        }
    }
    chunks
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// The files of one reactor sls path: `salt://` through the master's file server (Salt's
/// `cp.cache_file` on the master), else a path with `*`/`?`/`[` globs in its last part.
fn resolve(shared: &Shared, sls: &str, tag: &str) -> Vec<PathBuf> {
    let found = if let Some(rel) = sls.strip_prefix("salt://") {
        let load = rmpv::Value::Map(vec![
            ("path".into(), rel.into()),
            ("saltenv".into(), "base".into()),
        ]);
        shared
            .files
            .handle("_file_find", &load, &shared.cfg.id)
            .and_then(|found| {
                found
                    .as_map()?
                    .iter()
                    .find(|(k, _)| k.as_str() == Some("path"))
                    .and_then(|(_, v)| v.as_str().map(PathBuf::from))
            })
            .into_iter()
            .collect()
    } else {
        glob_last(Path::new(sls))
    };
    if found.is_empty() {
        tracing::error!("Can not render SLS {sls} for tag {tag}. File missing or not found.");
    }
    found
}

/// Python's `glob.glob` for a pattern in the last path component (sorted, as the reactor's
/// files then render in a stable order); a plain path is itself when it exists.
fn glob_last(path: &Path) -> Vec<PathBuf> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let Some(name) = name.filter(|n| n.contains(['*', '?', '['])) else {
        return if path.is_file() {
            vec![path.to_path_buf()]
        } else {
            Vec::new()
        };
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            // Python's glob hides dot files unless the pattern starts with a dot.
            (!n.starts_with('.') || name.starts_with('.')) && salt_compat::fnmatch(&n, &name)
        })
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

/// Salt's `render_template(fn_, tag=tag, data=data)`: the file's `#!` line or `jinja|yaml`.
fn render(file: &Path, tag: &str, data: &Value) -> Result<Value, String> {
    let source = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let ctx = salt_render::Context {
        vars: rmpv::Value::Map(vec![
            ("tag".into(), tag.into()),
            ("data".into(), salt_compat::json::json_to_msgpack(data)),
        ]),
        tplfile: file.display().to_string(),
        ..salt_render::Context::default()
    };
    let rendered = salt_render::render(&source, &ctx, Arc::new(NoIncludes), "jinja|yaml")
        .map_err(|e| e.to_string())?;
    Ok(match rendered {
        rmpv::Value::Map(m) if m.is_empty() => Value::Null,
        other => salt_compat::json::msgpack_to_json(&other),
    })
}

/// Reactor files are rendered on the master outside any file-server environment: a
/// `{% include %}`/`{% import %}` of a `salt://` path is refused by name.
struct NoIncludes;

impl salt_render::Loader for NoIncludes {
    fn load(&self, path: &str, _saltenv: &str) -> Result<Option<String>, String> {
        Err(format!(
            "salt://{path}: includes and imports in reactor sls files are not implemented by \
             salt-rs"
        ))
    }
}

/// Salt's `Compiler.pad_funcs`: `local.cmd.run: [...]` becomes `local: [..., cmd.run]`.
fn pad_funcs(high: &mut Map<String, Value>) {
    for body in high.values_mut() {
        let Value::Object(b) = body else { continue };
        let keys: Vec<String> = b.keys().cloned().collect();
        let mut seen = Vec::new();
        for key in keys {
            if key.starts_with('_') || !b.get(&key).is_some_and(Value::is_array) {
                continue;
            }
            match key.split_once('.') {
                Some((state, fun)) => {
                    if seen.iter().any(|s| s == state) {
                        continue;
                    }
                    if let Some(Value::Array(mut run)) = b.remove(&key) {
                        run.push(Value::String(fun.to_owned()));
                        b.insert(state.to_owned(), Value::Array(run));
                    }
                    seen.push(state.to_owned());
                }
                None => seen.push(key),
            }
        }
    }
}

/// The structural checks of Salt's `verify_high` that the reactor meets: each id a
/// mapping, each state a list naming exactly one function.
fn verify_high(high: &Map<String, Value>) -> Vec<String> {
    let mut errors = Vec::new();
    for (id, body) in high {
        let Value::Object(b) = body else {
            errors.push(format!("ID {id} is not a dictionary"));
            continue;
        };
        let sls = b.get("__sls__").and_then(Value::as_str).unwrap_or("");
        for (state, run) in b.iter().filter(|(k, _)| !k.starts_with("__")) {
            let Value::Array(run) = run else {
                errors.push(format!(
                    "The type {state} in {id} in SLS {sls} is not formatted as a list"
                ));
                continue;
            };
            let funs = run.iter().filter(|a| a.is_string()).count();
            if funs == 0 {
                errors.push(format!(
                    "Missing function in state {state} (ID {id}) in SLS {sls}"
                ));
            } else if funs > 1 {
                errors.push(format!(
                    "Too many functions declared in state '{state}' in SLS '{sls}'"
                ));
            }
        }
    }
    errors
}

/// Salt's `Compiler.compile_high_data`: one low chunk per id and state.
fn compile_high(high: &Map<String, Value>) -> Vec<Low> {
    let mut chunks = Vec::new();
    for (id, body) in high.iter().filter(|(id, _)| !id.starts_with("__")) {
        let Value::Object(b) = body else { continue };
        for (state, run) in b.iter().filter(|(k, _)| !k.starts_with("__")) {
            let Value::Array(run) = run else { continue };
            let mut chunk = Low::new();
            chunk.insert("state".into(), state.clone().into());
            chunk.insert("name".into(), id.clone().into());
            if let Some(sls) = b.get("__sls__") {
                chunk.insert("__sls__".into(), sls.clone());
            }
            chunk.insert("__id__".into(), id.clone().into());
            let mut fun = None;
            for arg in run {
                match arg {
                    Value::String(f) => fun = Some(f.clone()),
                    Value::Object(m) => chunk.extend(m.clone()),
                    _ => {}
                }
            }
            if let Some(f) = fun {
                chunk.insert("fun".into(), f.into());
            }
            chunks.push(chunk);
        }
    }
    chunks
}

/// Salt's `Compiler.order_chunks`: by `order` (numbers; `first`, `last`; unset after every
/// numbered one), then by state, name and function.
fn order_chunks(mut chunks: Vec<Low>) -> Vec<Low> {
    let mut cap: f64 = 1.0;
    for c in &chunks {
        if let Some(o) = c.get("order").and_then(Value::as_i64) {
            let o = o as f64;
            if o > cap - 1.0 && o > 0.0 {
                cap = o + 100.0;
            }
        }
    }
    let key = |c: &Low| -> f64 {
        match c.get("order") {
            Some(Value::Number(n)) => n.as_f64().unwrap_or(cap),
            Some(Value::String(s)) if s == "last" => cap + 1_000_000.0,
            Some(Value::String(s)) if s == "first" => 0.0,
            _ => cap,
        }
    };
    let text = |c: &Low, k: &str| match c.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    for c in &mut chunks {
        let k = key(c);
        c.insert(
            "order".into(),
            serde_json::Number::from_f64(k).map_or(Value::Null, |n| {
                if k.fract() == 0.0 {
                    Value::from(k as i64)
                } else {
                    Value::Number(n)
                }
            }),
        );
    }
    chunks.sort_by(|a, b| {
        key(a).total_cmp(&key(b)).then_with(|| {
            let ka = format!("{}{}{}", text(a, "state"), text(a, "name"), text(a, "fun"));
            let kb = format!("{}{}{}", text(b, "state"), text(b, "name"), text(b, "fun"));
            ka.cmp(&kb)
        })
    });
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn high(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn sls_data_becomes_ordered_low_chunks() {
        let mut h = high(json!({
            "b_touch": {"local.cmd.run": [{"tgt": "m1"}, {"args": [{"cmd": "touch /x"}]}],
                        "__sls__": "/r/a.sls"},
            "a_run": {"runner.test.arg": [{"args": [{"x": 1}]}], "__sls__": "/r/a.sls"},
            "first": {"cmd.cmd.run": [{"tgt": "*"}, {"arg": ["id"]}, {"order": 1}],
                      "__sls__": "/r/a.sls"},
        }));
        pad_funcs(&mut h);
        assert!(verify_high(&h).is_empty(), "{:?}", verify_high(&h));
        let chunks = order_chunks(compile_high(&h));
        let names: Vec<(&str, &str, &str)> = chunks
            .iter()
            .map(|c| {
                (
                    c["state"].as_str().unwrap(),
                    c["name"].as_str().unwrap(),
                    c["fun"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("cmd", "first", "cmd.run"),
                ("local", "b_touch", "cmd.run"),
                ("runner", "a_run", "test.arg"),
            ]
        );
        assert_eq!(chunks[0]["order"], 1);
        assert_eq!(chunks[1]["order"], 101);
        assert_eq!(chunks[1]["tgt"], "m1");
        assert_eq!(chunks[1]["__id__"], "b_touch");
        assert_eq!(chunks[1]["__sls__"], "/r/a.sls");
    }

    #[test]
    fn malformed_high_data_is_reported() {
        let mut h = high(json!({
            "x": {"local.cmd.run": {"tgt": "*"}},
            "y": "text",
            "z": {"local": [{"tgt": "*"}]},
        }));
        pad_funcs(&mut h);
        let errors = verify_high(&h);
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].contains("not formatted as a list"), "{errors:?}");
        assert!(errors[1].contains("ID y is not a dictionary"), "{errors:?}");
        assert!(errors[2].contains("Missing function"), "{errors:?}");
    }

    #[test]
    fn tag_and_data_reach_the_template() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("r.sls");
        std::fs::write(
            &f,
            "{% if data['act'] == 'pend' %}\naccept_{{ data['id'] }}:\n  wheel.key.accept:\n    \
             - match: {{ data['id'] }}\n    - tagged: {{ tag }}\n{% endif %}\n",
        )
        .unwrap();
        let out = render(&f, "salt/auth", &json!({"act": "pend", "id": "web1"})).unwrap();
        assert_eq!(
            out,
            json!({"accept_web1": {"wheel.key.accept": [{"match": "web1"}, {"tagged": "salt/auth"}]}})
        );
        let none = render(&f, "salt/auth", &json!({"act": "accept", "id": "web1"})).unwrap();
        assert_eq!(none, Value::Null);
        std::fs::write(&f, "#!yaml\nx: {{ not jinja\n").unwrap();
        assert!(render(&f, "t", &json!({})).is_err());
    }
}
