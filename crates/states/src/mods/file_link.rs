//! `file.absent` and `file.symlink` (`salt/states/file.py`).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rmpv::Value;

use super::ret::{self, comment, fail};
use crate::engine::Ctx;
use crate::{get_str, map, set, truthy};
use salt_compat::map_get;
use salt_compat::py_str;

pub(crate) fn absent(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name_v = map_get(low, "name").cloned().unwrap_or(Value::Nil);
    let name = py_str(&name_v);
    let mut r = ret::new(name_v, true, "");
    if !name.starts_with('/') {
        return fail(r, format!("Specified file {name} is not an absolute path"));
    }
    if name == "/" {
        return fail(r, "Refusing to make \"/\" absent".to_owned());
    }
    let path = Path::new(&name);
    let Ok(meta) = fs::symlink_metadata(path) else {
        comment(&mut r, format!("File {name} is not present"));
        return r;
    };
    let is_dir = meta.is_dir();
    let removed = map(vec![("removed", Value::from(name.as_str()))]);
    if ctx.opts.test {
        let what = if is_dir { "Directory" } else { "File" };
        return ret::changed(
            r,
            true,
            removed,
            format!("{what} {name} is set for removal"),
        );
    }
    let res = if is_dir {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    match res {
        Ok(()) => {
            let what = if is_dir { "directory" } else { "file" };
            ret::changed(r, false, removed, format!("Removed {what} {name}"))
        }
        Err(e) => fail(r, format!("{e}")),
    }
}

fn owner_names(m: &fs::Metadata) -> (String, String) {
    let u = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(m.uid()))
        .ok()
        .flatten()
        .map_or_else(|| m.uid().to_string(), |u| u.name);
    let g = nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(m.gid()))
        .ok()
        .flatten()
        .map_or_else(|| m.gid().to_string(), |g| g.name);
    (u, g)
}

pub(crate) fn symlink(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name_v = map_get(low, "name").cloned().unwrap_or(Value::Nil);
    let name = py_str(&name_v);
    let mut r = ret::new(name_v, true, "");
    let force = map_get(low, "force").is_some_and(truthy);
    for unsupported in [
        "backupname",
        "user",
        "group",
        "mode",
        "win_owner",
        "atomic",
        "disallow_copy_and_unlink",
        "inherit_user_and_group",
        "follow_symlinks",
    ] {
        if map_get(low, unsupported).is_some() {
            return fail(
                r,
                format!("file.symlink option '{unsupported}' is not supported by salt-rs"),
            );
        }
    }
    let Some(target) = get_str(low, "target").map(str::to_owned) else {
        return fail(r, "file.symlink needs a 'target'".to_owned());
    };
    if !name.starts_with('/') {
        return fail(r, format!("Specified file {name} is not an absolute path"));
    }
    let path = Path::new(&name);
    let cur = fs::read_link(path).ok();
    let present = cur.as_deref() == Some(Path::new(&target));
    // Something that is not a symlink stands in the way: Salt removes it with `force`.
    let in_way = cur.is_none() && fs::symlink_metadata(path).is_ok();
    if in_way && path.is_dir() && force {
        return fail(
            r,
            format!(
                "file.symlink option 'force' over the directory {name} is not supported by salt-rs"
            ),
        );
    }
    if ctx.opts.test && in_way {
        if force {
            set(&mut r, "result", Value::Nil);
            comment(
                &mut r,
                format!(
                    "The file or directory {name} is set for removal to make way for a new symlink targeting {target}"
                ),
            );
            return r;
        }
        return fail(
            r,
            format!(
                "File or directory exists where the symlink {name} should be. Did you mean to use force?"
            ),
        );
    }
    if ctx.opts.test {
        if present {
            comment(&mut r, format!("The symlink {name} is present"));
        } else {
            set(&mut r, "result", Value::Nil);
            if cur.is_some() {
                set(
                    &mut r,
                    "changes",
                    map(vec![("change", Value::from(name.as_str()))]),
                );
                comment(
                    &mut r,
                    format!("Symlink {name} target is set to be changed to {target}"),
                );
            } else {
                set(
                    &mut r,
                    "changes",
                    map(vec![("new", Value::from(name.as_str()))]),
                );
                comment(
                    &mut r,
                    format!("Symlink {name} to {target} is set for creation"),
                );
            }
        }
        return r;
    }
    if present {
        let (u, g) = fs::symlink_metadata(path)
            .map(|m| owner_names(&m))
            .unwrap_or_default();
        comment(
            &mut r,
            format!("Symlink {name} is present and owned by {u}:{g}"),
        );
        return r;
    }
    if in_way {
        if !force {
            let what = if path.is_file() {
                "File"
            } else {
                "File system entry"
            };
            return fail(
                r,
                format!("{what} exists where the symlink {name} should be"),
            );
        }
        if let Err(e) = fs::remove_file(path) {
            return fail(
                r,
                format!("Unable to create new symlink {name} -> {target}: {e}"),
            );
        }
    }
    let parent = path.parent().unwrap_or(Path::new("/"));
    if !parent.is_dir() {
        if !map_get(low, "makedirs").is_some_and(truthy) {
            return fail(
                r,
                format!("Directory {} for symlink is not present", parent.display()),
            );
        }
        if let Err(e) = fs::create_dir_all(parent) {
            return fail(r, format!("{e}"));
        }
    }
    if cur.is_some()
        && let Err(e) = fs::remove_file(path)
    {
        return fail(r, format!("{e}"));
    }
    match std::os::unix::fs::symlink(&target, path) {
        Ok(()) => {
            if cur.is_some() {
                set(
                    &mut r,
                    "changes",
                    map(vec![("new", Value::from(name.as_str()))]),
                );
                comment(&mut r, format!("Set symlink {name} to {target}"));
            } else {
                set(
                    &mut r,
                    "changes",
                    map(vec![("new", Value::from(name.as_str()))]),
                );
                comment(&mut r, format!("Created new symlink {name} -> {target}"));
            }
            r
        }
        Err(e) => fail(
            r,
            format!("Unable to create new symlink {name} -> {target}: {e}"),
        ),
    }
}
