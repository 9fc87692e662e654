//! Salt's wheel `file_roots` and `pillar_roots` modules: list, read and write the files under
//! the master's `file_roots` / `pillar_roots`, with Salt's return shapes and messages.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{Answer, Args, Fail};

/// One of the two trees: saltenv to its root directories.
pub(crate) struct Roots {
    envs: BTreeMap<String, Vec<PathBuf>>,
    /// `file_roots` (its `find` skips paths leaving the root; its `write` names the path in
    /// the "Invalid path" message); `pillar_roots` checks only when writing.
    files: bool,
}

impl Roots {
    pub(crate) fn new(envs: BTreeMap<String, Vec<PathBuf>>, files: bool) -> Self {
        Self { envs, files }
    }
}

/// Run `file_roots.<f>` / `pillar_roots.<f>`.
pub(crate) fn call(r: &Roots, f: &str, a: &Args) -> Answer {
    let saltenv = a.text("saltenv").unwrap_or_else(|| "base".to_owned());
    match f {
        "find" => Ok(find(r, &path_arg(a)?, &saltenv)
            .into_iter()
            .map(|(p, kind)| json!({p: kind}))
            .collect()),
        "list_env" => Ok(list_env(r, &saltenv)),
        "list_roots" => Ok(Value::Object(
            r.envs
                .keys()
                .map(|env| (env.clone(), json!([list_env(r, env)])))
                .collect(),
        )),
        "read" => read(r, &path_arg(a)?, &saltenv),
        _ => write(r, a, &saltenv),
    }
}

fn path_arg(a: &Args) -> Result<String, Fail> {
    a.text("path").ok_or_else(|| {
        Fail::Raise(
            "TypeError".into(),
            "expected str, bytes or os.PathLike object, not NoneType".into(),
        )
    })
}

/// Salt's `find`: the files `path` names in each root of `saltenv`, `txt` or `bin`.
fn find(r: &Roots, path: &str, saltenv: &str) -> Vec<(String, &'static str)> {
    let Some(roots) = r.envs.get(saltenv) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for root in roots {
        let full = root.join(path);
        if r.files && salt_compat::id::clean_path(root, path, true).is_none() {
            continue;
        }
        if full.is_file() {
            let kind = if is_text(&full) { "txt" } else { "bin" };
            out.push((full.display().to_string(), kind));
        }
    }
    out
}

/// Salt's `salt.utils.files.is_text` on the first 512 bytes.
fn is_text(path: &Path) -> bool {
    let mut block = Vec::with_capacity(512);
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(512).read_to_end(&mut block);
    }
    if block.contains(&0) {
        return false;
    }
    if block.is_empty() || std::str::from_utf8(&block).is_ok() {
        return true;
    }
    let text = |b: u8| (32..127).contains(&b) || b"\n\r\t\x0c\x08".contains(&b);
    let nontext = block.iter().filter(|b| !text(**b)).count();
    nontext * 100 <= block.len() * 30
}

/// Salt's `list_env`: per root, its tree as nested dicts (`"f"` for a file).
fn list_env(r: &Roots, saltenv: &str) -> Value {
    let Some(roots) = r.envs.get(saltenv) else {
        return json!({});
    };
    Value::Object(
        roots
            .iter()
            .map(|root| (root.display().to_string(), Value::Object(tree(root))))
            .collect(),
    )
}

/// `os.walk` without following links: directories as dicts, everything else `"f"`.
fn tree(dir: &Path) -> Map<String, Value> {
    let mut out = Map::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut entries: Vec<_> = rd.flatten().collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let is_dir = e.path().is_dir();
        let is_link = e.file_type().is_ok_and(|t| t.is_symlink());
        let v = match (is_dir, is_link) {
            (true, false) => Value::Object(tree(&e.path())),
            (true, true) => json!({}),
            _ => json!("f"),
        };
        out.insert(name, v);
    }
    out
}

/// Salt's `read`: the text files `path` names, `[{full path: text}]`.
fn read(r: &Roots, path: &str, saltenv: &str) -> Answer {
    let mut out = Vec::new();
    for (full, kind) in find(r, path, saltenv) {
        if kind != "txt" {
            continue;
        }
        let bytes = std::fs::read(&full).map_err(|e| {
            Fail::Raise(
                "OSError".into(),
                format!("[Errno {}] {e}: '{full}'", e.raw_os_error().unwrap_or(0)),
            )
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            Fail::Raise(
                "UnicodeDecodeError".into(),
                format!("'utf-8' codec can't decode: {e}"),
            )
        })?;
        out.push(json!({full: text}));
    }
    Ok(Value::Array(out))
}

/// Salt's `write(data, path, saltenv, index)`: the file under root `index` of `saltenv`.
fn write(r: &Roots, a: &Args, saltenv: &str) -> Answer {
    let Some(roots) = r.envs.get(saltenv) else {
        return Ok(json!(format!("Named environment {saltenv} is not present")));
    };
    let index = match a.get("index") {
        None => 0,
        Some(v) => v.as_u64().ok_or_else(|| {
            Fail::Raise(
                "TypeError".into(),
                "'<=' not supported between instances of 'int' and 'str'".into(),
            )
        })?,
    };
    let Some(root) = usize::try_from(index).ok().and_then(|i| roots.get(i)) else {
        return Ok(json!(format!(
            "Specified index {index} in environment {saltenv} is not present"
        )));
    };
    let path = path_arg(a)?;
    if Path::new(&path).is_absolute() {
        return Ok(json!(format!(
            "The path passed in {path} is not relative to the environment {saltenv}"
        )));
    }
    if salt_compat::id::clean_path(root, &path, true).is_none() {
        return Ok(json!(if r.files {
            format!("Invalid path: {path}")
        } else {
            "Invalid path".to_owned()
        }));
    }
    let dest = root.join(&path);
    let io = |e: std::io::Error, p: &Path| {
        Fail::Raise(
            "OSError".into(),
            format!(
                "[Errno {}] {e}: '{}'",
                e.raw_os_error().unwrap_or(0),
                p.display()
            ),
        )
    };
    if let Some(dir) = dest.parent()
        && !dir.is_dir()
    {
        std::fs::create_dir_all(dir).map_err(|e| io(e, dir))?;
    }
    let data = match a.get("data") {
        Some(Value::String(s)) => s.clone(),
        Some(v) => salt_compat::py_json_str(v),
        None => "None".to_owned(),
    };
    std::fs::write(&dest, data).map_err(|e| io(e, &dest))?;
    Ok(json!(format!("Wrote data to file {}", dest.display())))
}
