//! `ext_pillar: - stack: ...` (Salt's salt/pillar/stack.py, PillarStack): stack config
//! files list YAML files (globs relative to the config file's directory), each rendered with
//! Jinja (the `stack` built so far, `pillar`, `minion_id`, `pillarenv`, `__opts__`,
//! `__grains__`, `__stack__` with `traverse` and `cfg_path`, and `ymlpath`) and merged into
//! the stack with its `__` strategy (`merge-last`, the default, `merge-first`, `remove`,
//! `overwrite`).
//!
//! The argument is Salt's call convention: a path, a list of paths, or a mapping of
//! `pillar:<key>` / `grains:<key>` / `opts:<key>` to `{value: [paths]}` (`__env__` in a
//! value or path is the pillarenv). `__salt__` is not given to the templates (salt-rs has
//! no master-side execution modules): a template using it fails to render, by name.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmpv::Value;
use salt_render::{Context, Loader};

use crate::Request;

const STRATEGIES: [&str; 4] = ["overwrite", "merge-first", "merge-last", "remove"];

/// Templates of the stack config's directory (Jinja's `FileSystemLoader(basedir)`).
struct Dir(PathBuf);

impl Loader for Dir {
    fn load(&self, path: &str, _saltenv: &str) -> Result<Option<String>, String> {
        let p = self.0.join(path);
        match std::fs::read_to_string(&p) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", p.display())),
        }
    }
}

fn s(v: &str) -> Value {
    Value::from(v)
}

fn key_is(k: &Value, name: &str) -> bool {
    k.as_str() == Some(name)
}

fn get<'a>(m: &'a [(Value, Value)], key: &Value) -> Option<&'a Value> {
    m.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// `ext_pillar(minion_id, pillar, *args, **kwargs)`.
pub(crate) fn ext_pillar(
    req: &Request,
    pillarenv: Option<&str>,
    pillar: &Value,
    arg: &Value,
) -> Result<Value, String> {
    let env = pillarenv
        .or(req.saltenv.as_deref())
        .unwrap_or("base")
        .to_owned();
    let opts = Value::Map(vec![
        (s("id"), s(&req.id)),
        (s("saltenv"), req.saltenv.as_deref().map_or(Value::Nil, s)),
        (s("pillarenv"), pillarenv.map_or(Value::Nil, s)),
    ]);
    let mut files: Vec<String> = Vec::new();
    match arg {
        Value::String(_) => files.push(salt_compat::py_str(arg)),
        Value::Array(items) => files.extend(items.iter().map(salt_compat::py_str)),
        Value::Map(kwargs) => {
            for (matcher, matchs) in kwargs {
                let matcher = salt_compat::py_str(matcher);
                let (t, key) = matcher
                    .split_once(':')
                    .ok_or_else(|| "not enough values to unpack (expected 2, got 1)".to_owned())?;
                let source = match t {
                    "pillar" => pillar,
                    "grains" => &req.grains,
                    "opts" => &opts,
                    other => {
                        return Err(format!(
                            "Unknown traverse option \"{other}\", should be one of \
                             dict_keys(['pillar', 'grains', 'opts'])"
                        ));
                    }
                };
                let Value::Map(choices) = matchs else {
                    return Err(format!("stack: {matcher}: expected a mapping of values"));
                };
                let choices: Vec<(Value, Value)> = choices
                    .iter()
                    .map(|(k, v)| {
                        let k = if key_is(k, "__env__") {
                            s(&env)
                        } else {
                            k.clone()
                        };
                        (k, v.clone())
                    })
                    .collect();
                let Some(found) = salt_matcher::traverse(source, key, ":") else {
                    continue;
                };
                match get(&choices, found) {
                    Some(Value::Array(list)) => {
                        files.extend(list.iter().map(salt_compat::py_str));
                    }
                    Some(one) => files.push(salt_compat::py_str(one)),
                    None => {}
                }
            }
            for f in files.iter_mut() {
                *f = f.replace("__env__", &env);
            }
        }
        Value::Nil => {}
        other => files.push(salt_compat::py_str(other)),
    }
    let mut stack = Value::Map(Vec::new());
    for f in files {
        let path = Path::new(&f);
        if !path.is_file() {
            tracing::info!("Ignoring pillar stack cfg \"{f}\": file does not exist");
            continue;
        }
        stack = process_cfg(path, stack, req, pillarenv, pillar, &opts)?;
    }
    Ok(stack)
}

