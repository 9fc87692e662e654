//! `file.managed`, `file.directory`, `file.absent`, `file.symlink` (`salt/states/file.py`).

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;

use rmpv::Value;

use super::ret::{self, fail};
use crate::engine::Ctx;
use crate::fileclient::{RenderLoader, parse_salt_url};
use crate::{empty, get_str, map, set, truthy};
use salt_compat::map_get;
use salt_compat::py_str;

const TEST_NOTE: &str =
    "\nNote: No changes made, actual changes may\nbe different due to other states.";

/// Dispatch `file.<fun>`.
pub fn call(ctx: &Ctx<'_>, fun: &str, low: &Value) -> Value {
    match fun {
        "managed" => managed(ctx, low),
        "directory" => directory(ctx, low),
        "absent" => super::file_link::absent(ctx, low),
        "symlink" => super::file_link::symlink(ctx, low),
        "append" => super::file_edit::append(ctx, low),
        "replace" => super::file_edit::replace(ctx, low),
        "touch" => super::file_edit::touch(ctx, low),
        "line" => super::file_edit::line(ctx, low),
        "recurse" => super::file_recurse::recurse(ctx, low),
        "blockreplace" => super::file_block::blockreplace(ctx, low),
        "comment" => super::file_block::comment_state(ctx, low),
        "uncomment" => super::file_block::uncomment_state(ctx, low),
        "serialize" => super::file_serialize::serialize_state(ctx, low),
        other => {
            let mut r = super::base_ret(low);
            ret::comment(&mut r, format!("'file.{other}' is not available."));
            r
        }
    }
}

/// A Salt mode (`644`, `'0640'`, 0o644 as an int read from YAML) as `0644`.
pub fn norm_mode(v: &Value) -> Option<u32> {
    let s = match v {
        Value::Nil => return None,
        Value::Integer(i) => i.as_i64()?.to_string(),
        other => py_str(other),
    };
    u32::from_str_radix(s.trim(), 8).ok()
}

/// `salt.utils.files.normalize_mode`: the mode as text, at least four digits (`'0644'`).
fn normalize_mode(v: &Value) -> Value {
    if matches!(v, Value::Nil) {
        return Value::Nil;
    }
    let s = py_str(v).replace("0o", "0");
    let s = s
        .trim_matches('"')
        .trim_matches('\'')
        .trim_start_matches('0');
    Value::from(format!("{s:0>4}"))
}

fn mode_str(m: u32) -> String {
    format!("{:04o}", m & 0o7777)
}

fn uid_of(user: &Value) -> Result<Option<u32>, String> {
    if matches!(user, Value::Nil) {
        return Ok(None);
    }
    let u = py_str(user);
    match nix::unistd::User::from_name(&u) {
        Ok(Some(pw)) => Ok(Some(pw.uid.as_raw())),
        _ => Err(format!("User {u} is not available")),
    }
}

fn gid_of(group: &Value) -> Result<Option<u32>, String> {
    if matches!(group, Value::Nil) {
        return Ok(None);
    }
    let g = py_str(group);
    match nix::unistd::Group::from_name(&g) {
        Ok(Some(gr)) => Ok(Some(gr.gid.as_raw())),
        _ => Err(format!("Group {g} is not available")),
    }
}

fn umask_default(base: u32) -> u32 {
    let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o022));
    nix::sys::stat::umask(old);
    base & !old.bits()
}

/// Python `difflib.unified_diff` text as Salt's `get_diff` prints it.
pub fn unified_diff(old: &str, new: &str) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = String::from("--- \n+++ \n");
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        out.push_str(&hunk.to_string());
    }
    out
}

fn write_atomic(path: &Path, data: &[u8], mode: u32) -> std::io::Result<()> {
    salt_pki::files::atomic_write(path, data, mode).map_err(std::io::Error::other)
}

fn managed_ret(name: &Value) -> Value {
    map(vec![
        ("changes", empty()),
        ("comment", Value::from("")),
        ("name", name.clone()),
        ("result", Value::Boolean(true)),
    ])
}

