//! `pkg.*` on Debian (`salt/modules/aptpkg.py`, `pkg_resource`): dpkg-query, apt-get,
//! apt-cache, as Salt runs them. Elsewhere every function refuses by name.

use rmpv::Value;

use crate::pkg_match;
use crate::run::{DPKG_ENV, Out, run, run_env, which};
use crate::{Args, Ctx, Ret, compare_dicts, map, text};
use salt_compat::map_get;

/// name -> version pairs, in dpkg-query order.
pub type PkgList = Vec<(String, String)>;

fn debian() -> Result<(), String> {
    if which("dpkg-query") && which("apt-get") {
        Ok(())
    } else {
        Err("pkg: salt-rs supports only Debian's dpkg/apt; dpkg-query/apt-get not found".into())
    }
}

/// `call_apt`: retry while the dpkg lock is held (as Salt, up to 10 times, bounded here).
fn call_apt(argv: &[&str], env: &[(&str, &str)]) -> Result<Out, String> {
    let mut out = run_env(argv, env, None)?;
    let mut n = 0;
    while out.stderr.contains("Could not get lock") && n < 5 {
        n += 1;
        std::thread::sleep(std::time::Duration::from_secs(1 << n));
        out = run_env(argv, env, None)?;
    }
    Ok(out)
}

/// `(installed, removed)` from dpkg-query (Salt's `list_pkgs` parsing).
pub fn dpkg_lists(ctx: &Ctx<'_>) -> Result<(PkgList, PkgList), String> {
    debian()?;
    let out = run(&[
        "dpkg-query",
        "--showformat",
        "${Status} ${Package} ${Version} ${Architecture}\n",
        "-W",
    ])?;
    let osarch = ctx
        .grains
        .is_map()
        .then(|| map_get(ctx.grains, "osarch").map(text))
        .flatten();
    let x86 = map_get(ctx.grains, "cpuarch").map(text).as_deref() == Some("x86_64");
    let (mut inst, mut rem) = (Vec::new(), Vec::new());
    for line in out.stdout.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() < 6 {
            continue;
        }
        let (linetype, status, ver, arch) = (cols[0], cols[2], cols[4], cols[5]);
        let mut name = cols[3].to_owned();
        if x86 && arch != "all" && osarch.as_deref() == Some("amd64") && arch != "amd64" {
            name = format!("{name}:{arch}");
        }
        if (linetype.contains("install") || linetype.contains("hold"))
            && status.contains("installed")
            && !linetype.contains("deinstall")
        {
            inst.push((name, ver.to_owned()));
        } else if linetype.contains("deinstall") {
            rem.push((name, ver.to_owned()));
        }
    }
    Ok((inst, rem))
}

/// `pkg.list_pkgs` as `(name, version)` pairs.
pub fn list(ctx: &Ctx<'_>) -> Result<PkgList, String> {
    dpkg_lists(ctx).map(|(i, _)| i)
}

fn to_map(l: &PkgList, as_list: bool) -> Value {
    let mut sorted = l.clone();
    sorted.sort();
    Value::Map(
        sorted
            .into_iter()
            .map(|(k, v)| {
                let v = if as_list {
                    Value::Array(vec![Value::from(v)])
                } else {
                    Value::from(v)
                };
                (Value::from(k), v)
            })
            .collect(),
    )
}

