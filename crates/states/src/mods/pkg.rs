//! `pkg.installed`, `pkg.latest`, `pkg.removed`, `pkg.purged` (`salt/states/pkg.py`) on
//! Debian, through `salt-execmods`' `pkg` module. Options salt-rs does not have are
//! refused by name: `sources`, `reinstall`, `pkg_verify`, `resolve_capabilities`,
//! `downloadonly`.

use std::sync::atomic::{AtomicBool, Ordering};

use rmpv::Value;
use salt_execmods::{Args, pkg as ex};

use super::{base_ret, name_of};
use super::{pkg_hold, pkg_version, ret};
use crate::engine::Ctx;
use crate::{empty, map, set, truthy};
use salt_compat::map_get;

/// Salt's rtag (`cachedir/pkg_refresh`): the first pkg state of a run refreshes the
/// package database unless `refresh: False`.
static RTAG: AtomicBool = AtomicBool::new(false);
static INIT: AtomicBool = AtomicBool::new(false);

fn exctx<'a>(ctx: &Ctx<'a>) -> salt_execmods::Ctx<'a> {
    salt_execmods::Ctx {
        opts: &ctx.opts.opts,
        grains: &ctx.opts.grains,
    }
}

fn kwargs(low: &Value) -> Vec<(String, Value)> {
    match low {
        Value::Map(m) => m
            .iter()
            .filter_map(|(k, v)| Some((k.as_str()?.to_owned(), v.clone())))
            .filter(|(k, _)| {
                !k.starts_with("__") && !["state", "fun", "order"].contains(&k.as_str())
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// `{new, old}` as `_get_installable_versions` builds it.
fn new_old(new: Value, old: &str) -> Value {
    map(vec![("new", new), ("old", Value::from(old))])
}

fn fail(mut r: Value, msg: String) -> Value {
    ret::comment(&mut r, msg);
    r
}

fn check_refresh(low: &Value) -> bool {
    match map_get(low, "refresh") {
        Some(Value::Nil) | None => RTAG.load(Ordering::SeqCst),
        Some(v) => truthy(v),
    }
}

fn refresh(low: &Value) -> Result<(), String> {
    if check_refresh(low) {
        RTAG.store(false, Ordering::SeqCst);
        ex::refresh_db()?;
    }
    Ok(())
}

/// `desired`: `(name, version)` from `pkgs` or `name`/`version`.
fn desired(low: &Value) -> Result<Vec<(String, Option<String>)>, String> {
    let kw = kwargs(low);
    let a = Args::new("pkg.installed", &[], &kw);
    ex::targets(&a)
}

/// Whether `list` holds package `name` (at `version`, a leading `=` ignored, when given).
fn has_version(list: &ex::PkgList, name: &str, version: Option<&str>) -> bool {
    let mut have = list
        .iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v.as_str());
    match version {
        None => have.next().is_some(),
        Some(v) => pkg_version::fulfills(&have.collect::<Vec<_>>(), v),
    }
}

fn desired_str(n: &str, v: &Option<String>) -> String {
    match v {
        Some(v) if !v.is_empty() => {
            let op = if v.starts_with(['<', '>', '=']) {
                ""
            } else {
                "="
            };
            format!("{n}{op}{v}")
        }
        _ => n.to_owned(),
    }
}

fn installed(ctx: &Ctx<'_>, low: &Value) -> Result<Value, String> {
    let r = base_ret(low);
    for k in [
        "sources",
        "reinstall",
        "pkg_verify",
        "resolve_capabilities",
        "downloadonly",
    ] {
        if map_get(low, k).is_some_and(truthy) {
            return Ok(fail(
                r,
                format!("pkg.installed option '{k}' is not supported by salt-rs"),
            ));
        }
    }
    if matches!(map_get(low, "pkgs"), Some(Value::Array(a)) if a.is_empty()) {
        let mut r = r;
        set(&mut r, "result", Value::Boolean(true));
        return Ok(fail(r, "No packages to install provided".into()));
    }
    let want = desired(low)?;
    let cur = ex::list(&exctx(ctx))?;
    if !ctx.opts.test {
        refresh(low)?; // Under test, only `latest_version` refreshes (below).
    }
    let mut targets: Vec<(String, Option<String>)> = Vec::new();
    for (n, v) in &want {
        let ok = has_version(&cur, n, v.as_deref());
        if !ok {
            targets.push((n.clone(), v.clone()));
        }
    }
    let mut r = r;
    if targets.is_empty() {
        let spec = want.iter().any(|(_, v)| v.is_some());
        set(&mut r, "result", Value::Boolean(true));
        let r = fail(
            r,
            format!(
                "All specified packages are already installed{}",
                if spec {
                    " and are at the desired version"
                } else {
                    ""
                }
            ),
        );
        let names: Vec<String> = want.iter().map(|(n, _)| n.clone()).collect();
        return Ok(
            match pkg_hold::installed_hold(low, &names, ctx.opts.test)? {
                Some(h) => pkg_hold::noop_with_holds(r, &h),
                None => r,
            },
        );
    }
    if ctx.opts.test {
        let mut changes = Vec::new();
        let latest: Vec<String> = targets
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(n, _)| n.clone())
            .collect();
        if !latest.is_empty() {
            // `_get_installable_versions`: no candidate version reads "installed".
            RTAG.store(false, Ordering::SeqCst);
            for (n, v) in ex::latest(&exctx(ctx), &latest, true)? {
                let v = if v.is_empty() { "installed".into() } else { v };
                changes.push((n, new_old(Value::from(v), "")));
            }
        }
        for (n, v) in targets.iter().filter(|(_, v)| v.is_some()) {
            let new = pkg_version::repo_version(&desired_str(n, v));
            changes.push((
                n.clone(),
                new_old(Value::from(new.unwrap_or("installed".into())), ""),
            ));
        }
        changes.sort_by(|a, b| a.0.cmp(&b.0));
        set(
            &mut r,
            "changes",
            map(changes
                .iter()
                .map(|(k, v)| (k.as_str(), v.clone()))
                .collect()),
        );
        set(&mut r, "result", Value::Nil);
        let summary: Vec<String> = targets.iter().map(|(n, _)| n.clone()).collect();
        return Ok(fail(
            r,
            format!(
                "The following packages would be installed/updated: {}",
                summary.join(", ")
            ),
        ));
    }
    let pkgs: Vec<Value> = targets
        .iter()
        .map(|(n, v)| match v {
            Some(v) => map(vec![(n.as_str(), Value::from(v.clone()))]),
            None => Value::from(n.clone()),
        })
        .collect();
    let mut kw: Vec<(String, Value)> = kwargs(low)
        .into_iter()
        .filter(|(k, _)| !["name", "pkgs", "version", "refresh", "hold"].contains(&k.as_str()))
        .collect();
    kw.push(("pkgs".into(), Value::Array(pkgs)));
    let changes = match ex::install(&exctx(ctx), &Args::new("pkg.install", &[], &kw)) {
        Ok(c) => c,
        Err(e) => {
            // Salt's error return: {name, result, changes, comment}.
            crate::pop(&mut r, "comment");
            let ch = crate::pop(&mut r, "changes").unwrap_or_else(empty);
            set(&mut r, "changes", ch);
            return Ok(fail(r, install_error(e)));
        }
    };
    let names: Vec<String> = want.iter().map(|(n, _)| n.clone()).collect();
    let holds = pkg_hold::installed_hold(low, &names, false)?.unwrap_or_default();
    let mut changes = changes;
    let new = ex::list(&exctx(ctx))?;
    let mut modified = Vec::new();
    let mut not_modified = Vec::new();
    let mut failed = Vec::new();
    for (n, v) in &want {
        let ok = has_version(&new, n, v.as_deref());
        let targeted = targets.iter().any(|(t, _)| t == n);
        match (ok, targeted) {
            (true, true) => modified.push(desired_str(n, v)),
            (true, false) => not_modified.push(desired_str(n, v)),
            (false, true) => failed.push(desired_str(n, v)),
            (false, false) => {}
        }
    }
    let mut comment = Vec::new();
    if !modified.is_empty() {
        let summary = modified.join(", ");
        if summary.len() < 20 {
            comment.push(format!(
                "The following packages were installed/updated: {summary}"
            ));
        } else {
            let n = modified.len();
            comment.push(format!(
                "{n} targeted package{} {} installed/updated.",
                if n > 1 { "s" } else { "" },
                if n > 1 { "were" } else { "was" }
            ));
        }
    }
    pkg_hold::merge_modified(&mut changes, &mut comment, &holds);
    if !not_modified.is_empty() {
        comment.push(format!(
            "The following packages were already installed: {}",
            not_modified.join(", ")
        ));
    }
    let holds_ok = pkg_hold::rest_comments(&holds, &mut comment);
    if !failed.is_empty() {
        comment.insert(
            0,
            format!(
                "The following packages failed to install/update: {}",
                failed.join(", ")
            ),
        );
    }
    set(&mut r, "changes", changes);
    set(
        &mut r,
        "result",
        Value::Boolean(failed.is_empty() && holds_ok),
    );
    Ok(fail(r, comment.join("\n")))
}

fn latest(ctx: &Ctx<'_>, low: &Value) -> Result<Value, String> {
    let mut r = base_ret(low);
    for k in ["sources", "watch_flags", "resolve_capabilities"] {
        if map_get(low, k).is_some_and(truthy) {
            return Ok(fail(
                r,
                format!("pkg.latest option '{k}' is not supported by salt-rs"),
            ));
        }
    }
    let names: Vec<String> = desired(low)?.into_iter().map(|(n, _)| n).collect();
    let from_pkgs = map_get(low, "pkgs").is_some();
    if names.is_empty() {
        return Ok(fail(r, "No packages to install provided".into()));
    }
    let do_refresh = check_refresh(low);
    if do_refresh {
        RTAG.store(false, Ordering::SeqCst);
    }
    let avail = match ex::latest(&exctx(ctx), &names, do_refresh) {
        Ok(a) => a,
        Err(e) => {
            return Ok(fail(
                r,
                format!(
                    "An error was encountered while checking the newest available version of package(s): {e}"
                ),
            ));
        }
    };
    let cur = ex::list(&exctx(ctx))?;
    let cur_of = |n: &str| {
        cur.iter()
            .filter(|(k, _)| k == n)
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut targets: Vec<(String, String)> = Vec::new();
    let mut problems = Vec::new();
    for (n, a) in &avail {
        if a.is_empty() {
            if cur_of(n).is_empty() {
                problems.push(format!("No information found for '{n}'."));
            }
        } else {
            targets.push((n.clone(), a.clone()));
        }
    }
    if !problems.is_empty() {
        return Ok(fail(r, problems.join(" ")));
    }
    if targets.is_empty() {
        set(&mut r, "result", Value::Boolean(true));
        let c = if names.len() > 10 {
            format!("All {} packages are up-to-date.", names.len())
        } else if names.len() > 1 {
            let mut s = names.clone();
            s.sort();
            format!("All packages are up-to-date ({}).", s.join(", "))
        } else {
            format!("Package {} is already up-to-date", names[0])
        };
        return Ok(fail(r, c));
    }
    targets.sort();
    let mut up_to_date: Vec<String> = if from_pkgs {
        names
            .iter()
            .filter(|n| !targets.iter().any(|(t, _)| t == *n))
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    up_to_date.sort();
    let tnames: Vec<String> = targets.iter().map(|(n, _)| n.clone()).collect();
    if ctx.opts.test {
        let mut c = vec![format!(
            "The following packages would be installed/upgraded: {}",
            tnames.join(", ")
        )];
        if !up_to_date.is_empty() {
            if up_to_date.len() <= 10 {
                let l: Vec<String> = up_to_date
                    .iter()
                    .map(|x| format!("{x} ({})", cur_of(x)))
                    .collect();
                c.push(format!(
                    "The following packages are already up-to-date: {}",
                    l.join(", ")
                ));
            } else {
                c.push(format!(
                    "{} packages are already up-to-date",
                    up_to_date.len()
                ));
            }
        }
        let changes = map(targets
            .iter()
            .map(|(n, v)| (n.as_str(), new_old(Value::from(v.clone()), &cur_of(n))))
            .collect());
        set(&mut r, "changes", changes);
        set(&mut r, "result", Value::Nil);
        return Ok(fail(r, c.join("\n")));
    }
    let mut kw: Vec<(String, Value)> = kwargs(low)
        .into_iter()
        .filter(|(k, _)| !["name", "pkgs", "version", "refresh"].contains(&k.as_str()))
        .collect();
    kw.push((
        "pkgs".into(),
        Value::Array(tnames.iter().cloned().map(Value::from).collect()),
    ));
    let changes = match ex::install(&exctx(ctx), &Args::new("pkg.install", &[], &kw)) {
        Ok(c) => c,
        Err(e) => {
            return Ok(fail(r, install_error(e)));
        }
    };
    let new_of = |n: &str| {
        map_get(&changes, n)
            .and_then(|c| map_get(c, "new"))
            .map(salt_compat::py_str)
    };
    let failed: Vec<String> = targets
        .iter()
        .filter(|(n, v)| new_of(n).is_none_or(|nv| !nv.split(',').any(|x| x == v)))
        .map(|(n, _)| n.clone())
        .collect();
    let ok: Vec<String> = tnames
        .iter()
        .filter(|n| !failed.contains(n))
        .cloned()
        .collect();
    let mut c = Vec::new();
    if !failed.is_empty() {
        c.push(format!(
            "The following packages failed to update: {}",
            failed.join(", ")
        ));
    }
    if !ok.is_empty() {
        c.push(format!(
            "The following packages were successfully installed/upgraded: {}",
            ok.join(", ")
        ));
    }
    if !up_to_date.is_empty() {
        c.push(format!(
            "The following packages were already up-to-date: {}",
            up_to_date.join(", ")
        ));
    }
    set(&mut r, "changes", changes);
    set(&mut r, "result", Value::Boolean(failed.is_empty()));
    Ok(fail(r, c.join(" ")))
}

fn uninstall(ctx: &Ctx<'_>, low: &Value, action: &str) -> Result<Value, String> {
    let mut r = base_ret(low);
    let params: Vec<String> = desired(low)?.into_iter().map(|(n, _)| n).collect();
    let (inst, rem) = ex::dpkg_lists(&exctx(ctx))?;
    let mut targets: Vec<String> = params
        .iter()
        .filter(|p| inst.iter().any(|(n, _)| n == *p))
        .cloned()
        .collect();
    if targets.is_empty() && action == "remove" {
        set(&mut r, "result", Value::Boolean(true));
        return Ok(fail(r, "All specified packages are already absent".into()));
    }
    if action == "purge" {
        targets.extend(
            params
                .iter()
                .filter(|p| rem.iter().any(|(n, _)| n == *p))
                .cloned(),
        );
    }
    targets.sort();
    if targets.is_empty() {
        set(&mut r, "result", Value::Boolean(true));
        return Ok(fail(
            r,
            "None of the targeted packages are installed or partially installed".into(),
        ));
    }
    if ctx.opts.test {
        let ch = map(targets
            .iter()
            .map(|t| {
                (
                    t.as_str(),
                    map(vec![
                        ("new", Value::from(format!("{action}d"))),
                        ("old", Value::from("")),
                    ]),
                )
            })
            .collect());
        set(&mut r, "changes", ch);
        set(&mut r, "result", Value::Nil);
        return Ok(fail(
            r,
            format!(
                "The following packages will be {action}d: {}.",
                targets.join(", ")
            ),
        ));
    }
    let kw: Vec<(String, Value)> = kwargs(low)
        .into_iter()
        .filter(|(k, _)| k != "refresh")
        .collect();
    let changes = match ex::uninstall(&exctx(ctx), &Args::new("pkg.remove", &[], &kw), action) {
        Ok(c) => c,
        Err(e) => {
            let verb = if action == "purge" {
                "purging"
            } else {
                "removing"
            };
            return Ok(fail(
                r,
                format!("An error was encountered while {verb} package(s): {e}"),
            ));
        }
    };
    let (ninst, nrem) = ex::dpkg_lists(&exctx(ctx))?;
    let mut failed: Vec<String> = params
        .iter()
        .filter(|p| ninst.iter().any(|(n, _)| n == *p))
        .cloned()
        .collect();
    if action == "purge" {
        failed.extend(
            params
                .iter()
                .filter(|p| nrem.iter().any(|(n, _)| n == *p))
                .cloned(),
        );
    }
    failed.sort();
    set(&mut r, "changes", changes);
    if !failed.is_empty() {
        return Ok(fail(
            r,
            format!(
                "The following packages failed to {action}: {}.",
                failed.join(", ")
            ),
        ));
    }
    let mut not_installed: Vec<String> = params
        .iter()
        .filter(|p| !targets.contains(p))
        .cloned()
        .collect();
    not_installed.sort();
    let c = if not_installed.is_empty() {
        format!("All targeted packages were {action}d.")
    } else {
        format!(
            "The following packages were not installed: {} The following packages were {action}d: {}.",
            not_installed.join(", "),
            targets.join(", ")
        )
    };
    set(&mut r, "result", Value::Boolean(true));
    Ok(fail(r, c))
}

/// `refresh_db` ran (e.g. from `pkgrepo`): Salt's `clear_rtag`.
pub(crate) fn clear_rtag() {
    RTAG.store(false, Ordering::SeqCst);
}

/// A new state run: its first pkg state writes the rtag again (Salt's `mod_init`).
pub fn new_run() {
    INIT.store(false, Ordering::SeqCst);
}

/// The comment of a failed `pkg.install`: Salt's text of the error with its info, else
/// the error after "An error was encountered while installing package(s): ".
fn install_error(e: String) -> String {
    if e.starts_with(ex::INSTALL_PROBLEM) {
        e
    } else {
        format!("An error was encountered while installing package(s): {e}")
    }
}

/// Dispatch `pkg.<fun>`.
pub fn call(ctx: &Ctx<'_>, fun: &str, low: &Value) -> Value {
    // mod_init: the first pkg state of a run writes the rtag.
    if !INIT.swap(true, Ordering::SeqCst) {
        RTAG.store(true, Ordering::SeqCst);
    }
    let out = match fun {
        "installed" => installed(ctx, low),
        "latest" => latest(ctx, low),
        "removed" => uninstall(ctx, low, "remove"),
        "purged" => uninstall(ctx, low, "purge"),
        other => Err(format!("'pkg.{other}' is not available.")),
    };
    out.unwrap_or_else(|e| {
        let mut r = base_ret(low);
        set(&mut r, "changes", empty());
        ret::comment(&mut r, e);
        let _ = name_of(low);
        r
    })
}
