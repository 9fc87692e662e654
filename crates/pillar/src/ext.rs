//! `ext_pillar` (Salt's `Pillar.ext_pillar` and `_external_pillar_data`): run each configured
//! external pillar in order and merge what it returns into the pillar.
//!
//! A module's failure to be called (Salt: an exception raised by the module, here the
//! `TypeError` of a mismatched argument) is recorded as `Failed to load ext_pillar <name>:
//! <error>` for `_errors`; a command whose output does not parse is logged and contributes
//! nothing, as Salt's `cmd_json`/`cmd_yaml` do.

use std::process::{Command, Stdio};

use rmpv::Value;

use crate::{Options, Request};

/// Runs the external pillars of `cfg` (and the minion's on-demand `ext`) on `pillar`, merging
/// each result into it; call errors are appended to `errors`.
pub(crate) fn run(
    cfg: &Options,
    req: &Request,
    pillarenv: Option<&str>,
    mut pillar: Value,
    errors: &mut Vec<String>,
) -> Value {
    let override_map = match &req.pillar_override {
        Value::Map(m) if !m.is_empty() => Some(Value::Map(m.clone())),
        _ => None,
    };
    if let Some(ov) = override_map {
        pillar = cfg.merge(pillar, ov);
    }
    let configured = cfg.ext_pillar.len();
    let mut gits = cfg.git_pillars.iter();
    let demanded = on_demand(cfg, req, errors);
    for (i, (module, arg)) in cfg.ext_pillar.iter().chain(demanded.iter()).enumerate() {
        let ext = if module == "git" {
            // The checkouts of the i-th configured item; on demand, none (Salt would fetch).
            match gits.next().filter(|_| i < configured) {
                Some(src) => Ok(crate::git::ext_pillar(cfg, req, pillarenv, src.as_ref())),
                None => Err("git_pillar on demand is not implemented by salt-rs".to_owned()),
            }
        } else {
            call(cfg, req, pillarenv, &pillar, module, arg)
        };
        let ext = match ext {
            Ok(v) => v,
            Err(e) => {
                let msg = format!("Failed to load ext_pillar {module}: {e}");
                tracing::error!("Exception caught loading ext_pillar '{module}': {e}");
                errors.push(msg);
                continue;
            }
        };
        match ext {
            Value::Map(m) if m.is_empty() => {}
            v @ Value::Map(_) => pillar = cfg.merge(pillar, v),
            v if !truthy(&v) => {}
            // Salt's merge raises on a non-mapping (and the whole compile fails): skip it.
            other => tracing::error!(
                "ext_pillar {module} for {} returned {other}, not a mapping; ignored",
                req.id
            ),
        }
    }
    pillar
}

/// The minion's on-demand `ext` (Salt's `__valid_on_demand_ext_pillar`): a mapping of modules
/// all named in `on_demand_ext_pillar`, else nothing (logged). A module allowed there that
/// salt-rs does not implement (Salt's default list names `libvirt` and `virtkey`) is left
/// out and named in `errors`, not silently dropped.
fn on_demand(cfg: &Options, req: &Request, errors: &mut Vec<String>) -> Vec<(String, Value)> {
    let Some(ext) = &req.ext else {
        return Vec::new();
    };
    let Value::Map(m) = ext else {
        tracing::error!("On-demand pillar {ext} is not formatted as a dictionary");
        return Vec::new();
    };
    let names: Vec<String> = m.iter().map(|(k, _)| salt_compat::py_str(k)).collect();
    let mut bad: Vec<&String> = names
        .iter()
        .filter(|n| !cfg.on_demand_ext_pillar.contains(n))
        .collect();
    if !bad.is_empty() {
        bad.sort();
        tracing::error!(
            "The following ext_pillar modules are not allowed for on-demand pillar data: {}. \
             Valid on-demand ext_pillar modules are: {}. The valid modules can be adjusted by \
             setting the 'on_demand_ext_pillar' config option.",
            bad.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            cfg.on_demand_ext_pillar.join(", ")
        );
        return Vec::new();
    }
    names
        .into_iter()
        .zip(m.iter().map(|(_, v)| v.clone()))
        .filter(|(n, _)| {
            let known = salt_config::EXT_PILLAR_MODULES.contains(&n.as_str());
            if !known {
                tracing::error!("Specified ext_pillar interface {n} is unavailable");
                errors.push(format!(
                    "Failed to load ext_pillar {n}: the ext_pillar module `{n}` is not \
                     implemented by salt-rs"
                ));
            }
            known
        })
        .collect()
}

