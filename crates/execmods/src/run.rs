//! Running commands: the one place that builds the process a command runs as ([`Spec`]:
//! Salt's `python_shell`/`shell` handling, `cwd`, `env`, `runas`/`group`, `umask`, stdin and
//! process group), and the synchronous runners on it: the system tools the modules wrap
//! (`cmd.run_all` with `python_shell=False`) and the `cmd.run` state's shell commands. The
//! minion's `cmd.*` execution functions (`timeout`, process-group kill, cancellation, async)
//! are `salt_minion_core::cmdmod`, which builds its process here as well.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// The user `runas` switches to: its uid and primary gid.
#[derive(Debug, Clone, Copy)]
pub struct User {
    /// The user's uid.
    pub uid: u32,
    /// The user's primary gid (used unless [`Spec::gid`] is set).
    pub gid: u32,
}

/// How to run one command; [`Spec::command`] builds the process.
///
/// `runas` and `group` run the command through `setpriv` (util-linux) with the user's uid,
/// gid and supplementary groups (Salt's `chugid_and_umask` in a `preexec_fn`; the workspace
/// forbids `unsafe`, so the switch happens in a helper process). `umask` is set by a
/// `/bin/sh` wrapper inside that switch.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    /// The program and its arguments, before the `umask` and `runas` wrappers.
    pub argv: Vec<String>,
    /// The working directory (the caller's when `None`).
    pub cwd: Option<String>,
    /// Start from an empty environment instead of the caller's.
    pub clear_env: bool,
    /// Variables set on top of the starting environment.
    pub env: Vec<(String, String)>,
    /// Run as this user (`runas`).
    pub user: Option<User>,
    /// Run with this gid (`group`).
    pub gid: Option<u32>,
    /// The umask as octal digits, already validated.
    pub umask: Option<String>,
    /// Written to the command's stdin (closed when `None`).
    pub stdin: Option<String>,
    /// Run in a process group of its own (whose id is the child's pid).
    pub process_group: bool,
}

impl Spec {
    /// Run `argv` as is (no shell).
    pub fn argv<S: AsRef<str>>(argv: &[S]) -> Spec {
        Spec {
            argv: argv.iter().map(|a| a.as_ref().to_owned()).collect(),
            ..Spec::default()
        }
    }

    /// Run `cmd` with `shell -c` (Salt's `python_shell=True`).
    pub fn shell(shell: &str, cmd: &str) -> Spec {
        Spec::argv(&[shell, "-c", cmd])
    }

    /// Salt's command line: `cmd` through `shell -c` when `python_shell`, else split into
    /// words as `shlex.split` does.
    pub fn line(cmd: &str, python_shell: bool, shell: &str) -> Result<Spec, String> {
        if python_shell {
            return Ok(Spec::shell(shell, cmd));
        }
        let words = shlex::split(cmd)
            .ok_or_else(|| format!("Unable to split command '{cmd}': No closing quotation"))?;
        Ok(Spec::argv(&words))
    }

    /// The argv actually run: [`Spec::argv`] inside the `umask` and `runas`/`group` wrappers.
    pub fn full_argv(&self) -> Vec<String> {
        let mut argv = self.argv.clone();
        if let Some(m) = &self.umask {
            let mut wrapped = vec![
                "/bin/sh".to_owned(),
                "-c".to_owned(),
                "umask \"$0\" && exec \"$@\"".to_owned(),
                m.clone(),
            ];
            wrapped.append(&mut argv);
            argv = wrapped;
        }
        if self.user.is_some() || self.gid.is_some() {
            let mut sw = vec!["setpriv".to_owned()];
            if let Some(u) = &self.user {
                sw.extend(["--reuid".into(), u.uid.to_string()]);
                sw.extend(["--regid".into(), self.gid.unwrap_or(u.gid).to_string()]);
                sw.push("--init-groups".into());
            } else if let Some(g) = self.gid {
                sw.extend(["--regid".into(), g.to_string(), "--keep-groups".into()]);
            }
            sw.push("--".into());
            sw.append(&mut argv);
            argv = sw;
        }
        argv
    }

    /// The process to spawn; stdout and stderr are left to the runner.
    pub fn command(&self) -> Result<Command, String> {
        let argv = self.full_argv();
        let (prog, rest) = argv.split_first().ok_or("empty command")?;
        let mut c = Command::new(prog);
        c.args(rest);
        if let Some(d) = &self.cwd {
            c.current_dir(d);
        }
        if self.clear_env {
            c.env_clear();
        }
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        c.stdin(if self.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        if self.process_group {
            c.process_group(0);
        }
        Ok(c)
    }
}

/// The outcome of one command.
#[derive(Debug, Clone)]
pub struct Out {
    /// The process id it ran as.
    pub pid: u32,
    /// Exit code (-1 when killed by a signal).
    pub retcode: i32,
    /// Standard output, trailing whitespace trimmed as Salt does.
    pub stdout: String,
    /// Standard error, trimmed.
    pub stderr: String,
}

/// Salt's `DPKG_ENV_VARS`.
pub const DPKG_ENV: &[(&str, &str)] = &[
    ("APT_LISTBUGS_FRONTEND", "none"),
    ("APT_LISTCHANGES_FRONTEND", "none"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("UCF_FORCE_CONFFOLD", "1"),
];

/// Run `argv` (no shell) with extra `env`, and `stdin` written (closed when `None`).
pub fn run_env(argv: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Result<Out, String> {
    let spec = Spec {
        env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        stdin: stdin.map(str::to_owned),
        ..Spec::argv(argv)
    };
    spawn(&spec, &argv.join(" "))
}

/// Run `cmd` with `/bin/sh -c` in `cwd`, stdin closed (the `cmd.run` state).
pub fn shell(cmd: &str, cwd: &str) -> Result<Out, String> {
    let spec = Spec {
        cwd: Some(cwd.to_owned()),
        ..Spec::shell("/bin/sh", cmd)
    };
    spawn(&spec, cmd)
}

/// Runs `spec` with its output captured; `shown` is the command as error messages name it.
fn spawn(spec: &Spec, shown: &str) -> Result<Out, String> {
    let mut c = spec.command()?;
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c
        .spawn()
        .map_err(|e| format!("Unable to run command '{shown}': {e}"))?;
    let pid = child.id();
    if let (Some(input), Some(mut pipe)) = (&spec.stdin, child.stdin.take()) {
        use std::io::Write;
        pipe.write_all(input.as_bytes())
            .map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let trim = |b: &[u8]| String::from_utf8_lossy(b).trim_end().to_owned();
    Ok(Out {
        pid,
        retcode: out.status.code().unwrap_or(-1),
        stdout: trim(&out.stdout),
        stderr: trim(&out.stderr),
    })
}

/// Run `argv` (no shell).
pub fn run(argv: &[&str]) -> Result<Out, String> {
    run_env(argv, &[], None)
}

/// Whether `prog` is an executable on `PATH`.
pub fn which(prog: &str) -> bool {
    which_path(prog).is_some()
}

/// Salt's `salt.utils.path.which`: `prog` itself when it is a path to an executable file,
/// else the first executable `PATH` entry of that name.
pub fn which_path(prog: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let exe = |p: &std::path::Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if prog.contains('/') {
        let p = std::path::PathBuf::from(prog);
        return exe(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| exe(p))
}
