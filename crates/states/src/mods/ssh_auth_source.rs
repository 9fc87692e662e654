//! `ssh_auth.present`/`absent` with `source`: the keys of a `salt://` file (Salt's
//! `ssh.check_key_file`, `set_auth_key_from_file`, `rm_auth_key_from_file`). Other sources
//! (`http://`, local paths, ...) are refused by name.

use rmpv::Value;
use salt_compat::{map_get, py_str};

use super::ret::{self, comment, fail};
use super::ssh_auth::{Key, answer, raised};
use super::ssh_keys::{self as ssh, AuthKey, Check};
use crate::engine::Ctx;
use crate::fileclient::parse_salt_url;
use crate::{get_str, map, set};

/// `source`, when given (Salt's `""` default counts as not given).
pub(super) fn of(low: &Value) -> Option<String> {
    map_get(low, "source")
        .filter(|v| !v.is_nil())
        .map(py_str)
        .filter(|s| !s.is_empty())
}

/// The file's bytes (`cp.cache_file`; `Ok(None)` when the file server has no such file),
/// `Err` refusing a source that is not `salt://`.
fn fetch(ctx: &Ctx<'_>, low: &Value, src: &str, fun: &str) -> Result<Option<Vec<u8>>, String> {
    let saltenv = get_str(low, "__env__").unwrap_or(&ctx.opts.saltenv);
    let Some((path, env)) = parse_salt_url(src, saltenv) else {
        return Err(format!(
            "ssh_auth.{fun} argument 'source' is supported by salt-rs only as a salt:// URL, \
             not '{src}'"
        ));
    };
    Ok(ctx.client.get_file(&path, &env).ok().flatten())
}

fn no_keys(src: &str) -> String {
    format!("No keys detected in {src}. Is file properly formatted?")
}

/// Each key of a file with its status, and the error Salt leaves in `__context__`.
type KeyFile = (Vec<(String, Check)>, Option<String>);

/// Salt's `check_key_file`: each key's status, and the error it leaves in `__context__`.
fn check_key_file(k: &Key, bytes: Option<Vec<u8>>, src: &str) -> Result<KeyFile, String> {
    let Some(bytes) = bytes else {
        return Ok((Vec::new(), None));
    };
    let keys = ssh::keys_of(&bytes, k.hash_type.as_deref())?;
    if keys.is_empty() {
        return Ok((Vec::new(), Some(no_keys(src))));
    }
    let mut out = Vec::new();
    for (key, s) in keys {
        let st = ssh::check_key(
            &k.user,
            &key,
            &s.enc,
            &s.comment,
            &s.options,
            &k.config,
            k.hash_type.as_deref(),
        )?;
        out.push((key, st));
    }
    Ok((out, None))
}

fn status(c: Check) -> &'static str {
    match c {
        Check::Add => "add",
        Check::Update => "update",
        Check::Exists => "exists",
    }
}

/// The test-mode answer of `present` (`remove`: of `absent`).
fn test_answer(mut r: Value, k: &Key, bytes: Option<Vec<u8>>, src: &str, remove: bool) -> Value {
    let (keys, err) = match check_key_file(k, bytes, src) {
        Ok(x) => x,
        Err(e) => return raised(r, &e),
    };
    let msg: String = keys
        .iter()
        .filter(|(_, st)| *st != if remove { Check::Add } else { Check::Exists })
        .map(|(key, st)| match remove {
            true => format!("Set to remove: {key}\n"),
            false => format!("Set to {}: {key}\n", status(*st)),
        })
        .collect();
    if !msg.is_empty() {
        return ret::would(r, msg);
    }
    if let Some(e) = err {
        return fail(r, e);
    }
    let state = if remove { "absent" } else { "present" };
    set(&mut r, "result", Value::Boolean(true));
    comment(
        &mut r,
        format!("All host keys in file {src} are already {state}"),
    );
    r
}

/// `ssh_auth.present` with `source`.
pub(super) fn present(ctx: &Ctx<'_>, low: &Value, r: Value, k: &Key, src: &str) -> Value {
    let bytes = match fetch(ctx, low, src, "present") {
        Ok(b) => b,
        Err(e) => return fail(r, e),
    };
    if ctx.opts.test {
        return test_answer(r, k, bytes, src, false);
    }
    let Some(bytes) = bytes else {
        return fail(
            r,
            format!("Failed to add the ssh key. Source file {src} is missing"),
        );
    };
    let keys: Vec<(String, AuthKey)> = match ssh::keys_of(&bytes, k.hash_type.as_deref()) {
        Ok(keys) if keys.is_empty() => return fail(r, no_keys(src)),
        Ok(keys) => keys,
        Err(e) => return raised(r, &e),
    };
    let mut rval = String::new();
    for (key, s) in &keys {
        let options = if k.options.is_empty() {
            &s.options
        } else {
            &k.options
        };
        match ssh::set_auth_key(
            &k.user,
            key,
            &s.enc,
            &s.comment,
            options,
            &k.config,
            k.hash_type.as_deref(),
        ) {
            Ok(d) => rval.push_str(d),
            Err(e) => return raised(r, &e),
        }
    }
    let data = ["fail", "replace", "new"]
        .into_iter()
        .find(|d| rval.contains(d))
        .unwrap_or("no change");
    answer(r, data, &k.name, &k.user)
}

/// `ssh_auth.absent` with `source`.
pub(super) fn absent(ctx: &Ctx<'_>, low: &Value, mut r: Value, k: &Key, src: &str) -> Value {
    let bytes = match fetch(ctx, low, src, "absent") {
        Ok(b) => b,
        Err(e) => return fail(r, e),
    };
    if ctx.opts.test {
        return test_answer(r, k, bytes, src, true);
    }
    // Salt answers a missing source file with an empty comment and no failure.
    let Some(bytes) = bytes else {
        return r;
    };
    let keys = match ssh::keys_of(&bytes, k.hash_type.as_deref()) {
        Ok(keys) => keys,
        Err(e) => return raised(r, &e),
    };
    if keys.is_empty() {
        comment(&mut r, "fail");
        return r;
    }
    let mut rval = String::new();
    for (key, _) in &keys {
        match ssh::rm_auth_key(&k.user, key, &k.config, k.hash_type.as_deref()) {
            Ok(m) => rval.push_str(&m),
            Err(e) => return raised(r, &e),
        }
    }
    let msg = ["Key not removed", "Key removed"]
        .into_iter()
        .find(|m| rval.contains(m))
        .unwrap_or("Key not present");
    if msg == "Key removed" {
        set(
            &mut r,
            "changes",
            map(vec![(k.name.as_str(), Value::from("Removed"))]),
        );
    }
    comment(&mut r, msg);
    r
}
