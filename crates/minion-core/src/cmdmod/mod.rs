//! `cmd.run`, `cmd.run_all`, `cmd.run_stdout` and `cmd.retcode` as Salt's
//! `salt/modules/cmdmod.py` (`_run`) runs them on Linux.
//!
//! Arguments bind by Salt's signatures (positional order and names, [`params`]); every
//! argument of Salt's signature that we do not implement (`template`, `use_vt`, `bg`) is
//! refused by name when set, never silently dropped. Arguments Salt itself ignores on Linux
//! (`password`, `encoded_cmd`, `windows_codepage`) and keywords outside the signature (Salt's
//! `**kwargs`) are ignored alike.
//!
//! `runas` and `group` take the user's login environment (`su -s SHELL - USER`, as Salt); the
//! process itself (shell or argv, `cwd`, environment, the `runas`/`group` switch, `umask`,
//! stdin, process group) is built by [`salt_execmods::run::Spec`], the one command builder.
//! The command runs in its own process group, which `timeout` kills as a whole.

use std::process::Stdio;
use std::time::Duration;

use rmpv::Value;
use salt_execmods::run::{Spec, User};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::modules::{Args, CallOutcome, text};

mod args;

pub use args::params;
use args::{Bound, Refusal, parse_env, split_input};
use salt_compat::LOCALE_VARS;

/// What to run and how, after every check `_run` makes.
struct Plan {
    spec: Spec,
    shown: String,
    cwd: String,
    combine: bool,
    timeout: Option<(Duration, String)>,
}

/// The user `runas` switches to.
struct RunAs {
    name: String,
    uid: u32,
    gid: u32,
    home: String,
}

fn lookup_user(name: &str) -> Result<RunAs, Refusal> {
    match nix::unistd::User::from_name(name) {
        Ok(Some(u)) => Ok(RunAs {
            name: name.to_owned(),
            uid: u.uid.as_raw(),
            gid: u.gid.as_raw(),
            home: u.dir.to_string_lossy().into_owned(),
        }),
        _ => Err(Refusal::Exec(format!("User '{name}' is not available"))),
    }
}

fn lookup_group(name: &str) -> Result<u32, Refusal> {
    match nix::unistd::Group::from_name(name) {
        Ok(Some(g)) => Ok(g.gid.as_raw()),
        _ => Err(Refusal::Exec(format!("Group '{name}' is not available"))),
    }
}

/// The login environment of `user` (`su -s SHELL - USER`, as Salt), or `None` (logged).
async fn login_env(user: &str, shell: &str) -> Option<Vec<(String, String)>> {
    const MARK: &str = "<<<salt-rs-env>>>";
    let script = format!("printf '{MARK}'; env -0; printf '{MARK}'");
    let su = Spec::argv(&["su", "-s", shell, "-", user, "-c", &script]).command();
    let Ok(su) = su else {
        tracing::error!("Environment could not be retrieved for user '{user}'");
        return None;
    };
    let out = tokio::time::timeout(
        Duration::from_secs(10),
        tokio::process::Command::from(su)
            .kill_on_drop(true)
            .output(),
    )
    .await;
    let body = match out {
        Ok(Ok(o)) => String::from_utf8_lossy(&o.stdout).into_owned(),
        _ => String::new(),
    };
    let Some(inner) = body.split(MARK).nth(1) else {
        tracing::error!("Environment could not be retrieved for user '{user}'");
        return None;
    };
    Some(
        inner
            .split('\0')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    )
}

fn set(env: &mut Vec<(String, String)>, k: &str, v: String) {
    match env.iter_mut().find(|(key, _)| key == k) {
        Some(slot) => slot.1 = v,
        None => env.push((k.to_owned(), v)),
    }
}

fn minion_home() -> String {
    std::env::var("HOME")
        .ok()
        .filter(|h| std::path::Path::new(h).is_dir())
        .unwrap_or_else(|| "/".to_owned())
}