fn wanted_contents(ctx: &Ctx<'_>, low: &Value, name: &str) -> Result<Option<Vec<u8>>, String> {
    let saltenv = get_str(low, "__env__")
        .unwrap_or(&ctx.opts.saltenv)
        .to_owned();
    let mut chosen: Option<String> = None;
    let mut text: Vec<u8> = if let Some(c) = super::file_args::contents(ctx, low)? {
        c.into_bytes()
    } else if let Some(src) = map_get(low, "source") {
        let srcs: Vec<String> = match src {
            Value::Array(a) => a.iter().map(py_str).collect(),
            other => vec![py_str(other)],
        };
        let mut found = None;
        for s in &srcs {
            if super::file_http::is_web(s) {
                found = Some(super::file_http::fetch(s, low)?);
                chosen = Some(s.clone());
                break;
            }
            let Some((path, env)) = parse_salt_url(s, &saltenv) else {
                return Err(format!(
                    "file.managed source {s:?} is not supported by salt-rs (only salt:// and http:// sources)"
                ));
            };
            if let Some(b) = ctx.client.get_file(&path, &env)? {
                found = Some(b);
                chosen = Some(s.clone());
                break;
            }
        }
        match found {
            Some(b) => b,
            None => {
                return Err(format!(
                    "Source file {} not found in saltenv '{saltenv}'",
                    srcs.join(", ")
                ));
            }
        }
    } else {
        return Ok(None);
    };
    match get_str(low, "template") {
        None => {}
        Some("jinja") => {
            // `file.get_managed`: name, source, user, group, mode, attrs and saltenv, then
            // `defaults` updated with `context`; no `sls` (nor the variables made from it).
            let arg = |k: &str| map_get(low, k).cloned().unwrap_or(Value::Nil);
            let mut vars = map(vec![
                ("name", Value::from(name)),
                ("source", chosen.clone().map_or(Value::Nil, Value::from)),
                ("user", arg("user")),
                ("group", arg("group")),
                (
                    "mode",
                    map_get(low, "mode").map_or(Value::Nil, normalize_mode),
                ),
                ("attrs", arg("attrs")),
            ]);
            for (k, v) in super::file_args::template_kwargs(low) {
                set(&mut vars, &k, v);
            }
            if let Some(Value::Map(d)) = map_get(low, "defaults") {
                for (k, v) in d {
                    set(&mut vars, &py_str(k), v.clone());
                }
            }
            if let Some(Value::Map(c)) = map_get(low, "context") {
                for (k, v) in c {
                    set(&mut vars, &py_str(k), v.clone());
                }
            }
            let rctx = salt_render::Context {
                grains: ctx.opts.grains.clone(),
                pillar: ctx.opts.pillar.clone(),
                opts: ctx.opts.opts.clone(),
                saltenv: saltenv.clone(),
                sls: String::new(),
                tplfile: String::new(),
                id: ctx.opts.id.clone(),
                vars,
                salt: ctx.opts.salt.clone(),
            };
            let loader = Arc::new(RenderLoader(ctx.client.clone()));
            let src = String::from_utf8_lossy(&text).into_owned();
            text = salt_render::render_jinja_text(&src, &rctx, loader)
                .map_err(|e| format!("Unable to manage file: {e}"))?
                .into_bytes();
        }
        Some(other) => {
            return Err(format!(
                "file.managed template '{other}' is not supported by salt-rs (only jinja)"
            ));
        }
    }
    Ok(Some(text))
}

/// `makedirs` as Salt's `manage_file`: the missing directories are created and, when the
/// file has a `mode`, given that mode with the execute bit added to each nonzero digit.
fn make_parents(parent: &Path, mode: Option<u32>) -> std::io::Result<()> {
    let missing: Vec<&Path> = parent.ancestors().take_while(|p| !p.is_dir()).collect();
    fs::create_dir_all(parent)?;
    if let Some(m) = mode {
        let dir_mode = [6, 3, 0].iter().fold(0, |acc, shift| {
            let d = (m >> shift) & 7;
            acc | (if d != 0 { d | 1 } else { 0 }) << shift
        });
        for d in missing {
            fs::set_permissions(d, fs::Permissions::from_mode(dir_mode))?;
        }
    }
    Ok(())
}

