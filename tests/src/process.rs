//! Daemons as child processes that cannot outlive the test.
//!
//! A [`Proc`] is started in its own process group (`process_group(0)`, i.e. `setpgid(0, 0)`),
//! so signals reach every process it forks (real Salt forks several) and nothing else. Dropping
//! it sends SIGTERM (and SIGCONT, in case it was frozen) to the group, waits a grace period,
//! then SIGKILLs the group and reaps the child. stdout and stderr go to `<name>.out` /
//! `<name>.err` in the daemon's directory (appended across restarts; each start remembers where
//! its own output begins), and further log files (the daemon's `log_file`) can be attached for
//! [`crate::wait_for_log`].

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::error::HarnessError;

/// Grace between SIGTERM and SIGKILL on drop (Salt's minion takes ~5 s to flush; we do not
/// wait for that in tests).
pub const DROP_GRACE: Duration = Duration::from_secs(3);

/// How to start a daemon: enough to start it again after a stop.
#[derive(Debug, Clone)]
pub struct ProcSpec {
    /// Short name, used for output file names and messages.
    pub name: String,
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Extra environment.
    pub env: Vec<(OsString, OsString)>,
    /// Run inside this network namespace (`ip netns exec NS program args`; `ip` execs the
    /// program, so the pid is the daemon's).
    pub netns: Option<String>,
    /// Directory for `<name>.out` / `<name>.err` (also the working directory).
    pub dir: PathBuf,
    /// Log files to search besides stdout/stderr.
    pub logs: Vec<PathBuf>,
}

impl ProcSpec {
    /// A spec for `program` named `name`, output in `dir`.
    pub fn new(name: &str, program: impl Into<PathBuf>, dir: impl Into<PathBuf>) -> Self {
        Self {
            name: name.into(),
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            netns: None,
            dir: dir.into(),
            logs: Vec::new(),
        }
    }
    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }
    /// Adds an environment variable.
    pub fn env(mut self, k: impl Into<OsString>, v: impl Into<OsString>) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }
    /// Runs it inside network namespace `ns`.
    pub fn netns(mut self, ns: Option<&str>) -> Self {
        self.netns = ns.map(str::to_string);
        self
    }
    /// Also searches `path` in [`crate::wait_for_log`].
    pub fn log(mut self, path: impl Into<PathBuf>) -> Self {
        self.logs.push(path.into());
        self
    }
    /// The command line, for messages.
    pub fn display(&self) -> String {
        let mut s = String::new();
        if let Some(ns) = &self.netns {
            s.push_str(&format!("ip netns exec {ns} "));
        }
        s.push_str(&self.program.display().to_string());
        for a in &self.args {
            s.push(' ');
            s.push_str(&a.to_string_lossy());
        }
        s
    }
    /// Starts it.
    pub fn spawn(&self) -> Result<Proc, HarnessError> {
        Proc::spawn(self.clone())
    }
}

