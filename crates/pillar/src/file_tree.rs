//! `file_tree` (Salt's `salt/pillar/file_tree.py`): the files under `<root_dir>/hosts/<id>`
//! (and `<root_dir>/nodegroups/<group>` for the node groups the minion is in) as pillar, one
//! key per directory and file, each file's bytes its value (one final newline dropped unless
//! `keep_newline` says otherwise).
//!
//! As Salt: a relative `root_dir` is looked up under every `pillar_roots` directory of the
//! pillarenv (merged in order, `recurse`); node groups are read in directory order and merged
//! `recurse`, the host's files last; a symlink to a directory is an empty mapping unless
//! `follow_dir_links`; what is not a regular file (a dangling link, a FIFO) is logged and
//! skipped. The values are bytes (msgpack `bin`), as Salt's are. `template: True` (rendering
//! the files) is refused by name.

use std::path::{Path, PathBuf};

use rmpv::Value;

use crate::ext::{bind, truthy};
use crate::{Options, Request};

/// `ext_pillar(minion_id, pillar, root_dir=None, follow_dir_links=False, debug=False,
/// keep_newline=False, render_default=None, renderer_blacklist=None, renderer_whitelist=None,
/// template=False)`.
const PARAMS: &[&str] = &[
    "root_dir",
    "follow_dir_links",
    "debug",
    "keep_newline",
    "render_default",
    "renderer_blacklist",
    "renderer_whitelist",
    "template",
];

/// Runs `file_tree` for `req` with its configured argument.
pub(crate) fn ext_pillar(
    cfg: &Options,
    req: &Request,
    pillarenv: Option<&str>,
    pillar: &Value,
    arg: &Value,
) -> Result<Value, String> {
    let a = bind(arg, PARAMS, 0)?;
    let get = |i: usize| a[i].clone().unwrap_or(Value::Nil);
    if truthy(&get(7)) {
        return Err(template_refused());
    }
    let root_dir = get(0);
    if !truthy(&root_dir) {
        tracing::error!("file_tree: no root_dir specified");
        return Ok(empty());
    }
    let Some(root_dir) = root_dir.as_str() else {
        return Err(format!(
            "expected str, bytes or os.PathLike object, not {root_dir}"
        ));
    };
    let dirs: Vec<PathBuf> = if root_dir.starts_with('/') {
        vec![PathBuf::from(root_dir)]
    } else {
        let Some(env) = pillarenv else {
            tracing::error!("file_tree: root_dir is relative but pillarenv is not set");
            return Ok(empty());
        };
        let Some(roots) = cfg.pillar_roots.get(env) else {
            tracing::error!(
                "file_tree: root_dir is relative but no pillar_roots are specified  for \
                 pillarenv {env}"
            );
            return Ok(empty());
        };
        let mut dirs: Vec<PathBuf> = Vec::new();
        for r in roots {
            let d = salt_compat::id::normpath(&Path::new(r).join(root_dir));
            if dirs.last() != Some(&d) {
                dirs.push(d);
            }
        }
        dirs
    };
    let opts = Walk {
        follow: truthy(&get(1)),
        keep_newline: a[3].clone().unwrap_or(Value::Boolean(false)),
    };
    let mut out = empty();
    for root in dirs {
        let part = one_root(cfg, req, pillar, &root, &opts)?;
        out = salt_render::merge::merge(out, part, "recurse", false);
    }
    Ok(out)
}

/// What [`construct`] needs from the arguments.
struct Walk {
    follow: bool,
    keep_newline: Value,
}

fn empty() -> Value {
    Value::Map(Vec::new())
}

/// The refusal of `template: True`.
pub(crate) fn template_refused() -> String {
    "file_tree with `template: True` (rendering the files) is not implemented by salt-rs".to_owned()
}

