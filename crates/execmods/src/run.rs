//! Running commands: the system tools the modules wrap (`cmd.run_all` with
//! `python_shell=False`) and the `cmd.run` state's shell commands. The minion's `cmd.*`
//! execution functions (`runas`, `timeout`, process groups, async) are
//! `salt_minion_core::cmdmod`.

use std::process::{Command, Stdio};

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

/// Run `argv` (no shell) with extra `env`, stdin closed.
pub fn run_env(argv: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Result<Out, String> {
    let (prog, rest) = argv.split_first().ok_or("empty command")?;
    let mut c = Command::new(prog);
    c.args(rest).envs(env.iter().copied());
    spawn(c, &argv.join(" "), stdin)
}

/// Run `cmd` with `/bin/sh -c` in `cwd`, stdin closed (the `cmd.run` state).
pub fn shell(cmd: &str, cwd: &str) -> Result<Out, String> {
    let mut c = Command::new("/bin/sh");
    c.arg("-c").arg(cmd).current_dir(cwd);
    spawn(c, cmd, None)
}

/// Runs `c` with its output captured and `stdin` written (closed when `None`); `shown` is
/// the command as error messages name it.
fn spawn(mut c: Command, shown: &str, stdin: Option<&str>) -> Result<Out, String> {
    c.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c
        .spawn()
        .map_err(|e| format!("Unable to run command '{shown}': {e}"))?;
    let pid = child.id();
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
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
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
        .unwrap_or(false)
}