/// Calls one module (`ext_pillar(minion_id, pillar, command)`) with its configured argument.
fn call(
    cfg: &Options,
    req: &Request,
    pillarenv: Option<&str>,
    pillar: &Value,
    module: &str,
    arg: &Value,
) -> Result<Value, String> {
    let id = &req.id;
    match module {
        "http_json" => return crate::http::ext_pillar(req, arg, false),
        "http_yaml" => return crate::http::ext_pillar(req, arg, true),
        "postgres" => return crate::postgres::ext_pillar(cfg, req, arg),
        "file_tree" => return crate::file_tree::ext_pillar(cfg, req, pillarenv, pillar, arg),
        "stack" => return crate::stack::ext_pillar(req, pillarenv, pillar, arg),
        _ => {}
    }
    let command = bind_command(arg)?;
    let Some(command) = command.as_str() else {
        tracing::error!("ext_pillar {module}: command {command} is not a string");
        return Ok(Value::Map(Vec::new()));
    };
    let command = command.replace("%s", id);
    Ok(match module {
        "cmd_json" => cmd_json(&command),
        "cmd_yamlex" => cmd_yamlex(&command),
        "cmd_yaml" => cmd_yaml(&command),
        other => {
            // The config loader refuses other modules at start.
            tracing::error!("Specified ext_pillar interface {other} is unavailable");
            Value::Map(Vec::new())
        }
    })
}

/// Binds the argument to the `command` parameter (`ext_pillar(minion_id, pillar, command)`).
fn bind_command(arg: &Value) -> Result<Value, String> {
    let mut a = bind(arg, &["command"], 1)?;
    Ok(a.remove(0).unwrap_or(Value::Nil))
}

/// Binds a module's argument to its parameters after `minion_id, pillar` (the first
/// `required` of them required) the way Python calls `ext_pillar(minion_id, pillar, *list)` /
/// `(**mapping)` / `(value)`; a mismatch is Python's `TypeError` text.
pub(crate) fn bind(
    arg: &Value,
    params: &[&str],
    required: usize,
) -> Result<Vec<Option<Value>>, String> {
    let mut out: Vec<Option<Value>> = vec![None; params.len()];
    match arg {
        Value::Array(a) => {
            if a.len() > params.len() {
                let takes = if required == params.len() {
                    format!("{}", params.len() + 2)
                } else {
                    format!("from {} to {}", required + 2, params.len() + 2)
                };
                return Err(format!(
                    "ext_pillar() takes {takes} positional arguments but {} were given",
                    a.len() + 2
                ));
            }
            for (slot, v) in out.iter_mut().zip(a) {
                *slot = Some(v.clone());
            }
        }
        Value::Map(m) => {
            for (k, v) in m {
                let k = salt_compat::py_str(k);
                match params.iter().position(|p| *p == k) {
                    Some(i) => out[i] = Some(v.clone()),
                    None if k == "minion_id" || k == "pillar" => {
                        return Err(format!(
                            "ext_pillar() got multiple values for argument '{k}'"
                        ));
                    }
                    None => {
                        return Err(format!(
                            "ext_pillar() got an unexpected keyword argument '{k}'"
                        ));
                    }
                }
            }
        }
        other => out[0] = Some(other.clone()),
    }
    let missing: Vec<String> = params[..required]
        .iter()
        .zip(&out)
        .filter(|(_, v)| v.is_none())
        .map(|(p, _)| format!("'{p}'"))
        .collect();
    if !missing.is_empty() {
        let list = match missing.len() {
            1 => missing[0].clone(),
            n => format!("{} and {}", missing[..n - 1].join(", "), missing[n - 1]),
        };
        return Err(format!(
            "ext_pillar() missing {} required positional argument{}: {list}",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" }
        ));
    }
    Ok(out)
}