pub(super) fn managed(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name_v = map_get(low, "name").cloned().unwrap_or(Value::Nil);
    let name = py_str(&name_v);
    let mut r = managed_ret(&name_v);
    if !name.starts_with('/') {
        return fail(r, format!("Specified file {name} is not an absolute path"));
    }
    let path = Path::new(&name);
    let want = match wanted_contents(ctx, low, &name) {
        Ok(w) => w,
        Err(e) => return fail(r, e),
    };
    let mode = map_get(low, "mode").and_then(norm_mode);
    let (uid, gid) = match (
        uid_of(map_get(low, "user").unwrap_or(&Value::Nil)),
        gid_of(map_get(low, "group").unwrap_or(&Value::Nil)),
    ) {
        (Ok(u), Ok(g)) => (u, g),
        (Err(e), _) | (_, Err(e)) => return fail(r, e),
    };
    let meta = fs::symlink_metadata(path).ok();
    if meta.as_ref().is_some_and(|m| m.is_dir()) {
        return fail(r, format!("Specified target {name} is a directory"));
    }
    let parent = path.parent().unwrap_or(Path::new("/"));
    let mut changes = empty();
    match &meta {
        None => {
            if !parent.is_dir() && !map_get(low, "makedirs").is_some_and(truthy) && !ctx.opts.test {
                return fail(r, "Parent directory not present".to_string());
            }
            if ctx.opts.test {
                set(&mut r, "result", Value::Nil);
                set(
                    &mut r,
                    "changes",
                    map(vec![("newfile", Value::from(name.as_str()))]),
                );
                ret::comment(
                    &mut r,
                    format!("The file {name} is set to be changed{TEST_NOTE}"),
                );
                return r;
            }
            if !parent.is_dir()
                && let Err(e) = make_parents(parent, mode)
            {
                return fail(
                    r,
                    format!("Unable to create directory {}: {e}", parent.display()),
                );
            }
            let m = mode.unwrap_or_else(|| umask_default(0o666));
            if let Err(e) = write_atomic(path, want.as_deref().unwrap_or(b""), m) {
                return fail(r, format!("Unable to manage file: {e}"));
            }
            if (uid.is_some() || gid.is_some())
                && let Err(e) = std::os::unix::fs::lchown(path, uid, gid)
            {
                return fail(r, format!("Failed to change ownership of {name}: {e}"));
            }
            set(&mut changes, "diff", Value::from("New file"));
            // Salt reports the mode of a new file from a `source` (the cached copy's mode)
            // always; from `contents` (written to a 0600 temp file first) only when a mode
            // other than 0600 was asked for.
            if map_get(low, "source").is_some() || mode.is_some_and(|m| m != 0o600) {
                set(&mut changes, "mode", Value::from(mode_str(m)));
            }
        }
        Some(m) => {
            let cur = fs::read(path).unwrap_or_default();
            let content_changed = want.as_ref().is_some_and(|w| *w != cur);
            if content_changed {
                let old = String::from_utf8_lossy(&cur);
                let new = String::from_utf8_lossy(want.as_deref().unwrap_or(b""));
                set(&mut changes, "diff", Value::from(unified_diff(&old, &new)));
            }
            if uid.is_some_and(|u| u != m.uid()) {
                set(
                    &mut changes,
                    "user",
                    map_get(low, "user").cloned().unwrap_or(Value::Nil),
                );
            }
            if gid.is_some_and(|g| g != m.gid()) {
                set(
                    &mut changes,
                    "group",
                    map_get(low, "group").cloned().unwrap_or(Value::Nil),
                );
            }
            if mode.is_some_and(|md| md != m.mode() & 0o7777) {
                set(
                    &mut changes,
                    "mode",
                    Value::from(mode_str(mode.unwrap_or(0))),
                );
            }
            if ctx.opts.test {
                if truthy(&changes) {
                    set(&mut r, "result", Value::Nil);
                    set(&mut r, "changes", changes);
                    ret::comment(
                        &mut r,
                        format!("The file {name} is set to be changed{TEST_NOTE}"),
                    );
                } else {
                    ret::comment(&mut r, format!("The file {name} is in the correct state"));
                }
                return r;
            }
            if content_changed {
                let md = mode.unwrap_or(m.mode() & 0o7777);
                if let Err(e) = write_atomic(path, want.as_deref().unwrap_or(b""), md) {
                    return fail(r, format!("Unable to manage file: {e}"));
                }
                let _ = std::os::unix::fs::lchown(path, Some(m.uid()), Some(m.gid()));
            } else if let Some(md) = mode
                && let Err(e) = fs::set_permissions(path, fs::Permissions::from_mode(md))
            {
                return fail(r, format!("Failed to change mode of {name}: {e}"));
            }
            if (uid.is_some() || gid.is_some())
                && let Err(e) = std::os::unix::fs::lchown(path, uid, gid)
            {
                return fail(r, format!("Failed to change ownership of {name}: {e}"));
            }
        }
    }
    if truthy(&changes) {
        ret::comment(&mut r, format!("File {name} updated"));
        set(&mut r, "changes", changes);
    } else {
        ret::comment(&mut r, format!("File {name} is in the correct state"));
    }
    r
}