async fn plan(fun: &str, b: &Bound<'_>) -> Result<Plan, Refusal> {
    for (name, on) in [
        ("template", b.get("template").is_some()),
        ("use_vt", b.flag("use_vt", false)),
        ("bg", b.flag("bg", false)),
    ] {
        if on {
            return Err(Refusal::Invocation(format!(
                "argument '{name}' of {fun} is not implemented by salt-rs"
            )));
        }
    }
    if b.get("output_encoding").is_some_and(|e| {
        !matches!(
            text(e).to_ascii_lowercase().replace('_', "-").as_str(),
            "utf-8" | "utf8"
        )
    }) {
        return Err(Refusal::Invocation(format!(
            "argument 'output_encoding' of {fun}: only utf-8 is implemented by salt-rs"
        )));
    }
    let cmd = b.string("cmd").unwrap_or_default();
    let shell = b.string("shell").unwrap_or_else(|| "/bin/sh".to_owned());
    let runas = b.string("runas").map(|u| lookup_user(&u)).transpose()?;
    let group = b.string("group");
    let gid = group.as_deref().map(lookup_group).transpose()?;
    if (runas.is_some() || gid.is_some()) && !nix::unistd::Uid::effective().is_root() {
        return Err(Refusal::Exec(format!(
            "Unable to run command '{cmd}' as another user or group: the minion does not run as root"
        )));
    }
    let cwd = match b.string("cwd") {
        Some(c) => c,
        None => {
            let home = runas.as_ref().map_or_else(minion_home, |u| u.home.clone());
            if std::path::Path::new(&home).is_dir() {
                home
            } else {
                "/".to_owned()
            }
        }
    };
    let shell_path = std::path::Path::new(&shell);
    if !shell_path.is_file()
        || nix::unistd::access(shell_path, nix::unistd::AccessFlags::X_OK).is_err()
    {
        return Err(Refusal::Exec(format!("The shell {shell} is not available")));
    }
    let mut env = parse_env(b.get("env"))?;
    if let Some(u) = &runas {
        let mut login = login_env(&u.name, &shell).await.unwrap_or_default();
        for (k, v) in env {
            set(&mut login, &k, v);
        }
        set(&mut login, "USER", u.name.clone());
        set(&mut login, "HOME", u.home.clone());
        env = login;
    }
    if b.flag("reset_system_locale", true) {
        for var in LOCALE_VARS {
            if !env.iter().any(|(k, _)| k == var) {
                env.push(((*var).to_owned(), "C".to_owned()));
            }
        }
    }
    let mut run_env: Vec<(String, String)> = if b.flag("clean_env", false) {
        env.clone()
    } else {
        let mut base: Vec<(String, String)> = std::env::vars().collect();
        for (k, v) in env.iter().cloned() {
            set(&mut base, &k, v);
        }
        base
    };
    if let Some(p) = b.string("prepend_path") {
        let path = run_env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone());
        set(
            &mut run_env,
            "PATH",
            format!("{p}:{}", path.unwrap_or_default()),
        );
    }
    if !env.iter().any(|(k, _)| k == "NOTIFY_SOCKET") {
        run_env.retain(|(k, _)| k != "NOTIFY_SOCKET");
    }
    let umask = match b.get("umask") {
        None => None,
        Some(v) => {
            let s = text(v);
            let digits = s.trim_start_matches('0');
            if digits.is_empty() {
                return Err(Refusal::Exec("Zero umask is not allowed.".into()));
            }
            u32::from_str_radix(digits, 8)
                .map_err(|_| Refusal::Exec(format!("Invalid umask: '{s}'")))?;
            Some(digits.to_owned())
        }
    };
    let cwd_path = std::path::Path::new(&cwd);
    if !cwd_path.is_absolute() || !cwd_path.is_dir() {
        return Err(Refusal::Exec(format!(
            "Specified cwd '{cwd}' either not absolute or does not exist"
        )));
    }
    // From a publish (`__pub_jid`), Salt's python_shell defaults to True.
    let python_shell = b.flag("python_shell", true);
    let line = Spec::line(&cmd, python_shell, &shell).map_err(Refusal::Exec)?;
    let shown = if python_shell {
        cmd.clone()
    } else {
        salt_compat::py_str(&Value::Array(
            line.argv.iter().map(|w| Value::from(w.as_str())).collect(),
        ))
    };
    let timeout = match b.get("timeout") {
        None => None,
        Some(v) => {
            let secs = match v {
                Value::Integer(i) => i.as_f64(),
                Value::F64(f) => Some(*f),
                Value::F32(f) => Some(f64::from(*f)),
                other => text(other).trim().parse::<f64>().ok(),
            }
            .filter(|s| s.is_finite() && *s > 0.0)
            .ok_or_else(|| {
                Refusal::Exec(format!(
                    "Error: timeout {} must be a positive number",
                    text(v)
                ))
            })?;
            Some((Duration::from_secs_f64(secs), text(v)))
        }
    };
    if b.get("output_loglevel").is_none_or(|l| text(l) != "quiet") {
        tracing::info!(
            "Executing command {}{}{}in directory '{cwd}'",
            if python_shell {
                format!("'{shown}' ")
            } else {
                format!("{shown} ")
            },
            runas
                .as_ref()
                .map_or(String::new(), |u| format!("as user '{}' ", u.name)),
            group
                .as_ref()
                .map_or(String::new(), |g| format!("in group '{g}' ")),
        );
    }
    let spec = Spec {
        cwd: Some(cwd.clone()),
        clear_env: true,
        env: run_env,
        user: runas.as_ref().map(|u| User {
            uid: u.uid,
            gid: u.gid,
        }),
        gid,
        umask,
        stdin: b.string("stdin"),
        process_group: true,
        ..line
    };
    Ok(Plan {
        spec,
        shown,
        cwd,
        combine: match fun {
            "cmd.run" => b.flag("redirect_stderr", true),
            "cmd.run_all" => b.flag("redirect_stderr", false),
            _ => false,
        },
        timeout,
    })
}

