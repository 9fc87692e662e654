//! Salt's `saltutil.sync_*` runners on the master (`salt/runners/saltutil.py` over
//! `salt.utils.extmods.sync`): copy `salt://_<form>/` (`.py`, `.pyx`, `.so`, `.zip` files) of
//! each `saltenv` from the file server into `<root_dir>/var/cache/salt/master/extmods/<form>/`
//! (Salt's default `extension_modules`), answer the names copied or changed (`<form>.<name>`), and remove the
//! files no longer served (`clean_dynamic_modules`, on by default). `sync_all` answers each
//! form under its name, in Salt's order.
//!
//! salt-rs's master runs no Python modules: what is synced is stored where Salt keeps it
//! (a master switched back to Salt finds it), and a custom runner or wheel module still
//! answers "is not available".

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rmpv::Value as Mp;
use serde_json::{Map, Value, json};

use super::ctx::{Args, Ctx};

/// `sync_all`'s keys in Salt's order, each with the runner that fills it.
pub(crate) const FORMS: &[(&str, &str)] = &[
    ("clouds", "sync_clouds"),
    ("modules", "sync_modules"),
    ("states", "sync_states"),
    ("grains", "sync_grains"),
    ("renderers", "sync_renderers"),
    ("returners", "sync_returners"),
    ("output", "sync_output"),
    ("proxymodules", "sync_proxymodules"),
    ("runners", "sync_runners"),
    ("wheel", "sync_wheel"),
    ("engines", "sync_engines"),
    ("thorium", "sync_thorium"),
    ("queues", "sync_queues"),
    ("pillar", "sync_pillar"),
    ("utils", "sync_utils"),
    ("sdb", "sync_sdb"),
    ("cache", "sync_cache"),
    ("fileserver", "sync_fileserver"),
    ("tops", "sync_tops"),
    ("tokens", "sync_eauth_tokens"),
    ("serializers", "sync_serializers"),
    ("executors", "sync_executors"),
    ("wrapper", "sync_wrapper"),
    ("roster", "sync_roster"),
];

/// Run `saltutil.<fun>` (`sync_all` or one `sync_*`).
pub(crate) fn call(ctx: &Ctx, fun: &str, a: &Args) -> Result<Value, String> {
    let envs: Vec<String> = match a.get("saltenv") {
        None => vec!["base".into()],
        Some(Value::Array(v)) => v.iter().map(salt_compat::py_json_str).collect(),
        Some(v) => salt_compat::py_json_str(v)
            .split(',')
            .map(str::to_owned)
            .collect(),
    };
    let short = fun.strip_prefix("saltutil.").unwrap_or(fun);
    if short == "sync_all" {
        let mut out = Map::new();
        for (form, _) in FORMS {
            out.insert((*form).to_owned(), json!(sync(ctx, form, &envs, a)));
        }
        return Ok(Value::Object(out));
    }
    match FORMS.iter().find(|(_, f)| *f == short) {
        Some((form, _)) => Ok(json!(sync(ctx, form, &envs, a))),
        None => Ok(json!(format!("'{fun}' is not available."))),
    }
}

/// `extmod_whitelist` / `extmod_blacklist` for `form`: text is a comma list for this form,
/// a dict maps forms to lists; absent is the master's (salt-rs: none).
fn listed(a: &Args, name: &str, form: &str) -> Option<Vec<String>> {
    match a.get(name)? {
        Value::String(s) => Some(s.split(',').map(str::to_owned).collect()),
        Value::Object(m) => m.get(form).map(|v| match v {
            Value::Array(items) => items.iter().map(salt_compat::py_json_str).collect(),
            other => vec![salt_compat::py_json_str(other)],
        }),
        other => {
            tracing::error!("{name} must be a string or dictionary: {other}");
            None
        }
    }
}

/// Salt's default master `extension_modules`: `<root_dir>/var/cache/salt/master/extmods`
/// (whatever `cachedir` is; salt-rs has no `extension_modules` option).
fn extension_modules(ctx: &Ctx) -> PathBuf {
    ctx.shared
        .cfg
        .root_dir
        .join("var/cache/salt/master/extmods")
}

