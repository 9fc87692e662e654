//! `file.*` (`salt/modules/file.py`): the everyday functions, same returns as Salt.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use rmpv::Value;

use crate::{Args, Ret, map, text};

/// `file.get_hash`: hex digest with `md5`, `sha1`, `sha256` (default) or `sha512`.
pub fn get_hash(path: &str, form: &str) -> Result<String, String> {
    let data = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    digest(&data, form)
}

/// Hex digest of `data` with `md5`, `sha1`, `sha224`, `sha256`, `sha384` or `sha512`.
pub fn digest(data: &[u8], form: &str) -> Result<String, String> {
    use sha2::Digest;
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    Ok(match form {
        "md5" => hex(&md5::Md5::digest(data)),
        "sha1" => hex(&sha1::Sha1::digest(data)),
        "sha256" => hex(&sha2::Sha256::digest(data)),
        "sha224" => hex(&sha2::Sha224::digest(data)),
        "sha384" => hex(&sha2::Sha384::digest(data)),
        "sha512" => hex(&sha2::Sha512::digest(data)),
        other => return Err(format!("Invalid hash type '{other}'")),
    })
}

/// Salt's mode text: `0644`.
pub fn mode_of(path: &str) -> Option<String> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| format!("{:04o}", m.permissions().mode() & 0o7777))
}

fn expand(path: String) -> String {
    match path.strip_prefix("~/") {
        Some(rest) => format!("{}/{rest}", std::env::var("HOME").unwrap_or_default()),
        None => path,
    }
}

fn lines_of(a: &Args<'_>) -> Vec<String> {
    let mut out: Vec<String> = a.positional().into_iter().skip(1).collect();
    if let Some(v) = a.kwarg("args") {
        match v {
            Value::Array(items) => out.extend(items.iter().map(text)),
            other => out.push(text(other)),
        }
    }
    out
}

/// `file.symlink(src, path)` without `force`/`atomic` (refused): Salt's checks and words.
fn symlink(src: &str, link: &str) -> Ret {
    let l = Path::new(link);
    if !l.is_absolute() {
        return Err(format!("Link path must be absolute: {link}"));
    }
    if l.is_symlink() {
        let norm = |s: &str| salt_compat::posixpath::normpath(s);
        if std::fs::read_link(l).is_ok_and(|t| norm(&t.display().to_string()) == norm(src)) {
            return Ok(Value::Boolean(true));
        }
        return Err(format!("Found existing symlink: {link}"));
    }
    if l.exists() {
        return Err(format!("Existing path is not a symlink: {link}"));
    }
    std::os::unix::fs::symlink(src, l).map_err(|_| format!("Could not create '{link}'"))?;
    Ok(Value::Boolean(true))
}

/// `file.append`: add lines (each with a newline) at the end, after a newline if the
/// file does not end with one.
pub fn append(path: &str, lines: &[String]) -> Ret {
    let mut body = std::fs::read(path).unwrap_or_default();
    if !body.is_empty() && !body.ends_with(b"\n") {
        body.push(b'\n');
    }
    for l in lines {
        body.extend_from_slice(l.as_bytes());
        body.push(b'\n');
    }
    std::fs::write(path, body).map_err(|e| format!("{path}: {e}"))?;
    Ok(Value::from(format!(
        "Wrote {} lines to \"{path}\"",
        lines.len()
    )))
}

