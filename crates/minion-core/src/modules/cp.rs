//! `cp.*`: files from and to the master, as Salt's `salt/modules/cp.py` with the remote
//! file client (`get_file`, `get_dir`, `cache_file`, `list_master`, `list_master_dirs`,
//! `hash_file`, `stat_file` (`_file_find`), `envs`, `push` -> `_file_recv`). `template=` renders paths in Salt; here it
//! is refused by name, as are http(s) sources.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use rmpv::Value;

use super::{Call, CallOutcome, Func, Run, Spec, text};
use crate::fileclient::RemoteFileClient;

const fn f(name: &'static str, spec: Spec) -> Func {
    Func {
        name,
        spec,
        run: Run::Blocking(run),
    }
}

/// The functions of this file.
pub const FUNCS: &[Func] = &[
    f(
        "cp.get_file",
        Spec::of(
            &["path", "dest", "saltenv", "makedirs", "template", "gzip"],
            2,
        ),
    ),
    f(
        "cp.get_dir",
        Spec::of(&["path", "dest", "saltenv", "template", "gzip"], 2),
    ),
    f(
        "cp.cache_file",
        Spec::of(
            &["path", "saltenv", "source_hash", "verify_ssl", "use_etag"],
            1,
        ),
    ),
    f("cp.list_master", Spec::of(&["saltenv", "prefix"], 0)),
    f("cp.list_master_dirs", Spec::of(&["saltenv", "prefix"], 0)),
    f("cp.hash_file", Spec::of(&["path", "saltenv"], 1)),
    f("cp.stat_file", Spec::of(&["path", "saltenv", "octal"], 1)),
    f("cp.envs", Spec::NONE),
    f(
        "cp.push",
        Spec::of(
            &["path", "keep_symlinks", "upload_path", "remove_source"],
            1,
        ),
    ),
];

/// Salt's `file_buffer_size`: the `_file_recv` chunk.
const FILE_BUFFER_SIZE: usize = 262_144;

fn path_str(p: &Path) -> Value {
    Value::from(p.display().to_string())
}

/// `salt://path?saltenv=x` -> (path, saltenv).
fn split_url(c: &Call, url: &str, saltenv: &str) -> Result<(String, String), CallOutcome> {
    match salt_states::fileclient::parse_salt_url(url, saltenv) {
        Some(p) => Ok(p),
        None => Err(CallOutcome::error(format!(
            "ERROR executing '{}': salt-rs fetches only salt:// URLs (got {url:?})",
            c.fun
        ))),
    }
}

fn run(c: &Call) -> CallOutcome {
    match inner(c) {
        Ok(v) => v,
        Err(e) => e,
    }
}

fn inner(c: &Call) -> Result<CallOutcome, CallOutcome> {
    let client = super::state::remote_client(c)?;
    let err = |e: String| CallOutcome::error(format!("ERROR executing '{}': {e}", c.fun));
    let arg = |i: usize, k: &str| c.args.param(i, k).filter(|v| !v.is_nil());
    let saltenv_at = |i: usize| arg(i, "saltenv").map_or_else(|| "base".to_owned(), text);
    if ["template", "source_hash"]
        .iter()
        .any(|k| c.args.kw(k).is_some_and(|v| !v.is_nil()))
    {
        return Err(err(
            "template/source_hash are not supported by salt-rs".into()
        ));
    }
    let ok = |v: Value| Ok(CallOutcome::ok(v));
    match c.fun.as_str() {
        "cp.get_file" => {
            let (path, env) = split_url(
                c,
                &text(arg(0, "path").unwrap_or(&Value::Nil)),
                &saltenv_at(2),
            )?;
            let dest = PathBuf::from(text(arg(1, "dest").unwrap_or(&Value::Nil)));
            let makedirs = arg(3, "makedirs").is_some_and(salt_states::truthy);
            let gzip = arg(5, "gzip")
                .and_then(Value::as_u64)
                .and_then(|g| u32::try_from(g).ok());
            match client.fetch(&path, &env, Some(&dest), makedirs, gzip) {
                Ok(Some(p)) => ok(path_str(&p)),
                Ok(None) => ok(Value::from("")),
                Err(e) => Err(err(e)),
            }
        }
        "cp.get_dir" => {
            let url = text(arg(0, "path").unwrap_or(&Value::Nil));
            let (path, env) = split_url(c, &url, &saltenv_at(2))?;
            let dest = text(arg(1, "dest").unwrap_or(&Value::Nil));
            let gzip = arg(4, "gzip")
                .and_then(Value::as_u64)
                .and_then(|g| u32::try_from(g).ok());
            get_dir(&client, &path, &dest, &env, gzip).map_or_else(|e| Err(err(e)), ok)
        }
        "cp.cache_file" => {
            let (path, env) = split_url(
                c,
                &text(arg(0, "path").unwrap_or(&Value::Nil)),
                &saltenv_at(1),
            )?;
            match client.fetch(&path, &env, None, true, None) {
                Ok(Some(p)) => ok(path_str(&p)),
                Ok(None) => ok(Value::Boolean(false)),
                Err(e) => Err(err(e)),
            }
        }
        "cp.list_master" | "cp.list_master_dirs" => {
            let cmd = if c.fun == "cp.list_master" {
                "_file_list"
            } else {
                "_dir_list"
            };
            let prefix = arg(1, "prefix").map(text).unwrap_or_default();
            client.list(cmd, &saltenv_at(0), &prefix).map_or_else(
                |e| Err(err(e)),
                |l| ok(Value::Array(l.into_iter().map(Value::from).collect())),
            )
        }
        "cp.hash_file" => {
            let (path, env) = split_url(
                c,
                &text(arg(0, "path").unwrap_or(&Value::Nil)),
                &saltenv_at(1),
            )?;
            match client.hash_file(&path, &env).map_err(err)? {
                Some((h, t)) => ok(salt_states::map(vec![
                    ("hsum", Value::from(h)),
                    ("hash_type", Value::from(t)),
                ])),
                None => ok(Value::from("")),
            }
        }
        "cp.stat_file" => {
            let (path, env) = split_url(
                c,
                &text(arg(0, "path").unwrap_or(&Value::Nil)),
                &saltenv_at(1),
            )?;
            let octal = arg(2, "octal").is_none_or(|v| *v == Value::Boolean(true));
            match client.stat_file(&path, &env).map_err(err)? {
                None => ok(Value::Nil),
                Some(st) => {
                    let mode = st.first().cloned().unwrap_or(Value::Nil);
                    if !octal {
                        return ok(mode);
                    }
                    // Python's oct(mode)[-4:].
                    let o = mode
                        .as_u64()
                        .map_or_else(String::new, |m| format!("0o{m:o}"));
                    ok(Value::from(&o[o.len().saturating_sub(4)..]))
                }
            }
        }
        "cp.envs" => ok(Value::Array(
            salt_states::FileClient::envs(&*client)
                .into_iter()
                .map(Value::from)
                .collect(),
        )),
        "cp.push" => push(c, &client).map_or_else(|e| Err(err(e)), ok),
        other => Err(super::not_available(other)),
    }
}

