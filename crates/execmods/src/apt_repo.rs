//! `pkg.mod_repo`, `pkg.del_repo` and `_expand_repo_def` of Salt's `aptpkg` (3007) on
//! the sources files of `apt_sources`. Repository keys (`keyid`/`keyserver`, `key_url`,
//! `key_text`), PPAs and `consolidate` are not implemented: the `pkgrepo` state refuses
//! them by name before calling here.

use rmpv::Value;

use crate::apt_sources::{MODIFY_OK, SourceEntry, SourcesList, split_repo_str};
use crate::run::which;
use crate::{is_true, text};

/// Keyword arguments of a call, in order.
pub type Kwargs = [(String, Value)];

/// The value of `key` in `kw`.
pub fn kwarg<'a>(kw: &'a Kwargs, key: &str) -> Option<&'a Value> {
    kw.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// Python's truthiness of a value.
pub fn py_truthy(v: &Value) -> bool {
    match v {
        Value::Nil => false,
        Value::Boolean(b) => *b,
        Value::Integer(i) => i.as_i64() != Some(0),
        Value::F64(f) => *f != 0.0,
        Value::String(s) => !s.as_bytes().is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Map(m) => !m.is_empty(),
        _ => true,
    }
}

/// `kw[key].split(",")`, each part stripped; a non-string fails as Python's `.split` does.
fn split_list(kw: &Kwargs, key: &str) -> Result<Option<Vec<String>>, String> {
    match kwarg(kw, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(
            s.as_str()
                .unwrap_or("")
                .split(',')
                .map(|x| x.trim().to_owned())
                .collect(),
        )),
        Some(v) => Err(format!(
            "'{key}' must be a comma-separated string, not {v} (Salt fails on it too)"
        )),
    }
}

/// `salt.utils.pkg.deb.combine_comments`.
pub fn combine_comments(v: &Value) -> String {
    let parts: Vec<String> = match v {
        Value::Array(a) => a.iter().map(text).collect(),
        other => vec![text(other)],
    };
    parts.join(" ").trim().to_owned()
}

/// `_expand_repo_def` without PPAs: the entry `repo` with the state's arguments would be.
pub fn expand_repo_def(repo: &str, kw: &Kwargs) -> Result<SourceEntry, String> {
    let mut e = SourceEntry::new(repo, None)?;
    let comps = split_list(kw, "comps")?;
    let archs = split_list(kw, "architectures")?;
    for key in MODIFY_OK {
        let Some(v) = kwarg(kw, key) else { continue };
        match *key {
            "uri" => e.uri = text(v),
            "comps" => e.comps = comps.clone().unwrap_or_default(),
            "architectures" => e.architectures = archs.clone().unwrap_or_default(),
            "disabled" => e.disabled = py_truthy(v),
            "file" => e.file = text(v),
            "dist" => e.dist = text(v),
            _ => e.signedby = text(v),
        }
    }
    let mut s = SourcesList::add(
        &e.kind,
        &e.uri,
        &e.dist,
        &e.comps,
        &e.architectures,
        &e.signedby,
    )?;
    s.disabled = e.disabled;
    s.line = s.repo_line();
    s.signedby = e.signedby;
    Ok(s)
}