/// Dispatch `file.<f>`.
pub fn call(f: &str, a: &Args<'_>) -> Ret {
    // Salt names the first parameter `name` in touch, `dir_path` in mkdir, `src` in symlink.
    let first = match f {
        "touch" => "name",
        "mkdir" => "dir_path",
        "symlink" => "src",
        _ => "path",
    };
    let path = expand(a.req(0, first)?);
    let p = Path::new(&path);
    match f {
        "file_exists" => Ok(Value::Boolean(p.is_file())),
        "directory_exists" => Ok(Value::Boolean(p.is_dir())),
        "get_hash" => {
            get_hash(&path, &a.str(1, "form").unwrap_or_else(|| "sha256".into())).map(Value::from)
        }
        "get_mode" => {
            // `stats(path, follow_symlinks)["mode"]`: a broken symlink's own mode.
            let follow = a.get(1, "follow_symlinks").is_none_or(crate::is_true);
            let m = if follow {
                std::fs::metadata(p).or_else(|_| std::fs::symlink_metadata(p))
            } else {
                std::fs::symlink_metadata(p)
            };
            let m = m.map_err(|_| format!("Path not found: {path}"))?;
            Ok(Value::from(format!(
                "{:04o}",
                m.permissions().mode() & 0o7777
            )))
        }
        "set_mode" => {
            let mode = a.req(1, "mode")?;
            let m =
                u32::from_str_radix(&mode, 8).map_err(|_| format!("{mode} is not a valid mode"))?;
            if !p.exists() {
                return Err(format!("{path}: File not found"));
            }
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m))
                .map_err(|e| e.to_string())?;
            Ok(Value::from(mode_of(&path).unwrap_or_default()))
        }
        "contains" => {
            let t = a.req(1, "text")?;
            Ok(Value::Boolean(
                std::fs::read_to_string(p)
                    .map(|s| s.contains(&t))
                    .unwrap_or(false),
            ))
        }
        "search" => {
            let pat = a.req(1, "pattern")?;
            let re = regex::Regex::new(&pat).map_err(|e| e.to_string())?;
            let body = std::fs::read_to_string(p).map_err(|e| format!("{path}: {e}"))?;
            Ok(Value::Boolean(re.is_match(&body)))
        }
        "touch" => {
            if !p.exists() {
                std::fs::write(p, b"").map_err(|e| e.to_string())?;
            } else {
                let now = nix::sys::time::TimeSpec::new(0, nix::libc::UTIME_NOW);
                nix::sys::stat::utimensat(
                    None,
                    p,
                    &now,
                    &now,
                    nix::sys::stat::UtimensatFlags::FollowSymlink,
                )
                .map_err(|e| e.to_string())?;
            }
            Ok(Value::Boolean(true))
        }
        "remove" => {
            let m = match std::fs::symlink_metadata(p) {
                Ok(m) => m,
                Err(_) => return Ok(Value::Boolean(false)),
            };
            let r = if m.is_dir() {
                std::fs::remove_dir_all(p)
            } else {
                std::fs::remove_file(p)
            };
            r.map_err(|e| format!("Could not remove '{path}': {e}"))?;
            Ok(Value::Boolean(true))
        }
        "mkdir" => {
            std::fs::create_dir_all(p).map_err(|e| e.to_string())?;
            if let Some(m) = a.str(3, "mode") {
                let m =
                    u32::from_str_radix(&m, 8).map_err(|_| format!("{m} is not a valid mode"))?;
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(m))
                    .map_err(|e| e.to_string())?;
            }
            Ok(Value::Boolean(true))
        }
        "readlink" => std::fs::read_link(p)
            .map(|t| Value::from(t.display().to_string()))
            .map_err(|_| "A valid link was not specified.".to_owned()),
        "symlink" => symlink(&path, &expand(a.req(1, "path")?)),
        "chown" => {
            let user = a.req(1, "user")?;
            let group = a.req(2, "group")?;
            let uid = nix::unistd::User::from_name(&user)
                .ok()
                .flatten()
                .map(|u| u.uid);
            let gid = nix::unistd::Group::from_name(&group)
                .ok()
                .flatten()
                .map(|g| g.gid);
            if uid.is_none() {
                return Err(format!("User does not exist: {user}"));
            }
            if gid.is_none() {
                return Err(format!("Group does not exist: {group}"));
            }
            nix::unistd::chown(p, uid, gid).map_err(|e| e.to_string())?;
            Ok(Value::Nil)
        }
        "stats" => {
            use std::os::unix::fs::MetadataExt;
            let m = std::fs::metadata(p).map_err(|_| format!("{path}: File not found"))?;
            let name = |id: u32, user: bool| {
                if user {
                    nix::unistd::User::from_uid(id.into())
                        .ok()
                        .flatten()
                        .map(|u| u.name)
                } else {
                    nix::unistd::Group::from_gid(id.into())
                        .ok()
                        .flatten()
                        .map(|g| g.name)
                }
                .unwrap_or_default()
            };
            let kind = if m.is_dir() {
                "dir"
            } else if m.is_file() {
                "file"
            } else {
                "other"
            };
            Ok(map(vec![
                ("inode", Value::from(m.ino())),
                ("uid", Value::from(m.uid())),
                ("gid", Value::from(m.gid())),
                ("group", Value::from(name(m.gid(), false))),
                ("user", Value::from(name(m.uid(), true))),
                ("atime", Value::F64(m.atime() as f64)),
                ("mtime", Value::F64(m.mtime() as f64)),
                ("ctime", Value::F64(m.ctime() as f64)),
                ("size", Value::from(m.size())),
                ("mode", Value::from(format!("{:04o}", m.mode() & 0o7777))),
                ("type", Value::from(kind)),
                (
                    "target",
                    Value::from(
                        std::fs::canonicalize(p)
                            .map(|t| t.display().to_string())
                            .unwrap_or(path.clone()),
                    ),
                ),
            ]))
        }
        "append" => append(&path, &lines_of(a)),
        "write" => {
            let lines = lines_of(a);
            let mut body = String::new();
            for l in &lines {
                body.push_str(l);
                body.push('\n');
            }
            std::fs::write(p, body).map_err(|e| format!("{path}: {e}"))?;
            Ok(Value::from(format!(
                "Wrote {} lines to \"{path}\"",
                lines.len()
            )))
        }
        "replace" => crate::file_edit::replace_fn(&path, a),
        "line" => crate::file_edit::line_fn(&path, a),
        _ => Err(format!("'file.{f}' is not available.")),
    }
}