fn process_cfg(
    cfg: &Path,
    mut stack: Value,
    req: &Request,
    pillarenv: Option<&str>,
    pillar: &Value,
    opts: &Value,
) -> Result<Value, String> {
    let basedir = cfg.parent().unwrap_or(Path::new("")).to_path_buf();
    let filename = cfg
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let loader: Arc<dyn Loader> = Arc::new(Dir(basedir.clone()));
    let render = |name: &str, stack: &Value, ymlpath: Option<&str>| -> Result<String, String> {
        let text = loader
            .load(name, "base")?
            .ok_or_else(|| format!("TemplateNotFound: {name}"))?;
        let mut vars = vec![
            (s("__opts__"), opts.clone()),
            (s("__grains__"), req.grains.clone()),
            (
                s("__stack__"),
                Value::Map(vec![(s("cfg_path"), s(&cfg.display().to_string()))]),
            ),
            (s("minion_id"), s(&req.id)),
            (s("pillar"), pillar.clone()),
            (s("pillarenv"), pillarenv.map_or(Value::Nil, s)),
            (s("stack"), stack.clone()),
        ];
        if let Some(p) = ymlpath {
            vars.push((s("ymlpath"), s(p)));
        }
        let ctx = Context {
            grains: req.grains.clone(),
            pillar: pillar.clone(),
            opts: opts.clone(),
            tplfile: name.to_owned(),
            id: req.id.clone(),
            vars: Value::Map(vars),
            ..Context::default()
        };
        salt_render::render_jinja_text(&text, &ctx, loader.clone()).map_err(|e| e.to_string())
    };
    let content = render(&filename, &stack, None)?;
    for item in parse_cfg(&content) {
        if item.trim().is_empty() {
            continue;
        }
        let pattern = basedir.join(&item);
        let mut paths = salt_config::py_glob(&pattern);
        if paths.is_empty() {
            tracing::info!(
                "Ignoring pillar stack template \"{item}\": can't find from root dir \"{}\"",
                basedir.display()
            );
            continue;
        }
        paths.sort();
        for path in paths {
            let rel = path
                .strip_prefix(&basedir)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            let shown = path.display().to_string();
            let yaml = render(&rel, &stack, Some(&shown))
                .map_err(|e| format!("Stack pillar template render error in {shown}:\n\"{e}\""))?;
            let obj = salt_render::yaml::load(&yaml).map_err(|e| {
                format!(
                    "Stack pillar yaml parsing error in {shown}:\n{}\n{yaml}",
                    e.0
                )
            })?;
            if let Some(obj @ Value::Map(_)) = obj {
                stack = merge_dict(stack, obj)?;
            }
        }
    }
    Ok(stack)
}

/// `_parse_stack_cfg`: a YAML list, else the lines.
fn parse_cfg(content: &str) -> Vec<String> {
    if let Ok(Some(Value::Array(items))) = salt_render::yaml::load(content) {
        return items.iter().map(salt_compat::py_str).collect();
    }
    content.lines().map(str::to_owned).collect()
}

use salt_compat::py_truthy as truthy;

fn starts_with_strategy(list: &[Value]) -> Option<&Value> {
    match list.first() {
        Some(Value::Map(m)) => get(m, &s("__")),
        _ => None,
    }
}

/// `_cleanup`: drop `__` from mappings (recursively) and a leading `{__: ...}` from lists.
fn cleanup(obj: Value) -> Value {
    if !truthy(&obj) {
        return obj;
    }
    match obj {
        Value::Map(m) => Value::Map(
            m.into_iter()
                .filter(|(k, _)| !key_is(k, "__"))
                .map(|(k, v)| (k, cleanup(v)))
                .collect(),
        ),
        Value::Array(mut a) => {
            if starts_with_strategy(&a).is_some() {
                a.remove(0);
            }
            Value::Array(a)
        }
        other => other,
    }
}

fn strategy(v: Option<Value>) -> Result<String, String> {
    let name = match v {
        None => return Ok("merge-last".to_owned()),
        Some(v) => salt_compat::py_str(&v),
    };
    if STRATEGIES.contains(&name.as_str()) {
        Ok(name)
    } else {
        Err(format!(
            "Unknown strategy \"{name}\", should be one of ('overwrite', 'merge-first', \
             'merge-last', 'remove')"
        ))
    }
}

