//! Running short-lived commands (`salt`, `salt-key`, `ip`, `nft`) with a timeout.
//!
//! Each command runs in its own process group, which is killed when the timeout expires, so a
//! hung `salt` (waiting on a frozen master, say) never hangs the test.

use std::io::Read;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::error::HarnessError;

/// What a finished (or timed-out) command produced.
#[derive(Debug, Clone)]
pub struct CmdOutput {
    /// The command line.
    pub cmd: String,
    /// Exit status (`None` when it was killed on timeout).
    pub status: Option<ExitStatus>,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
    /// How long it ran.
    pub elapsed: Duration,
}

impl CmdOutput {
    /// Exited with status 0.
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }
    /// Ok if it succeeded, else a [`HarnessError::Command`] with its stderr.
    pub fn ok(self) -> Result<Self, HarnessError> {
        if self.success() {
            Ok(self)
        } else {
            Err(HarnessError::Command {
                cmd: self.cmd.clone(),
                status: self
                    .status
                    .map_or_else(|| "timed out".to_string(), |s| s.to_string()),
                stderr: format!("{}{}", tail(&self.stdout, 2000), tail(&self.stderr, 2000)),
            })
        }
    }
}

fn tail(s: &str, n: usize) -> &str {
    let mut from = s.len().saturating_sub(n);
    while !s.is_char_boundary(from) {
        from += 1;
    }
    s.get(from..).unwrap_or_default()
}

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Runs `cmd` to completion or until `timeout` (not scaled: callers choose), capturing output.
pub fn run_with_timeout(mut cmd: Command, timeout: Duration) -> Result<CmdOutput, HarnessError> {
    let line = describe(&cmd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let t0 = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| HarnessError::io(format!("starting {line}"), e))?;
    let pgid = i32::try_from(child.id()).map(Pid::from_raw).ok();
    let mut out_pipe = child.stdout.take();
    let mut err_pipe = child.stderr.take();
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(p) = out_pipe.as_mut() {
            let _ = p.read_to_end(&mut s);
        }
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(p) = err_pipe.as_mut() {
            let _ = p.read_to_end(&mut s);
        }
        s
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if t0.elapsed() >= timeout => {
                if let Some(g) = pgid {
                    let _ = killpg(g, Signal::SIGKILL);
                }
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(HarnessError::io(format!("waiting for {line}"), e)),
        }
    };
    let elapsed = t0.elapsed();
    // Children of the command may still hold the pipes: make sure the group is gone.
    if let Some(g) = pgid {
        let _ = killpg(g, Signal::SIGKILL);
    }
    let stdout = String::from_utf8_lossy(&out_reader.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    Ok(CmdOutput {
        cmd: line,
        status,
        stdout,
        stderr,
        elapsed,
    })
}

/// A `Command` for `program`, inside network namespace `ns` if given (`ip netns exec`).
pub fn command_in(ns: Option<&str>, program: &Path) -> Command {
    match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns]).arg(program);
            c
        }
        None => Command::new(program),
    }
}

/// Runs `salt -c <conf_dir> <args...>` (ours or real Salt's, by `salt_bin`) with a timeout.
pub fn salt(
    salt_bin: &Path,
    ns: Option<&str>,
    conf_dir: &Path,
    args: &[&str],
    timeout: Duration,
) -> Result<CmdOutput, HarnessError> {
    let mut c = command_in(ns, salt_bin);
    c.arg("-c").arg(conf_dir).args(args);
    run_with_timeout(c, timeout)
}

/// Runs `salt-key -c <conf_dir> <args...>` with a timeout.
pub fn salt_key(
    key_bin: &Path,
    conf_dir: &Path,
    args: &[&str],
    timeout: Duration,
) -> Result<CmdOutput, HarnessError> {
    let mut c = Command::new(key_bin);
    c.arg("-c").arg(conf_dir).args(args);
    run_with_timeout(c, timeout)
}

/// Whether a `salt <tgt> test.ping` output shows `id` answering `True`, in Salt's default
/// (nested) or JSON output.
pub fn ping_answered(out: &CmdOutput, id: &str) -> bool {
    let text = &out.stdout;
    let mut lines = text.lines().map(str::trim);
    while let Some(l) = lines.next() {
        if l == format!("{id}:") {
            return lines.next().is_some_and(|v| v == "True");
        }
        if l.contains(&format!("\"{id}\": true")) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_kills_the_command() {
        let mut c = Command::new("/bin/sh");
        c.args(["-c", "echo x; sleep 30"]);
        let out = run_with_timeout(c, Duration::from_millis(300)).unwrap();
        assert!(out.status.is_none());
        assert!(out.elapsed < Duration::from_secs(5));
        assert_eq!(out.stdout, "x\n");
        assert!(out.ok().is_err());
    }

    #[test]
    fn ping_output_forms() {
        let mk = |s: &str| CmdOutput {
            cmd: String::new(),
            status: None,
            stdout: s.into(),
            stderr: String::new(),
            elapsed: Duration::ZERO,
        };
        assert!(ping_answered(&mk("m1:\n    True\n"), "m1"));
        assert!(!ping_answered(
            &mk("m1:\n    Minion did not return. [No response]\n"),
            "m1"
        ));
        assert!(ping_answered(&mk("{\"m1\": true}\n"), "m1"));
        assert!(!ping_answered(&mk("m10:\n    True\n"), "m1"));
    }
}