fn lookup(l: &PkgList, name: &str) -> String {
    l.iter()
        .filter(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// `pkg.version_cmp`: -1, 0 or 1 by `dpkg --compare-versions`.
pub fn version_cmp(a: &str, b: &str) -> Result<i64, String> {
    for (op, r) in [("lt", -1), ("eq", 0), ("gt", 1)] {
        if run(&["dpkg", "--compare-versions", a, op, b])?.retcode == 0 {
            return Ok(r);
        }
    }
    Err(format!("Unable to compare versions '{a}' and '{b}'"))
}

/// `pkg.refresh_db`: `apt-get -q update`, each source as True (Get), None (Hit), False.
pub fn refresh_db() -> Ret {
    debian()?;
    let out = call_apt(&["apt-get", "-q", "update"], &[])?;
    if out.retcode != 0 {
        return Err(out.stderr);
    }
    let re = regex::Regex::new(r" \[.+B\]$").map_err(|e| e.to_string())?;
    let mut ret: Vec<(String, Value)> = Vec::new();
    for line in out.stdout.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let Some(first) = cols.first() else { continue };
        let mut ident = cols[1..].join(" ");
        let v = if first.contains("Get") {
            ident = re.replace(&ident, "").into_owned();
            Value::Boolean(true)
        } else if first.contains("Ign") || first.contains("Err") {
            Value::Boolean(false)
        } else if first.contains("Hit") {
            Value::Nil
        } else {
            continue;
        };
        ret.retain(|(k, _)| *k != ident);
        ret.push((ident, v));
    }
    Ok(map(ret))
}

/// `pkg.latest_version` for `names`: the candidate when it is newer than what is
/// installed (or nothing is installed), else "".
pub fn latest(
    ctx: &Ctx<'_>,
    names: &[String],
    refresh: bool,
) -> Result<Vec<(String, String)>, String> {
    let pkgs = list(ctx)?;
    if refresh {
        refresh_db()?;
    }
    let mut argv = vec!["apt-cache", "-q", "policy"];
    argv.extend(names.iter().map(String::as_str));
    let out = call_apt(&argv, &[])?;
    let mut cands: Vec<(String, String)> = Vec::new();
    let mut this = String::new();
    for line in out.stdout.lines() {
        let line = line.trim();
        if line.ends_with(':') && !line.starts_with("Version table") {
            let n = &line[..line.len() - 1];
            if names.iter().any(|x| x == n) {
                this = n.to_owned();
            }
        } else if line.starts_with("Candidate") {
            let c = line.split_whitespace().last().unwrap_or("");
            let c = if c.eq_ignore_ascii_case("(none)") {
                ""
            } else {
                c
            };
            cands.push((this.clone(), c.to_owned()));
        }
    }
    let mut ret = Vec::new();
    for n in names {
        let cand = cands
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let inst = lookup(&pkgs, n);
        let v = if inst.is_empty() || cand.is_empty() {
            if inst.is_empty() { cand } else { String::new() }
        } else if version_cmp(&inst, &cand)? >= 0 {
            String::new()
        } else {
            cand
        };
        ret.push((n.clone(), v));
    }
    Ok(ret)
}

/// `pkg_resource.parse_targets`: `name`/`pkgs`/`version` -> `(name, version)`.
pub fn targets(a: &Args<'_>) -> Result<Vec<(String, Option<String>)>, String> {
    if let Some(Value::Array(items)) = a.kwarg("pkgs") {
        let mut out = Vec::new();
        for it in items {
            match it {
                Value::Map(m) => {
                    for (k, v) in m {
                        let v = (!v.is_nil()).then(|| text(v));
                        out.push((text(k), v));
                    }
                }
                other => out.push((text(other), None)),
            }
        }
        return Ok(out);
    }
    if a.kwarg("pkgs").is_some() {
        return Err("Invalid input: 'pkgs' must be a list".into());
    }
    match a.str(0, "name") {
        Some(n) => Ok(vec![(n, a.str(99, "version"))]),
        None => Ok(Vec::new()),
    }
}

/// `pkg.install`: `{name: {old, new}}` for what changed.
pub fn install(ctx: &Ctx<'_>, a: &Args<'_>) -> Ret {
    debian()?;
    a.refuse(&[
        "sources",
        "reinstall",
        "downloadonly",
        "hold",
        "env",
        "force_conf_new",
    ])?;
    let params = targets(a)?;
    if params.is_empty() {
        return Ok(Value::Map(vec![]));
    }
    let old = list(ctx)?;
    let mut argv: Vec<String> = [
        "apt-get",
        "-q",
        "-y",
        "-o",
        "DPkg::Options::=--force-confold",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    argv.extend(["-o".into(), "DPkg::Options::=--force-confdef".into()]);
    if let Some(v) = a.kwarg("install_recommends") {
        argv.push(
            if crate::is_true(v) {
                "--install-recommends"
            } else {
                "--no-install-recommends"
            }
            .into(),
        );
    }
    if a.flag("skip_verify", false) {
        argv.push("--allow-unauthenticated".into());
    }
    if let Some(r) = a.str(99, "fromrepo") {
        argv.extend(["-t".into(), r]);
    }
    argv.push("install".into());
    let (mut tgts, mut downgrade, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    for (n, v) in &params {
        let Some(v) = v else {
            tgts.push(n.clone());
            continue;
        };
        let mut ver = v.trim_start_matches('=').to_owned();
        if v.starts_with(['<', '>']) {
            let cands = pkg_match::repo_versions(n);
            match pkg_match::match_version(&ver, &cands) {
                Some(t) => ver = t.clone(),
                None => {
                    let avail = if cands.is_empty() {
                        "None".to_owned()
                    } else {
                        cands.join(", ")
                    };
                    errors.push(format!(
                        "No version matching '{n}{ver}' could be found (available: {avail})"
                    ));
                    continue;
                }
            }
        }
        let cver = lookup(&old, n);
        if cver.is_empty() || pkg_match::compare(&ver, ">=", &cver, false) {
            tgts.push(format!("{n}={ver}"));
        } else {
            downgrade.push(format!("{n}={ver}"));
        }
    }
    let mut cmds: Vec<Vec<String>> = Vec::new();
    if !tgts.is_empty() {
        cmds.push(argv.iter().cloned().chain(tgts.iter().cloned()).collect());
    }
    if !downgrade.is_empty() {
        // Downgrading requires --force-yes, before `install`.
        let mut cmd = argv.clone();
        cmd.insert(cmd.len() - 1, "--force-yes".into());
        cmd.extend(downgrade);
        cmds.push(cmd);
    }
    let mut changes = Value::Map(vec![]);
    if !cmds.is_empty() {
        if a.flag("refresh", false) {
            refresh_db()?;
        }
        let held: Vec<String> = crate::pkg_hold::get_selections(None)?
            .into_iter()
            .filter(|(s, _)| s == "hold")
            .flat_map(|(_, l)| l)
            .collect();
        let to_unhold: Vec<String> = held
            .into_iter()
            .filter(|h| tgts.iter().any(|t| t.split('=').next() == Some(h.as_str())))
            .collect();
        if !to_unhold.is_empty() {
            crate::pkg_hold::hold(&to_unhold, false, false)?;
        }
        for cmd in &cmds {
            let refs: Vec<&str> = cmd.iter().map(String::as_str).collect();
            let out = call_apt(&refs, DPKG_ENV)?;
            if out.retcode != 0 && !out.stderr.is_empty() {
                errors.push(out.stderr);
            }
        }
        let new = list(ctx)?;
        changes = compare_dicts(&old, &new);
        if !to_unhold.is_empty() {
            crate::pkg_hold::hold(&to_unhold, true, false)?;
        }
    }
    if !errors.is_empty() {
        return Err(with_info(INSTALL_PROBLEM, &errors));
    }
    Ok(changes)
}

/// The message of the `CommandExecutionError` `pkg.install` raises when apt fails.
pub const INSTALL_PROBLEM: &str = "Problem encountered installing package(s)";

/// A `CommandExecutionError` with `info={"errors": errors, ...}` as the pkg state shows it
/// (`strerror_without_changes`): the message, then the errors in Salt's nested layout.
fn with_info(msg: &str, errors: &[String]) -> String {
    let mut s = format!("{msg}. Additional info follows:\n\nerrors:");
    for e in errors {
        s.push_str("\n    - ");
        s.push_str(&e.replace('\n', "\n      "));
    }
    s
}

/// `pkg.remove`/`pkg.purge` (`_uninstall`).
pub fn uninstall(ctx: &Ctx<'_>, a: &Args<'_>, action: &str) -> Ret {
    let params = targets(a)?;
    let (old, old_rem) = dpkg_lists(ctx)?;
    let mut tgts: Vec<String> = params
        .iter()
        .filter(|(n, _)| old.iter().any(|(o, _)| o == n))
        .map(|(n, _)| n.clone())
        .collect();
    if action == "purge" {
        tgts.extend(
            params
                .iter()
                .filter(|(n, _)| old_rem.iter().any(|(o, _)| o == n))
                .map(|(n, _)| n.clone()),
        );
    }
    if tgts.is_empty() {
        return Ok(Value::Map(vec![]));
    }
    let mut argv = vec!["apt-get", "-q", "-y", action];
    argv.extend(tgts.iter().map(String::as_str));
    let out = call_apt(&argv, DPKG_ENV)?;
    let (new, new_rem) = dpkg_lists(ctx)?;
    let changes = compare_dicts(&old, &new);
    let ret = if action == "purge" {
        map(vec![
            ("removed", compare_dicts(&old_rem, &new_rem)),
            ("installed", changes),
        ])
    } else {
        changes
    };
    if out.retcode != 0 && !out.stderr.is_empty() {
        return Err(format!(
            "Problem encountered removing package(s): {}",
            out.stderr
        ));
    }
    Ok(ret)
}

/// Dispatch `pkg.<f>`.
pub fn call(f: &str, a: &Args<'_>, ctx: &Ctx<'_>) -> Ret {
    match f {
        "list_pkgs" => {
            let as_list = a.flag("versions_as_list", false);
            let (i, r) = dpkg_lists(ctx)?;
            Ok(to_map(
                if a.flag("removed", false) { &r } else { &i },
                as_list,
            ))
        }
        "version" => {
            let names = a.positional();
            if names.is_empty() {
                return Ok(Value::Map(vec![]));
            }
            let pkgs = list(ctx)?;
            if names.len() == 1 {
                return Ok(Value::from(lookup(&pkgs, &names[0])));
            }
            Ok(map(names
                .iter()
                .map(|n| (n.clone(), Value::from(lookup(&pkgs, n))))
                .collect()))
        }
        "latest_version" => {
            let names = a.positional();
            if names.is_empty() {
                return Ok(Value::from(""));
            }
            let r = latest(ctx, &names, a.flag("refresh", true))?;
            if r.len() == 1 {
                return Ok(Value::from(r[0].1.clone()));
            }
            Ok(map(r
                .into_iter()
                .map(|(k, v)| (k, Value::from(v)))
                .collect()))
        }
        "refresh_db" => refresh_db(),
        "install" => install(ctx, a),
        "remove" => uninstall(ctx, a, "remove"),
        "purge" => uninstall(ctx, a, "purge"),
        "version_cmp" => {
            let (x, y) = (a.req(0, "pkg1")?, a.req(1, "pkg2")?);
            version_cmp(&x, &y).map(Value::from)
        }
        _ => Err(format!("'pkg.{f}' is not available.")),
    }
}