/// `pkg.mod_repo(repo, aptkey=aptkey, **kw)`; `refresh_db` runs `apt-get update`.
pub fn mod_repo(
    repo: &str,
    aptkey: bool,
    kw: &Kwargs,
    refresh_db: &dyn Fn() -> Result<(), String>,
) -> Result<(), String> {
    let refresh = match kwarg(kw, "refresh_db") {
        Some(v) => py_truthy(v),
        None => kwarg(kw, "refresh").is_none_or(py_truthy),
    };
    let aptkey = aptkey && which("apt-key");
    if repo.starts_with("ppa:") {
        return Err(format!(
            "cannot parse \"ppa:\" style repo definitions: {repo}"
        ));
    }
    let mut sources = SourcesList::load()?;
    let entry = split_repo_str(repo)?;
    if entry.invalid {
        return Err(format!(
            "Name {repo} is not valid. This must be the complete repo entry as seen in the sources file"
        ));
    }
    let mut full_comps: Vec<String> = Vec::new();
    for c in &entry.comps {
        if !full_comps.contains(&c.trim().to_owned()) {
            full_comps.push(c.trim().to_owned());
        }
    }
    let signedby = entry.signedby.clone();
    if !aptkey && signedby.is_empty() {
        return Err("missing 'signedby' option when apt-key is missing".into());
    }
    let comps = match split_list(kw, "comps")? {
        Some(c) => {
            for x in &c {
                if !full_comps.contains(x) {
                    full_comps.push(x.clone());
                }
            }
            c
        }
        None => full_comps.clone(),
    };
    let archs = split_list(kw, "architectures")?.unwrap_or_else(|| entry.architectures.clone());
    let disabled = match (kwarg(kw, "disabled"), kwarg(kw, "enabled")) {
        (Some(d), _) => Some(is_true(d)),
        (None, Some(e)) => Some(!is_true(e)),
        _ => None,
    };
    let kw_type = kwarg(kw, "type").map(text);
    let kw_dist = kwarg(kw, "dist").map(text);
    let mut found: Option<usize> = None;
    for (i, s) in sources.list.iter().enumerate() {
        let repo_matches = s.kind == entry.kind
            && s.uri.trim_end_matches('/') == entry.uri.trim_end_matches('/')
            && s.dist == entry.dist;
        let kw_matches =
            kw_dist.as_deref() == Some(s.dist.as_str()) && kw_type.as_deref() == Some(&s.kind);
        if repo_matches || kw_matches {
            if full_comps.iter().any(|c| s.comps.contains(c))
                || s.comps.is_empty()
                || archs != s.architectures
            {
                found = Some(i);
            }
            if found.is_some() {
                break;
            }
        }
    }
    let comments = kwarg(kw, "comments").map(combine_comments);
    let i = match found {
        Some(i) => i,
        None => {
            sources.list.push(SourceEntry::new(repo, None)?);
            sources.list.len() - 1
        }
    };
    let src = &mut sources.list[i];
    if let Some(c) = comments {
        src.comment = c;
    }
    src.line = repo.to_owned();
    if !src.line.ends_with('\n') {
        src.line.push('\n');
    }
    src.comps = comps;
    src.architectures = archs;
    src.signedby = signedby;
    if let Some(d) = disabled {
        src.disabled = d;
    }
    if let Some(v) = kwarg(kw, "uri") {
        src.uri = text(v);
    }
    if let Some(v) = kwarg(kw, "file") {
        src.file = text(v);
    }
    if let Some(v) = kw_dist {
        src.dist = v;
    }
    if src.uri != entry.uri {
        src.uri = entry.uri.clone();
        src.line = src.repo_line();
    }
    sources.save()?;
    if refresh {
        refresh_db()?;
    }
    Ok(())
}

/// `pkg.del_repo(repo)`: the entries matching `repo` lose its comps (and go when none is
/// left); a `sources.list.d` file left empty is removed. Salt's message, or its error.
pub fn del_repo(repo: &str, refresh_db: &dyn Fn() -> Result<(), String>) -> Result<String, String> {
    let mut sources = SourcesList::load()?;
    let entry = split_repo_str(repo)?;
    let mut deleted_from: Vec<(String, usize)> = Vec::new();
    if sources.list.iter().any(|s| !s.invalid) {
        let r_comps = &entry.comps;
        let mut i = 0;
        while i < sources.list.len() {
            let s = &mut sources.list[i];
            let mut removed = false;
            if !s.invalid
                && s.kind == entry.kind
                && s.architectures == entry.architectures
                && s.uri.trim_end_matches('/') == entry.uri.trim_end_matches('/')
                && s.dist == entry.dist
                && (s.comps.iter().any(|c| r_comps.contains(c))
                    || (s.comps.is_empty() && r_comps.is_empty()))
            {
                if !deleted_from.iter().any(|(f, _)| *f == s.file) {
                    deleted_from.push((s.file.clone(), 0));
                }
                let mut left: Vec<String> = Vec::new();
                for c in &s.comps {
                    if !r_comps.contains(c) && !left.contains(c) {
                        left.push(c.clone());
                    }
                }
                s.comps = left;
                if s.comps.is_empty() {
                    sources.list.remove(i);
                    removed = true;
                }
            }
            sources.save()?;
            if !removed {
                i += 1;
            }
        }
    }
    if deleted_from.is_empty() {
        return Err(format!("Repo {repo} doesn't exist in the sources.list(s)"));
    }
    for s in &sources.list {
        if let Some((_, n)) = deleted_from.iter_mut().find(|(f, _)| *f == s.file) {
            *n += 1;
        }
    }
    let mut ret = String::new();
    for (file, count) in &deleted_from {
        if *count == 0 && file.contains("sources.list.d/") && std::path::Path::new(file).is_file() {
            let _ = std::fs::remove_file(file);
            ret.push_str(&format!(
                "File {file} containing repo '{repo}' has been removed."
            ));
        } else {
            ret.push_str(&format!("Repo '{repo}' has been removed from {file}.\n"));
        }
    }
    refresh_db()?;
    Ok(ret)
}