/// Salt's `_ext_pillar` for one root directory.
fn one_root(
    cfg: &Options,
    req: &Request,
    pillar: &Value,
    root: &Path,
    opts: &Walk,
) -> Result<Value, String> {
    if !root.is_dir() {
        tracing::error!(
            "file_tree: root_dir {} does not exist or is not a directory",
            root.display()
        );
        return Ok(empty());
    }
    if !matches!(opts.keep_newline, Value::Boolean(_) | Value::Array(_)) {
        tracing::error!(
            "file_tree: keep_newline must be either True/False or a list of file globs. \
             Skipping this ext_pillar for root_dir {}",
            root.display()
        );
        return Ok(empty());
    }
    let mut ngroup = empty();
    let ng_dir = root.join("nodegroups");
    if ng_dir.exists() && !cfg.nodegroups.is_empty() {
        let entries =
            std::fs::read_dir(&ng_dir).map_err(|e| format!("{}: {e}", ng_dir.display()))?;
        let facts = salt_matcher::Facts {
            id: &req.id,
            grains: Some(&req.grains),
            pillar: Some(pillar),
        };
        for entry in entries {
            let entry = entry.map_err(|e| format!("{}: {e}", ng_dir.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some((_, expr)) = cfg.nodegroups.iter().find(|(g, _)| *g == name) else {
                continue;
            };
            let hit = salt_matcher::check(facts, expr, "compound", None, &cfg.nodegroups);
            match hit {
                Ok(Some(true)) => {
                    let part = construct(&ng_dir.join(&name), opts);
                    ngroup = salt_render::merge::merge(ngroup, part, "recurse", false);
                }
                Ok(_) => {}
                Err(e) => tracing::error!(
                    "Failed matching available minions with compound pattern: {expr}: {e}"
                ),
            }
        }
    }
    let host = root.join("hosts").join(&req.id);
    if !host.exists() {
        return Ok(ngroup);
    }
    if !host.is_dir() {
        tracing::error!(
            "file_tree: {} exists, but is not a directory",
            host.display()
        );
        return Ok(ngroup);
    }
    let host_pillar = construct(&host, opts);
    Ok(salt_render::merge::merge(
        ngroup,
        host_pillar,
        "recurse",
        false,
    ))
}

/// Salt's `_construct_pillar`: `os.walk(top, followlinks=follow)` into nested mappings.
fn construct(top: &Path, opts: &Walk) -> Value {
    walk(top, "", opts)
}

/// One directory of the walk; `prefix` is its path relative to the top (`os.path.relpath`:
/// `.` for the top itself).
fn walk(dir: &Path, prefix: &str, opts: &Walk) -> Value {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            tracing::error!("{}: {e}", dir.display());
            return empty();
        }
    };
    let mut dirs: Vec<(String, bool)> = Vec::new();
    let mut files: Vec<String> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        // `DirEntry.is_dir()` follows links, as os.walk's does.
        if path.is_dir() {
            let link = entry.file_type().map(|t| t.is_symlink()).unwrap_or(false);
            dirs.push((name, link));
        } else {
            files.push(name);
        }
    }
    let mut node: Vec<(Value, Value)> = dirs
        .iter()
        .map(|(d, _)| (Value::from(d.as_str()), empty()))
        .collect();
    let here = if prefix.is_empty() { "." } else { prefix };
    for name in files {
        let path = dir.join(&name);
        if !path.is_file() {
            tracing::error!("file_tree: {}: not a regular file", path.display());
            continue;
        }
        let mut contents = match std::fs::read(&path) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!("file_tree: Error reading {}: {e}", path.display());
                continue;
            }
        };
        if contents.ends_with(b"\n") && strip_newline(here, &name, &opts.keep_newline) {
            contents.pop();
        }
        node.push((Value::from(name.as_str()), Value::Binary(contents)));
    }
    for (i, (name, link)) in dirs.iter().enumerate() {
        if *link && !opts.follow {
            continue;
        }
        let sub = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        node[i].1 = walk(&dir.join(name), &sub, opts);
    }
    Value::Map(node)
}

/// Salt's `_check_newline`: whether the final newline goes (`keep_newline` false, or no glob
/// of it matching `<prefix>/<file>`).
fn strip_newline(prefix: &str, file: &str, keep_newline: &Value) -> bool {
    match keep_newline {
        Value::Boolean(b) => !b,
        Value::Array(globs) => {
            let full = format!("{prefix}/{file}");
            !globs
                .iter()
                .any(|g| salt_compat::fnmatch(&full, &salt_compat::py_str(g)))
        }
        _ => true,
    }
}
