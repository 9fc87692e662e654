//! The gitfs side of Salt's runners: `fileserver.update` over the configured backends
//! (`backend=`, `remotes=`) and `cache.clear_git_lock` (Salt's `salt/runners/cache.py`).

use serde_json::{Value, json};

use super::{Args, Ctx};
use crate::shared::Shared;

/// `fileserver.update [backend=roots,gitfs] [remotes=url,name]`: Salt's `True`; when a gitfs
/// remote failed (it keeps serving its last good tree), `{"errors": [...]}` naming each.
/// Blocking (fetches): run it off the runtime's threads.
pub(crate) fn update(shared: &Shared, a: &Args) -> Result<Value, String> {
    let files = &shared.files;
    let mut roots = files.roots_enabled();
    let mut git = files.gitfs().is_some();
    if let Some(b) = a.text("backend") {
        let names: Vec<String> = b
            .split(',')
            .map(|n| match n.trim() {
                "git" => "gitfs".to_owned(),
                "-git" => "-gitfs".to_owned(),
                n => n.to_owned(),
            })
            .collect();
        if let Some(bad) = names
            .iter()
            .find(|n| !matches!(n.trim_start_matches('-'), "roots" | "gitfs"))
        {
            return Err(format!(
                "fileserver backend {bad:?} is not implemented by salt-rs (roots and gitfs only)"
            ));
        }
        if names.iter().all(|n| n.starts_with('-')) {
            roots &= !names.iter().any(|n| n == "-roots");
            git &= !names.iter().any(|n| n == "-gitfs");
        } else {
            roots &= names.iter().any(|n| n == "roots");
            git &= names.iter().any(|n| n == "gitfs");
        }
    }
    if roots {
        files.update();
    }
    if let (true, Some(g)) = (git, files.gitfs()) {
        let only: Option<Vec<String>> = a
            .text("remotes")
            .map(|r| r.split(',').map(|s| s.trim().to_owned()).collect());
        let report = g.update(only.as_deref());
        if !report.errors.is_empty() {
            return Ok(json!({ "errors": report.errors }));
        }
    }
    Ok(json!(true))
}

/// `git_pillar.update [branch=] [repo=]` (Salt's `salt/runners/git_pillar.py`): fetches the
/// git_pillar remotes picked; per remote id, `true` (refs changed), `null` (unchanged) or
/// `false` (the fetch failed), as Salt's GitPython provider answers. Blocking (fetches).
pub(crate) fn git_pillar_update(shared: &Shared, a: &Args) -> Result<Value, String> {
    let (branch, repo) = (a.text("branch"), a.text("repo"));
    let mut ret = serde_json::Map::new();
    for g in &shared.git_pillars {
        for (id, result) in g.update(branch.as_deref(), repo.as_deref()) {
            ret.insert(id, json!(result));
        }
    }
    if ret.is_empty() {
        return Err(if branch.is_some() || repo.is_some() {
            "Specified git branch/repo not found in ext_pillar config".to_owned()
        } else {
            "No git_pillar remotes are configured".to_owned()
        });
    }
    Ok(Value::Object(ret))
}

/// `cache.clear_git_lock <role> [remote=glob] [type=update,checkout,mountpoint]`.
pub(crate) fn clear_git_lock(ctx: &Ctx, a: &Args) -> Result<Value, String> {
    let role = a.text("role").unwrap_or_default();
    let types: Vec<String> = a
        .text("type")
        .unwrap_or_else(|| "update,checkout,mountpoint".into())
        .split(',')
        .map(|s| s.trim().to_owned())
        .collect();
    let (cleared, errors) = match role.as_str() {
        "gitfs" => match ctx.shared.files.gitfs() {
            Some(g) => g.clear_lock(a.text("remote").as_deref(), &types),
            None => (Vec::new(), Vec::new()),
        },
        "git_pillar" => {
            let (mut cleared, mut errors) = (Vec::new(), Vec::new());
            for g in &ctx.shared.git_pillars {
                let (c, e) = g.clear_lock(a.text("remote").as_deref(), &types);
                cleared.extend(c);
                errors.extend(e);
            }
            (cleared, errors)
        }
        "winrepo" => {
            return Err(format!(
                "cache.clear_git_lock: role {role:?} is not implemented by salt-rs (gitfs and \
                 git_pillar only)"
            ));
        }
        _ => return Err(format!("Invalid role '{role}'")),
    };
    let mut ret = serde_json::Map::new();
    if !cleared.is_empty() {
        ret.insert("cleared".into(), json!(cleared));
    }
    if !errors.is_empty() {
        ret.insert("errors".into(), json!(errors));
    }
    if ret.is_empty() {
        return Ok(json!("No locks were removed"));
    }
    Ok(Value::Object(ret))
}