/// A running daemon in its own process group; killed (group-wide) and reaped on drop.
#[derive(Debug)]
pub struct Proc {
    spec: ProcSpec,
    child: Option<Child>,
    pgid: Pid,
    started: Instant,
    /// `(file, offset where this start's output begins)`.
    outputs: Vec<(PathBuf, u64)>,
    status: Option<ExitStatus>,
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

impl Proc {
    /// Starts `spec` in a new process group.
    pub fn spawn(spec: ProcSpec) -> Result<Self, HarnessError> {
        std::fs::create_dir_all(&spec.dir)
            .map_err(|e| HarnessError::io(spec.dir.display().to_string(), e))?;
        let out_path = spec.dir.join(format!("{}.out", spec.name));
        let err_path = spec.dir.join(format!("{}.err", spec.name));
        let mut outputs = vec![
            (out_path.clone(), file_len(&out_path)),
            (err_path.clone(), file_len(&err_path)),
        ];
        outputs.extend(spec.logs.iter().map(|p| (p.clone(), file_len(p))));
        let open = |p: &Path| -> Result<File, HarnessError> {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| HarnessError::io(p.display().to_string(), e))
        };
        let mut cmd = match &spec.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(&spec.program);
                c
            }
            None => Command::new(&spec.program),
        };
        cmd.args(&spec.args)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&spec.dir)
            .stdin(Stdio::null())
            .stdout(open(&out_path)?)
            .stderr(open(&err_path)?);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd
            .spawn()
            .map_err(|e| HarnessError::io(format!("starting {}", spec.display()), e))?;
        let raw = i32::try_from(child.id())
            .map_err(|_| HarnessError::Netns(format!("pid {} out of range", child.id())))?;
        Ok(Self {
            spec,
            child: Some(child),
            pgid: Pid::from_raw(raw),
            started: Instant::now(),
            outputs,
            status: None,
        })
    }

    /// The spec it was started from.
    pub fn spec(&self) -> &ProcSpec {
        &self.spec
    }
    /// Its name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }
    /// The leader's pid (= the process group id).
    pub fn pid(&self) -> i32 {
        self.pgid.as_raw()
    }
    /// When it was started.
    pub fn started(&self) -> Instant {
        self.started
    }
    /// Where its stdout goes.
    pub fn stdout_path(&self) -> PathBuf {
        self.spec.dir.join(format!("{}.out", self.spec.name))
    }

    /// Sends `sig` to its whole process group (errors such as "no such process" are ignored:
    /// the group may already be gone).
    pub fn signal(&self, sig: Signal) {
        let _ = killpg(self.pgid, sig);
    }

    /// Whether the leader is still running (reaps it if it exited).
    pub fn is_running(&mut self) -> bool {
        self.exit_status().is_none()
    }

    /// The leader's exit status, if it has exited.
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none()
            && let Some(c) = self.child.as_mut()
            && let Ok(Some(st)) = c.try_wait()
        {
            self.status = Some(st);
        }
        self.status
    }

    /// Fails if it has exited (with where to look).
    pub fn check_running(&mut self) -> Result<(), HarnessError> {
        match self.exit_status() {
            None => Ok(()),
            Some(st) => Err(HarnessError::Exited {
                name: self.spec.name.clone(),
                status: st.to_string(),
                log: self.stdout_path(),
                tail: self.tail(20),
            }),
        }
    }

    /// Waits up to `timeout` for the leader to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = self.exit_status() {
                return Some(st);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGTERM (plus SIGCONT) to the group, up to `grace` for the leader to exit, then SIGKILL
    /// to the group; reaps the leader. Returns its exit status.
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        if self.exit_status().is_none() {
            self.signal(Signal::SIGTERM);
            self.signal(Signal::SIGCONT);
            self.wait_exit(grace);
        }
        // Children of the leader may outlive it (real Salt): the group goes in any case.
        self.signal(Signal::SIGKILL);
        if self.exit_status().is_none()
            && let Some(c) = self.child.as_mut()
            && let Ok(st) = c.wait()
        {
            self.status = Some(st);
        }
        self.status
    }

    /// Stops it (see [`Proc::stop`]) and starts it again from the same spec.
    pub fn restart(&mut self) -> Result<(), HarnessError> {
        self.stop(DROP_GRACE);
        let fresh = Self::spawn(self.spec.clone())?;
        // Old `self` has been stopped and reaped; replacing it runs its Drop, which only
        // signals a group that no longer exists.
        *self = fresh;
        Ok(())
    }

    /// Everything this start wrote to stdout, stderr and the attached logs, concatenated.
    pub fn output(&self) -> String {
        let mut all = String::new();
        for (path, start) in &self.outputs {
            all.push_str(&read_from(path, *start));
        }
        all
    }

    /// The last `n` lines of [`Proc::output`], for failure messages.
    pub fn tail(&self, n: usize) -> String {
        let all = self.output();
        let lines: Vec<&str> = all.lines().collect();
        let from = lines.len().saturating_sub(n);
        lines.get(from..).unwrap_or_default().join("\n")
    }
}

fn read_from(path: &Path, start: u64) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let mut buf = Vec::new();
    if f.read_to_end(&mut buf).is_err() {
        return String::new();
    }
    let start = usize::try_from(start).unwrap_or(0).min(buf.len());
    String::from_utf8_lossy(buf.get(start..).unwrap_or_default()).into_owned()
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.stop(DROP_GRACE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_kills_the_whole_group_and_captures_output() {
        let dir = tempfile::tempdir().unwrap();
        let spec = ProcSpec::new("sh", "/bin/sh", dir.path())
            .args(["-c", "echo started; sleep 1000 & echo child $!; wait"]);
        let p = spec.spawn().unwrap();
        let child_pid = crate::wait::wait_until_some(Duration::from_secs(5), || {
            p.output()
                .lines()
                .find_map(|l| l.strip_prefix("child ")?.trim().parse::<i32>().ok())
        })
        .unwrap();
        assert!(p.output().contains("started"));
        drop(p);
        // The grandchild was in the group: it is gone too (or a zombie waiting for init).
        let dead = || match std::fs::read_to_string(format!("/proc/{child_pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
        };
        crate::wait_until("the grandchild to die", Duration::from_secs(5), dead)
            .expect("grandchild survived the group kill");
    }

    #[test]
    fn restart_keeps_output_per_start() {
        let dir = tempfile::tempdir().unwrap();
        let spec =
            ProcSpec::new("e", "/bin/sh", dir.path()).args(["-c", "echo hi; exec sleep 100"]);
        let mut p = spec.spawn().unwrap();
        crate::wait_for_log(&p, "hi", Duration::from_secs(5)).unwrap();
        p.restart().unwrap();
        crate::wait_for_log(&p, "hi", Duration::from_secs(5)).unwrap();
        assert_eq!(p.output().matches("hi").count(), 1);
        assert!(p.is_running());
        p.stop(Duration::from_secs(2));
        assert!(!p.is_running());
    }
}