/// What one run produced.
struct Ran {
    pid: u32,
    retcode: i64,
    stdout: String,
    stderr: String,
    timed_out: bool,
}

async fn execute(p: &Plan) -> std::io::Result<Ran> {
    let std_command = p.spec.command().map_err(std::io::Error::other)?;
    let mut command = tokio::process::Command::from(std_command);
    command.kill_on_drop(true);
    #[allow(clippy::incompatible_msrv)] // std::io::pipe: Rust 1.87; the toolchain is newer
    let (reader, writer) = std::io::pipe()?;
    if p.combine {
        command
            .stdout(Stdio::from(writer.try_clone()?))
            .stderr(Stdio::from(writer));
    } else {
        command.stdout(Stdio::from(writer)).stderr(Stdio::piped());
    }
    let mut child = command.spawn()?;
    drop(command); // our copies of the write ends: the reader sees EOF when the group exits
    let pid = child.id().unwrap_or(0);
    let mut group = GroupKill(i32::try_from(pid).ok().filter(|p| *p > 0));
    if let (Some(mut w), Some(data)) = (child.stdin.take(), p.spec.stdin.clone()) {
        tokio::spawn(async move {
            let _ = w.write_all(data.as_bytes()).await;
        });
    }
    let out_task = tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let mut buf = Vec::new();
        let mut r = reader;
        r.read_to_end(&mut buf).map(|_| buf)
    });
    let mut se = child.stderr.take();
    let err_task = tokio::spawn(async move {
        let mut buf = Vec::new();
        if let Some(s) = se.as_mut() {
            let _ = s.read_to_end(&mut buf).await;
        }
        buf
    });
    let (status, timed_out) = match p.timeout {
        None => (Some(child.wait().await?), false),
        Some((limit, _)) => match tokio::time::timeout(limit, child.wait()).await {
            Ok(s) => (Some(s?), false),
            Err(_) => {
                group.kill();
                let _ = child.wait().await;
                (None, true)
            }
        },
    };
    // Ended on its own: what it left running in the background stays, as with Salt.
    group.0 = None;
    // A process that left the group keeps the pipe open: stop reading after a grace.
    let grace = Duration::from_secs(if timed_out { 1 } else { 3600 });
    let out = tokio::time::timeout(grace, out_task)
        .await
        .ok()
        .and_then(|r| r.ok()?.ok());
    let err = tokio::time::timeout(grace, err_task)
        .await
        .ok()
        .and_then(Result::ok);
    Ok(Ran {
        pid,
        retcode: status.map_or(1, crate::modules::exit_code),
        stdout: String::from_utf8_lossy(&out.unwrap_or_default()).into_owned(),
        stderr: String::from_utf8_lossy(&err.unwrap_or_default()).into_owned(),
        timed_out,
    })
}

