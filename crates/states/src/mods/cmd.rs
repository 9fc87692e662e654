//! `cmd.run`, `cmd.wait`, `cmd.mod_watch` (`salt/states/cmd.py`).

use rmpv::Value;

use super::ret::{self, comment};
use super::{base_ret, name_of};
use crate::engine::Ctx;
use crate::{get_str, map, set};
use salt_compat::map_get;

/// `cmd.run_all` as the state uses it: `{pid, retcode, stdout, stderr}` (`/bin/sh -c` in
/// `cwd`, else `$HOME`).
pub fn run_all(cmd: &str, cwd: Option<&str>) -> Result<Value, String> {
    let home = std::env::var("HOME").unwrap_or_else(|_| "/".into());
    let out = salt_execmods::run::shell(cmd, cwd.unwrap_or(&home))?;
    Ok(map(vec![
        ("pid", Value::from(out.pid)),
        ("retcode", Value::from(i64::from(out.retcode))),
        ("stdout", Value::from(out.stdout)),
        ("stderr", Value::from(out.stderr)),
    ]))
}

fn run(ctx: &Ctx<'_>, low: &Value) -> Value {
    let mut r = base_ret(low);
    let name = name_of(low);
    for unsupported in [
        "runas", "root", "stateful", "use_vt", "env", "shell", "password",
    ] {
        if map_get(low, unsupported).is_some() {
            comment(
                &mut r,
                format!("cmd.run option '{unsupported}' is not supported by salt-rs"),
            );
            return r;
        }
    }
    if ctx.opts.test {
        let msg = format!("Command \"{name}\" would have been executed");
        return ret::changed(r, true, map(vec![("cmd", Value::from(name))]), msg);
    }
    let cwd = get_str(low, "cwd");
    if let Some(d) = cwd
        && !std::path::Path::new(d).is_dir()
    {
        comment(
            &mut r,
            format!("Desired working directory \"{d}\" is not available"),
        );
        return r;
    }
    match run_all(&name, cwd) {
        Ok(all) => {
            let rc = map_get(&all, "retcode")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            set(&mut r, "changes", all);
            set(&mut r, "result", Value::Boolean(rc == 0));
            comment(&mut r, format!("Command \"{name}\" run"));
        }
        Err(e) => set(&mut r, "comment", Value::from(e)),
    }
    r
}

/// Dispatch `cmd.<fun>`.
pub fn call(ctx: &Ctx<'_>, fun: &str, low: &Value) -> Value {
    match fun {
        "run" => run(ctx, low),
        "script" => super::cmd_script::script(ctx, low),
        "wait" => {
            let mut r = base_ret(low);
            set(&mut r, "result", Value::Boolean(true));
            r
        }
        "mod_watch" => match get_str(low, "sfun") {
            Some("run" | "wait" | "watch") => run(ctx, low),
            other => {
                let mut r = base_ret(low);
                crate::pop(&mut r, "result");
                crate::pop(&mut r, "comment");
                comment(
                    &mut r,
                    format!(
                        "cmd.{} does not work with the watch requisite, please use cmd.wait or cmd.wait_script",
                        other.unwrap_or("")
                    ),
                );
                set(&mut r, "result", Value::Boolean(false));
                r
            }
        },
        other => {
            let mut r = base_ret(low);
            comment(&mut r, format!("'cmd.{other}' is not available."));
            r
        }
    }
}