/// Salt's `extmods.sync(opts, form, saltenv, ...)`: the names copied or changed.
fn sync(ctx: &Ctx, form: &str, envs: &[String], a: &Args) -> Vec<String> {
    let white = listed(a, "extmod_whitelist", form);
    let black = listed(a, "extmod_blacklist", form);
    let mod_dir = extension_modules(ctx).join(form);
    if !mod_dir.is_dir()
        && let Err(e) = std::fs::create_dir_all(&mod_dir)
    {
        tracing::error!(
            "Cannot create cache module directory {}. Check permissions. ({e})",
            mod_dir.display()
        );
        return Vec::new();
    }
    let prefix = format!("_{form}/");
    let mut ret = Vec::new();
    let mut remote: HashSet<PathBuf> = HashSet::new();
    for env in envs {
        tracing::info!("Syncing {form} for environment '{env}'");
        for rel in served(ctx, env, &prefix) {
            let Some(relpath) = rel.strip_prefix(&prefix) else {
                continue;
            };
            if !is_module(relpath) {
                continue;
            }
            let relname = relpath
                .rsplit_once('.')
                .map_or(relpath, |(stem, _)| stem)
                .replace('/', ".");
            if white.as_ref().is_some_and(|w| !w.contains(&relname))
                || black.as_ref().is_some_and(|b| b.contains(&relname))
            {
                continue;
            }
            let Some(src) = find(ctx, env, &rel) else {
                continue;
            };
            remote.insert(PathBuf::from(relpath));
            let dest = mod_dir.join(relpath);
            match copy_if_changed(&src, &dest) {
                Ok(true) => ret.push(format!("{form}.{relname}")),
                Ok(false) => {}
                Err(e) => tracing::error!("Failed to sync {form} module: {e}"),
            }
        }
    }
    // Salt's default `clean_dynamic_modules: True` (salt-rs has no such option).
    clean(&mod_dir, &mod_dir, &remote);
    if !ret.is_empty() {
        tracing::warn!(
            "saltutil: synced {} into {}; salt-rs's master runs no Python modules",
            ret.join(", "),
            mod_dir.display()
        );
    }
    ret
}

fn is_module(rel: &str) -> bool {
    [".py", ".pyx", ".so", ".zip"]
        .iter()
        .any(|ext| rel.ends_with(ext))
}

/// The files the file server lists under `prefix` in `env`.
fn served(ctx: &Ctx, env: &str, prefix: &str) -> Vec<String> {
    let load = Mp::Map(vec![
        (Mp::from("cmd"), Mp::from("_file_list")),
        (Mp::from("saltenv"), Mp::from(env)),
        (Mp::from("prefix"), Mp::from(prefix.trim_end_matches('/'))),
    ]);
    match ctx.shared.files.handle("_file_list", &load, "master") {
        Some(Mp::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .filter(|p| p.starts_with(prefix))
            .collect(),
        _ => Vec::new(),
    }
}

/// Where the file server finds `rel` in `env`.
fn find(ctx: &Ctx, env: &str, rel: &str) -> Option<PathBuf> {
    let load = Mp::Map(vec![
        (Mp::from("cmd"), Mp::from("_file_find")),
        (Mp::from("saltenv"), Mp::from(env)),
        (Mp::from("path"), Mp::from(rel)),
    ]);
    let got = ctx.shared.files.handle("_file_find", &load, "master")?;
    salt_compat::map_get(&got, "path")
        .and_then(Mp::as_str)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// Copy `src` to `dest` unless `dest` has the same content; whether it copied.
fn copy_if_changed(src: &Path, dest: &Path) -> std::io::Result<bool> {
    let new = std::fs::read(src)?;
    if dest.is_file() && std::fs::read(dest)? == new {
        return Ok(false);
    }
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(dest, new)?;
    Ok(true)
}

/// `clean_dynamic_modules`: remove files under `dir` not in `keep` (paths relative to
/// `base`), then the directories left empty.
fn clean(base: &Path, dir: &Path, keep: &HashSet<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let path = e.path();
        if path.is_dir() {
            clean(base, &path, keep);
            if std::fs::read_dir(&path).is_ok_and(|mut d| d.next().is_none()) {
                let _ = std::fs::remove_dir(&path);
            }
        } else if let Ok(rel) = path.strip_prefix(base)
            && !keep.contains(rel)
        {
            let _ = std::fs::remove_file(&path);
        }
    }
}
