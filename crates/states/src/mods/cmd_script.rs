//! `cmd.script` (`salt/states/cmd.py` on `cmdmod.script`): the source (`salt://` or a
//! local path, default `name`) copied to a private temporary file (mode 0500) and run
//! with `args` (or the words after the first in `name`) from `cwd` (default: `$HOME`).
//! Refused by name: `template`, `runas`, `env`, `shell`, `stateful`, `use_vt`,
//! `password`, `stdin`, `umask`, `bg`, `success_retcodes`/`_stdout`/`_stderr`, `timeout`.

use std::os::unix::fs::PermissionsExt;

use rmpv::Value;

use super::ret::comment;
use super::{base_ret, name_of};
use crate::engine::Ctx;
use crate::fileclient::parse_salt_url;
use crate::{get_str, map, set};
use salt_compat::map_get;
use salt_compat::py_str;

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn source_bytes(ctx: &Ctx<'_>, source: &str, saltenv: &str) -> Option<Vec<u8>> {
    match parse_salt_url(source, saltenv) {
        Some((path, env)) => ctx.client.get_file(&path, &env).ok().flatten(),
        None => std::fs::read(source).ok(),
    }
}

fn cache_error() -> Value {
    map(vec![
        ("pid", Value::from(0)),
        ("retcode", Value::from(1)),
        ("stdout", Value::from("")),
        ("stderr", Value::from("")),
        ("cache_error", Value::Boolean(true)),
    ])
}

/// The `cmd.script` state.
pub fn script(ctx: &Ctx<'_>, low: &Value) -> Value {
    let mut r = base_ret(low);
    let name = name_of(low);
    for k in [
        "template",
        "runas",
        "env",
        "shell",
        "stateful",
        "use_vt",
        "password",
        "stdin",
        "umask",
        "bg",
        "success_retcodes",
        "success_stdout",
        "success_stderr",
        "timeout",
    ] {
        if map_get(low, k).is_some_and(|v| !v.is_nil()) {
            let msg = format!("cmd.script option '{k}' is not supported by salt-rs");
            comment(&mut r, msg);
            return r;
        }
    }
    let saltenv = get_str(low, "__env__")
        .unwrap_or(&ctx.opts.saltenv)
        .to_owned();
    let source = map_get(low, "source")
        .map(py_str)
        .unwrap_or_else(|| name.clone());
    let args = match map_get(low, "args").filter(|v| crate::truthy(v)) {
        Some(v) => Some(py_str(v)),
        None => name.split_once(' ').map(|(_, a)| a.to_owned()),
    };
    if ctx.opts.test {
        set(&mut r, "result", Value::Nil);
        let msg = format!("Command '{name}' would have been executed");
        comment(&mut r, msg);
        return r;
    }
    let cwd = get_str(low, "cwd");
    if let Some(d) = cwd
        && !std::path::Path::new(d).is_dir()
    {
        let msg = format!("Desired working directory \"{d}\" is not available");
        comment(&mut r, msg);
        return r;
    }
    // As Salt: `source` defaults to the whole `name`, arguments included (so
    // `name: salt://x.sh arg` without `source` fails to cache, as in Salt).
    let src = source.clone();
    let all = match source_bytes(ctx, &src, &saltenv) {
        None => cache_error(),
        Some(body) => {
            let ext = std::path::Path::new(src.split('?').next().unwrap_or(""))
                .extension()
                .map(|e| format!(".{}", e.to_string_lossy()))
                .unwrap_or_default();
            let tmp = match tempfile::Builder::new()
                .prefix("__salt.tmp.")
                .suffix(&ext)
                .tempfile()
            {
                Ok(t) => t,
                Err(e) => {
                    comment(&mut r, e.to_string());
                    return r;
                }
            };
            let path = tmp.path().to_owned();
            let written = std::fs::write(&path, &body).and_then(|_| {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o500))
            });
            if let Err(e) = written {
                comment(&mut r, e.to_string());
                return r;
            }
            let tmp = tmp.into_temp_path();
            let mut line = quote(&path.display().to_string());
            if let Some(a) = &args {
                for w in a.split_whitespace() {
                    line.push(' ');
                    line.push_str(&quote(w.trim_matches(|c| c == '"' || c == '\'')));
                }
            }
            let out = super::cmd::run_all(&line, cwd);
            drop(tmp);
            match out {
                Ok(v) => v,
                Err(e) => {
                    comment(&mut r, e);
                    return r;
                }
            }
        }
    };
    let rc = map_get(&all, "retcode")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let cache_err = map_get(&all, "cache_error").is_some();
    set(&mut r, "changes", all);
    set(&mut r, "result", Value::Boolean(rc == 0));
    let c = if cache_err {
        format!("Unable to cache script {source} from saltenv '{saltenv}'")
    } else {
        format!("Command '{name}' run")
    };
    comment(&mut r, c);
    r
}