fn same_type(a: &Value, b: &Value) -> bool {
    use Value::*;
    matches!(
        (a, b),
        (Nil, Nil)
            | (Boolean(_), Boolean(_))
            | (Integer(_), Integer(_))
            | (F32(_) | F64(_), F32(_) | F64(_))
            | (String(_), String(_))
            | (Binary(_), Binary(_))
            | (Array(_), Array(_))
            | (Map(_), Map(_))
    )
}

/// `_merge_dict(stack, obj)`.
fn merge_dict(stack: Value, obj: Value) -> Result<Value, String> {
    let Value::Map(mut obj) = obj else {
        return Ok(stack);
    };
    let pos = obj.iter().position(|(k, _)| key_is(k, "__"));
    let strategy = strategy(pos.map(|i| obj.remove(i).1))?;
    if strategy == "overwrite" {
        return Ok(cleanup(Value::Map(obj)));
    }
    let mut stack = match stack {
        Value::Map(m) => m,
        _ => Vec::new(),
    };
    for (k, v) in obj {
        let at = stack.iter().position(|(sk, _)| *sk == k);
        if strategy == "remove" {
            if let Some(i) = at {
                stack.remove(i);
            }
            continue;
        }
        let Some(i) = at else {
            stack.push((k, cleanup(v)));
            continue;
        };
        let (cur, v) = if strategy == "merge-first" {
            let old = std::mem::replace(&mut stack[i].1, Value::Nil);
            (cleanup(v), old)
        } else {
            (std::mem::replace(&mut stack[i].1, Value::Nil), v)
        };
        stack[i].1 = if !same_type(&cur, &v) {
            cleanup(v)
        } else {
            match (cur, v) {
                (cur @ Value::Map(_), v @ Value::Map(_)) => merge_dict(cur, v)?,
                (Value::Array(cur), Value::Array(v)) => merge_list(cur, v)?,
                (_, v) => v,
            }
        };
    }
    Ok(Value::Map(stack))
}

/// `_merge_list(stack, obj)`.
fn merge_list(stack: Vec<Value>, mut obj: Vec<Value>) -> Result<Value, String> {
    let mut strategy_v = None;
    if let Some(v) = starts_with_strategy(&obj) {
        strategy_v = Some(v.clone());
        obj.remove(0);
    }
    Ok(Value::Array(match strategy(strategy_v)?.as_str() {
        "overwrite" => obj,
        "remove" => stack.into_iter().filter(|i| !obj.contains(i)).collect(),
        "merge-first" => obj.into_iter().chain(stack).collect(),
        _ => stack.into_iter().chain(obj).collect(),
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn y(t: &str) -> Value {
        salt_render::yaml::load(t).unwrap().unwrap()
    }

    #[test]
    fn strategies_as_salt() {
        let st = y("a: {x: 1, l: [1, 2]}\nb: 1\n");
        let m = merge_dict(st.clone(), y("a: {y: 2, l: [3]}\nb: 2\n")).unwrap();
        assert_eq!(m, y("a: {x: 1, l: [1, 2, 3], y: 2}\nb: 2\n"));
        let m = merge_dict(st.clone(), y("a: {__: merge-first, x: 9, z: 3}\n")).unwrap();
        assert_eq!(m, y("a: {x: 1, l: [1, 2], z: 3}\nb: 1\n"));
        let m = merge_dict(st.clone(), y("__: remove\nb: ~\n")).unwrap();
        assert_eq!(m, y("a: {x: 1, l: [1, 2]}\n"));
        let m = merge_dict(st.clone(), y("__: overwrite\nc: {__: x, d: 1}\n")).unwrap();
        assert_eq!(m, y("c: {d: 1}\n"));
        let m = merge_dict(st.clone(), y("a: {l: [{__: remove}, 1]}\n")).unwrap();
        assert_eq!(m, y("a: {x: 1, l: [2]}\nb: 1\n"));
        let m = merge_dict(st.clone(), y("a: {l: [{__: merge-first}, 0]}\n")).unwrap();
        assert_eq!(m, y("a: {x: 1, l: [0, 1, 2]}\nb: 1\n"));
        let m = merge_dict(st, y("a: text\n")).unwrap();
        assert_eq!(m, y("a: text\nb: 1\n"));
        assert!(merge_dict(y("{}"), y("__: nope\n")).is_err());
    }
}