/// Salt's `cmd.run(command)` from a module: no shell (the command split as `shlex.split`),
/// stderr into the same pipe as stdout.
fn cmd_run(command: &str) -> Result<String, String> {
    shlex::split(command)
        .filter(|argv| !argv.is_empty())
        .ok_or_else(|| "cannot split the command".to_owned())
        .and_then(|argv| {
            let mut cmd = Command::new(&argv[0]);
            cmd.args(&argv[1..]);
            run_output(cmd, true)
        })
}

/// `cmd_json`: `cmd.run` (stdout and stderr), read as JSON; anything unparsable is `{}`.
fn cmd_json(command: &str) -> Value {
    let parsed = cmd_run(command)
        .and_then(|out| serde_json::from_str::<serde_json::Value>(&out).map_err(|e| e.to_string()));
    match parsed {
        Ok(v) => salt_compat::json::json_to_msgpack(&v),
        Err(e) => {
            tracing::error!("JSON data from {command} failed to parse: {e}");
            Value::Map(Vec::new())
        }
    }
}

/// `cmd_yamlex`: `cmd.run` (stdout and stderr), read by Salt's yamlex deserializer
/// (`salt_render::yamlex`); anything unparsable is `{}`.
fn cmd_yamlex(command: &str) -> Value {
    let parsed = cmd_run(command)
        .and_then(|out| salt_render::yamlex::deserialize(&out).map_err(|e| e.to_string()));
    match parsed {
        Ok(v) => v.unwrap_or(Value::Nil),
        Err(e) => {
            tracing::error!("YAML data from {command} failed to parse: {e}");
            Value::Map(Vec::new())
        }
    }
}

/// `cmd_yaml`: `cmd.run_stdout` through the shell, its stdout read as YAML; anything
/// unparsable is `{}`, empty output `None`.
fn cmd_yaml(command: &str) -> Value {
    let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".to_owned());
    let mut cmd = Command::new(shell);
    cmd.arg("-c").arg(command);
    let out = match run_output(cmd, false) {
        Ok(out) => out,
        Err(e) => {
            tracing::error!("YAML data from '{command}' failed to parse: {e}");
            return Value::Map(Vec::new());
        }
    };
    match salt_render::yaml::load(&out) {
        Ok(v) => v.unwrap_or(Value::Nil),
        Err(e) => {
            tracing::error!(
                "YAML data from '{command}' failed to parse. Command output:\n{out}: {e}"
            );
            Value::Map(Vec::new())
        }
    }
}

/// Runs `cmd` as Salt's `cmd._run` does for these modules: in the home directory, stdin
/// closed, the C locale unless the environment sets one (`LANGUAGE` too, as `cmd.run`); stdout with trailing whitespace
/// stripped (with stderr in the same pipe when `merge_stderr`, as `cmd.run`'s). A non-zero
/// exit is logged; its output still counts.
fn run_output(mut cmd: Command, merge_stderr: bool) -> Result<String, String> {
    if let Some(home) = std::env::var_os("HOME") {
        cmd.current_dir(home);
    }
    for var in salt_compat::LOCALE_VARS {
        if std::env::var_os(var).is_none() {
            cmd.env(var, "C");
        }
    }
    cmd.stdin(Stdio::null());
    if merge_stderr {
        let unable = |e: std::io::Error| format!("Unable to run command {cmd:?}: {e}");
        let (mut reader, writer) = std::io::pipe().map_err(unable)?;
        let writer2 = writer.try_clone().map_err(unable)?;
        cmd.stdout(writer).stderr(writer2);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("Unable to run command {cmd:?}: {e}"))?;
        // The parent's copies of the write end are in `cmd`: drop them so the read ends.
        drop(cmd);
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut reader, &mut buf)
            .map_err(|e| format!("reading the command's output: {e}"))?;
        let status = child
            .wait()
            .map_err(|e| format!("waiting for the command: {e}"))?;
        if !status.success() {
            tracing::error!("Command failed with {status}");
        }
        return Ok(String::from_utf8_lossy(&buf).trim_end().to_owned());
    }
    let out = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("Unable to run command {cmd:?}: {e}"))?;
    if !out.status.success() {
        tracing::error!(
            "Command {cmd:?} failed with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim_end()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_owned())
}

pub(crate) use salt_compat::py_truthy as truthy;