fn directory(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name_v = map_get(low, "name").cloned().unwrap_or(Value::Nil);
    let name = py_str(&name_v).trim_end_matches('/').to_owned();
    let name = if name.is_empty() {
        "/".to_owned()
    } else {
        name
    };
    let mut r = map(vec![
        ("name", name_v.clone()),
        ("changes", empty()),
        ("result", Value::Boolean(true)),
        ("comment", Value::from("")),
    ]);
    // Given at Salt's default value an option is the same as not given; any other value
    // is refused by name.
    for (unsupported, default) in [
        ("recurse", None),
        ("clean", Some(false)),
        ("require_empty", Some(false)),
        ("exclude_pat", None),
        ("max_depth", None),
        ("backupname", None),
        ("force", Some(false)),
        ("allow_symlink", Some(true)),
        ("children_only", Some(false)),
        ("file_mode", None),
        ("follow_symlinks", Some(false)),
    ] {
        let Some(v) = map_get(low, unsupported) else {
            continue;
        };
        let at_default = match (default, v) {
            (_, Value::Nil) => true,
            (Some(d), Value::Boolean(b)) => *b == d,
            _ => false,
        };
        if !at_default {
            return fail(
                r,
                format!("file.directory option '{unsupported}' is not supported by salt-rs"),
            );
        }
    }
    if !name.starts_with('/') {
        return fail(r, format!("Specified file {name} is not an absolute path"));
    }
    let path = Path::new(&name);
    let mode = map_get(low, "dir_mode")
        .or(map_get(low, "mode"))
        .and_then(norm_mode);
    let (uid, gid) = match (
        uid_of(map_get(low, "user").unwrap_or(&Value::Nil)),
        gid_of(map_get(low, "group").unwrap_or(&Value::Nil)),
    ) {
        (Ok(u), Ok(g)) => (u, g),
        (Err(e), _) | (_, Err(e)) => return fail(r, e),
    };
    if path.exists() && !path.is_dir() {
        return fail(r, format!("Specified location {name} exists and is a file"));
    }
    let mut tchanges = empty();
    match fs::metadata(path) {
        Err(_) => set(
            &mut tchanges,
            &name,
            map(vec![("directory", Value::from("new"))]),
        ),
        Ok(m) => {
            let mut c = empty();
            if uid.is_some_and(|u| u != m.uid()) {
                set(
                    &mut c,
                    "user",
                    map_get(low, "user").cloned().unwrap_or(Value::Nil),
                );
            }
            if gid.is_some_and(|g| g != m.gid()) {
                set(
                    &mut c,
                    "group",
                    map_get(low, "group").cloned().unwrap_or(Value::Nil),
                );
            }
            if mode.is_some_and(|md| md != m.mode() & 0o7777) {
                set(&mut c, "mode", Value::from(mode_str(mode.unwrap_or(0))));
            }
            if truthy(&c) {
                set(&mut tchanges, &name, c);
            }
        }
    }
    if ctx.opts.test {
        if truthy(&tchanges) {
            let mut comment = String::from("The following files will be changed:\n");
            if let Value::Map(entries) = &tchanges {
                for (p, ch) in entries {
                    if let Value::Map(kv) = ch {
                        for (k, v) in kv {
                            comment.push_str(&format!(
                                "{}: {} - {}\n",
                                py_str(p),
                                py_str(k),
                                py_str(v)
                            ));
                        }
                    }
                }
            }
            set(&mut r, "result", Value::Nil);
            ret::comment(&mut r, comment);
            set(&mut r, "changes", tchanges);
        } else {
            ret::comment(
                &mut r,
                format!("The directory {name} is in the correct state"),
            );
        }
        return r;
    }
    if !truthy(&tchanges) {
        ret::comment(
            &mut r,
            format!("The directory {name} is in the correct state"),
        );
        return r;
    }
    let mut changes = empty();
    if !path.is_dir() {
        let parent = path.parent().unwrap_or(Path::new("/"));
        if !parent.is_dir() {
            if !map_get(low, "makedirs").is_some_and(truthy) {
                return fail(r, format!("No directory to create {name} in"));
            }
            if let Err(e) = fs::create_dir_all(parent) {
                return fail(r, format!("{e}"));
            }
        }
        if let Err(e) = fs::create_dir(path) {
            return fail(r, format!("Failed to create directory {name}: {e}"));
        }
        set(
            &mut changes,
            &name,
            map(vec![("directory", Value::from("new"))]),
        );
    }
    if let Some(md) = mode {
        let cur = fs::metadata(path).map(|m| m.mode() & 0o7777).unwrap_or(0);
        if cur != md {
            if let Err(e) = fs::set_permissions(path, fs::Permissions::from_mode(md)) {
                return fail(r, format!("Failed to change mode of {name}: {e}"));
            }
            if map_get(&changes, &name).is_none() {
                set(
                    &mut changes,
                    &name,
                    map(vec![("mode", Value::from(mode_str(md)))]),
                );
            }
        }
    }
    if (uid.is_some() || gid.is_some())
        && let Err(e) = std::os::unix::fs::chown(path, uid, gid)
    {
        return fail(r, format!("Failed to change ownership of {name}: {e}"));
    }
    let new_dir = map_get(&tchanges, &name)
        .and_then(|c| map_get(c, "directory"))
        .is_some();
    if !new_dir && truthy(&changes) {
        ret::comment(&mut r, format!("Directory {name} updated"));
    }
    set(&mut r, "changes", changes);
    r
}