/// Kills the command's process group when dropped while armed: a job ended by
/// `saltutil.kill_job` drops the future that owns this, and its commands die with it.
struct GroupKill(Option<i32>);

impl GroupKill {
    fn kill(&mut self) {
        if let Some(pg) = self.0.take() {
            let pg = nix::unistd::Pid::from_raw(pg);
            let _ = nix::sys::signal::killpg(pg, nix::sys::signal::Signal::SIGKILL);
        }
    }
}

impl Drop for GroupKill {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Run one of the `cmd.*` functions.
pub async fn call(fun: &str, args: &Args) -> CallOutcome {
    let b = match Bound::bind(fun, args) {
        Ok(b) => b,
        Err(r) => return r.outcome(fun),
    };
    let plan = match plan(fun, &b).await {
        Ok(p) => p,
        Err(r) => return r.outcome(fun),
    };
    let mut ran = match execute(&plan).await {
        Ok(r) => r,
        Err(e) => {
            return Refusal::Exec(format!(
                "Unable to run command '{}' with the context '{{'cwd': '{}'}}', reason: {e}",
                plan.shown, plan.cwd
            ))
            .outcome(fun);
        }
    };
    if ran.timed_out {
        let limit = plan.timeout.as_ref().map_or(String::new(), |t| t.1.clone());
        ran.stdout = format!("{} : Timed out after {limit} seconds", plan.shown);
        ran.stderr.clear();
    } else if b.flag("rstrip", true) {
        ran.stdout.truncate(ran.stdout.trim_end().len());
        ran.stderr.truncate(ran.stderr.trim_end().len());
    }
    let ok_codes = b
        .get("success_retcodes")
        .map(split_input)
        .unwrap_or_default();
    let mut codes = Vec::new();
    for c in ok_codes {
        match c.parse::<i64>() {
            Ok(i) => codes.push(i),
            Err(_) => {
                return Refusal::Invocation("success_retcodes must be a list of integers".into())
                    .outcome(fun);
            }
        }
    }
    if codes.is_empty() {
        codes.push(0);
    }
    let out_ok = b.get("success_stdout").map(split_input).unwrap_or_default();
    let err_ok = b.get("success_stderr").map(split_input).unwrap_or_default();
    if !ran.timed_out
        && (codes.contains(&ran.retcode)
            || out_ok.iter().any(|s| ran.stdout.contains(s.as_str()))
            || err_ok.iter().any(|s| ran.stderr.contains(s.as_str())))
    {
        ran.retcode = 0;
    }
    let ignore = b.flag("ignore_retcode", false);
    let quiet = b.string("output_loglevel").as_deref() == Some("quiet");
    if !quiet && !ignore && ran.retcode != 0 {
        tracing::error!(
            "Command '{}' failed with return code: {}",
            plan.shown,
            ran.retcode
        );
    }
    if !quiet {
        tracing::debug!("output: {}", ran.stdout);
    }
    if fun == "cmd.run" && ran.retcode != 0 && b.flag("raise_err", false) {
        let shown = if b.flag("hide_output", false) {
            String::new()
        } else {
            ran.stdout
        };
        return Refusal::Exec(shown).outcome(fun);
    }
    if b.flag("hide_output", false) {
        ran.stdout.clear();
        ran.stderr.clear();
    }
    let ret = match fun {
        "cmd.run" | "cmd.run_stdout" => Value::from(ran.stdout),
        "cmd.retcode" => Value::from(ran.retcode),
        _ => Value::Map(vec![
            (Value::from("pid"), Value::from(ran.pid)),
            (Value::from("retcode"), Value::from(ran.retcode)),
            (Value::from("stdout"), Value::from(ran.stdout)),
            (Value::from("stderr"), Value::from(ran.stderr)),
        ]),
    };
    CallOutcome {
        ret,
        retcode: if ignore { 0 } else { ran.retcode },
        out: None,
    }
}