/// Salt's `Client.get_dir`: every file under `path` to `dest/<last dir>/...`, empty dirs too.
fn get_dir(
    client: &RemoteFileClient,
    path: &str,
    dest: &str,
    saltenv: &str,
    gzip: Option<u32>,
) -> Result<Value, String> {
    let path = path.trim_end_matches('/');
    let prefix = path.rsplit_once('/').map_or("", |(p, _)| p);
    let mut ret = Vec::new();
    let under = |f: &str| f.as_bytes().get(path.len()) == Some(&b'/') && f.starts_with(path);
    for f in client.list("_file_list", saltenv, path)? {
        if !under(&f) {
            continue;
        }
        let rel = f[prefix.len()..].trim_start_matches('/');
        let target = PathBuf::from(format!("{dest}/{rel}"));
        if let Some(p) = client.fetch(&f, saltenv, Some(&target), true, gzip)? {
            ret.push(p.display().to_string());
        }
    }
    for d in client.list("_file_list_emptydirs", saltenv, path)? {
        if !under(&d) {
            continue;
        }
        let rel = d[prefix.len()..].trim_start_matches('/');
        let target = format!("{dest}/{rel}");
        std::fs::create_dir_all(&target).map_err(|e| format!("{target}: {e}"))?;
        ret.push(target);
    }
    ret.sort();
    Ok(Value::Array(ret.into_iter().map(Value::from).collect()))
}

/// `cp.push`: the file to the master's `_file_recv` in `file_buffer_size` chunks.
fn push(c: &Call, client: &RemoteFileClient) -> Result<Value, String> {
    let raw = PathBuf::from(text(c.args.param(0, "path").unwrap_or(&Value::Nil)));
    let keep = c
        .args
        .param(1, "keep_symlinks")
        .is_some_and(salt_states::truthy);
    let path = if keep {
        raw.clone()
    } else {
        std::fs::canonicalize(&raw).unwrap_or(raw)
    };
    if !path.is_absolute() {
        return Ok(Value::Boolean(false));
    }
    if c.args.param(2, "upload_path").is_some_and(|v| !v.is_nil()) {
        return Err("upload_path is not supported by salt-rs".into());
    }
    let parts: Vec<Value> = path
        .components()
        .filter_map(|p| match p {
            std::path::Component::Normal(s) => Some(Value::from(s.to_string_lossy().as_ref())),
            _ => None,
        })
        .collect();
    let mut file = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let link = client.link();
    let mut loc: u64 = 0;
    let mut sent = false;
    loop {
        let mut buf = vec![0u8; FILE_BUFFER_SIZE];
        let n = file
            .read(&mut buf)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        buf.truncate(n);
        if n == 0 && sent {
            if c.args
                .param(3, "remove_source")
                .is_some_and(salt_states::truthy)
            {
                let _ = std::fs::remove_file(&path);
            }
            return Ok(Value::Boolean(true));
        }
        let load = Value::Map(vec![
            ("cmd".into(), "_file_recv".into()),
            ("id".into(), c.ctx.id.as_str().into()),
            ("path".into(), Value::Array(parts.clone())),
            ("size".into(), size.into()),
            (
                "tok".into(),
                Value::Binary(link.session.tok.as_ref().clone()),
            ),
            ("loc".into(), loc.into()),
            ("data".into(), Value::Binary(buf)),
        ]);
        let r = link.send_blocking(&load)?;
        if !salt_states::truthy(&r) {
            return Ok(r);
        }
        sent = true;
        loc += n as u64;
    }
}
