//! The `git` command, as Salt 3008's `gitcli` provider uses it: one bare repository per
//! remote (`git init --bare`, `git fetch --prune origin <refspecs>` for ssh and https
//! remotes; a local remote is fetched in-process, [`super::libgit`], which also reads refs,
//! trees and blobs), `git archive` for git_pillar's export. Every call has a deadline, never
//! prompts, and runs with `LC_ALL=C`; secrets reach `git` only through the environment of the
//! child (never its arguments, never the log).

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::libgit;
use super::remote::Remote;

/// Longest a fetch may take.
pub(crate) const FETCH_TIMEOUT: Duration = Duration::from_secs(300);
/// Longest a local command (refs, trees, blobs) may take.
const LOCAL_TIMEOUT: Duration = Duration::from_secs(60);

/// A git command that failed: what was run and what git said.
#[derive(Debug, thiserror::Error)]
#[error("git {what}: {detail}")]
pub(crate) struct GitError {
    what: String,
    detail: String,
}

impl GitError {
    pub(crate) fn new(what: &str, detail: impl Into<String>) -> Self {
        Self {
            what: what.to_owned(),
            detail: detail.into(),
        }
    }
}

/// Runs `git` with `args` in `dir` for `remote` (its TLS and credential settings), `input`
/// on stdin; stdout on success.
fn run(
    dir: &Path,
    args: &[&str],
    remote: Option<&Remote>,
    input: Option<&[u8]>,
    timeout: Duration,
) -> Result<Vec<u8>, GitError> {
    // The subcommand (past any leading `-c name=value`).
    let what = args
        .iter()
        .enumerate()
        .find(|&(i, a)| *a != "-c" && (i == 0 || args[i - 1] != "-c"))
        .map_or("git", |(_, a)| *a);
    let mut cmd = Command::new("git");
    cmd.arg("-c")
        .arg("core.quotepath=false")
        .current_dir(dir)
        .env("LC_ALL", "C")
        .env("LANGUAGE", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "true")
        .env("SSH_ASKPASS", "true")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE");
    if let Some(r) = remote {
        if !r.ssl_verify {
            cmd.env("GIT_SSL_NO_VERIFY", "true");
        }
        if let Some(key) = &r.privkey {
            cmd.env("GIT_SSH_COMMAND", ssh_command(key));
        }
        if let (Some(user), Some(password)) = (&r.user, &r.password) {
            cmd.arg("-c").arg("credential.helper=").arg("-c").arg(
                "credential.helper=!f() { echo \"username=$SALTRS_GITFS_USER\"; \
                 echo \"password=$SALTRS_GITFS_PASSWORD\"; }; f",
            );
            cmd.env("SALTRS_GITFS_USER", user);
            cmd.env("SALTRS_GITFS_PASSWORD", password.expose());
        }
    }
    cmd.args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| GitError::new(what, format!("cannot run git: {e}")))?;
    // Readers on their own threads: a full pipe must not stall the child.
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let out_t = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(o) = out.as_mut() {
            let _ = o.read_to_end(&mut buf);
        }
        buf
    });
    let err_t = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_end(&mut buf);
        }
        buf
    });
    if let (Some(data), Some(mut stdin)) = (input, child.stdin.take()) {
        let _ = stdin.write_all(data);
    }
    let deadline = Instant::now() + timeout;
    // Most commands end within a few ms: poll often at first, then every 2 ms.
    let mut pause = Duration::from_micros(50);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(GitError::new(
                    what,
                    format!("timed out after {} s", timeout.as_secs()),
                ));
            }
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(2));
            }
            Err(e) => return Err(GitError::new(what, e.to_string())),
        }
    };
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    if !status.success() {
        let msg = String::from_utf8_lossy(&stderr);
        let msg = msg.trim();
        return Err(GitError::new(
            what,
            if msg.is_empty() {
                status.to_string()
            } else {
                msg.chars().take(2000).collect()
            },
        ));
    }
    Ok(stdout)
}

/// The ssh command for a remote's `privkey`: the master's own `GIT_SSH_COMMAND` (else
/// `ssh`) with the key, `IdentitiesOnly` and `BatchMode` (no prompt; host keys are checked as
/// that ssh command checks them).
fn ssh_command(key: &Path) -> String {
    let base = std::env::var("GIT_SSH_COMMAND")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .unwrap_or_else(|| "ssh".to_owned());
    let quoted = key.to_string_lossy().replace('\'', "'\\''");
    format!("{base} -i '{quoted}' -o IdentitiesOnly=yes -o BatchMode=yes")
}

/// Makes `dir` a bare repository whose `origin` is `remote.url` (kept up to date; checked
/// once per process while the repository stays).
pub(crate) fn init(dir: &Path, remote: &Remote) -> Result<(), GitError> {
    let exists = dir.join("HEAD").exists();
    if exists && remote.origin_checked.load(Ordering::Acquire) {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|e| GitError::new("init", e.to_string()))?;
    if !exists {
        run(
            dir,
            &["init", "--bare", "--quiet"],
            None,
            None,
            LOCAL_TIMEOUT,
        )?;
    }
    let current = run(
        dir,
        &["config", "--get", "remote.origin.url"],
        None,
        None,
        LOCAL_TIMEOUT,
    )
    .ok();
    if current
        .as_deref()
        .map(|c| String::from_utf8_lossy(c).trim().to_owned())
        != Some(remote.url.clone())
    {
        run(
            dir,
            &["config", "remote.origin.url", &remote.url],
            None,
            None,
            LOCAL_TIMEOUT,
        )?;
    }
    remote.origin_checked.store(true, Ordering::Release);
    Ok(())
}

/// git's auto maintenance (`git maintenance run --auto`: gc when loose objects or packs pile
/// up) runs after every this many fetches of a remote, not after each (a process per fetch).
pub(crate) const MAINTENANCE_EVERY: u32 = 16;

/// `git fetch --prune origin <refspecs>` (in-process for a local remote, [`libgit::fetch`]; by
/// the `git` command if that fails, which then says why); every [`MAINTENANCE_EVERY`]th fetch
/// of the remote (the first included) is followed by `git maintenance run --auto`.
pub(crate) fn fetch(dir: &Path, remote: &Remote) -> Result<(), GitError> {
    let in_process = libgit::is_local(&remote.url)
        && libgit::fetch(dir, &remote.url, &remote.refspecs)
            .inspect_err(|e| {
                tracing::debug!(
                    "gitfs remote '{}': in-process fetch failed ({e}); running git fetch",
                    remote.id
                );
            })
            .is_ok();
    if !in_process {
        fetch_command(dir, remote)?;
    }
    let due = remote
        .fetches
        .fetch_add(1, Ordering::Relaxed)
        .is_multiple_of(MAINTENANCE_EVERY);
    if due
        && let Err(e) = run(
            dir,
            &["maintenance", "run", "--auto", "--quiet"],
            None,
            None,
            FETCH_TIMEOUT,
        )
    {
        tracing::warn!("gitfs remote '{}': {e}", remote.id);
    }
    Ok(())
}

/// `git fetch --prune origin <refspecs>` by the `git` command.
fn fetch_command(dir: &Path, remote: &Remote) -> Result<(), GitError> {
    // `fetch.unpackLimit=1`: the fetched pack is kept as it came (`index-pack`), not
    // exploded into loose objects (`unpack-objects`, ~5 ms more per small fetch); gc's
    // `autoPackLimit` repacks them in the maintenance below.
    let mut args = vec![
        "-c",
        "maintenance.auto=false",
        "-c",
        "fetch.unpackLimit=1",
        "fetch",
        "--prune",
        "--quiet",
        "--no-write-fetch-head",
        "origin",
    ];
    args.extend(remote.refspecs.iter().map(String::as_str));
    run(dir, &args, Some(remote), None, FETCH_TIMEOUT).map(drop)
}

/// The commit a hex prefix names, if it names one.
pub(crate) fn resolve_commit(dir: &Path, sha: &str) -> Option<String> {
    let spec = format!("{sha}^{{commit}}");
    let out = run(
        dir,
        &["rev-parse", "--verify", "--quiet", &spec],
        None,
        None,
        LOCAL_TIMEOUT,
    )
    .ok()?;
    let s = String::from_utf8_lossy(&out).trim().to_owned();
    (!s.is_empty()).then_some(s)
}

/// `<cachedir>/gitfs/work/<hash>/_/<type>.lk`: Salt's lock files, `pid\nmachine_id\n`.
pub(crate) fn lock_file(workdir: &Path, lock_type: &str) -> PathBuf {
    workdir.join(format!("{lock_type}.lk"))
}

/// What [`take_lock`] found.
#[derive(Debug)]
pub(crate) enum Lock {
    /// Taken (remove it when done).
    Taken(PathBuf),
    /// Held by another process: the warning to log.
    Busy(String),
}

/// Salt's `GitProvider._lock`: create the lock file exclusively; a stale one (its process
/// gone, same machine — or any machine without `gitfs_global_lock`) is taken over.
pub(crate) fn take_lock(
    workdir: &Path,
    remote_id: &str,
    machine_id: &str,
    global_lock: bool,
) -> std::io::Result<Lock> {
    std::fs::create_dir_all(workdir)?;
    let path = lock_file(workdir, "update");
    for _ in 0..2 {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                f.write_all(format!("{}\n{machine_id}\n", std::process::id()).as_bytes())?;
                return Ok(Lock::Taken(path));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let mut lines = text.lines();
                let pid: u32 = lines
                    .next()
                    .and_then(|l| l.trim().parse().ok())
                    .unwrap_or(0);
                let their_machine = lines.next().unwrap_or("").trim().to_owned();
                let running = pid != 0 && Path::new(&format!("/proc/{pid}")).exists();
                let stale = !running && (!global_lock || their_machine == machine_id);
                if !stale {
                    return Ok(Lock::Busy(format!(
                        "Update lock file is present for gitfs remote '{remote_id}' (pid \
                         {pid}, machine_id {their_machine}), skipping. Removing {} or running \
                         'salt-run cache.clear_git_lock gitfs type=update' will allow updates \
                         to continue for this remote.",
                        path.display()
                    )));
                }
                tracing::warn!(
                    "Process {pid} has a gitfs update lock ({}) but is not running. Cleaning \
                     up lock file.",
                    path.display()
                );
                let _ = std::fs::remove_file(&path);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Lock::Busy(format!(
        "Unable to set update lock for {remote_id} ({})",
        path.display()
    )))
}

/// `/etc/machine-id` (or D-Bus's), as Salt's `get_machine_identifier`.
pub(crate) fn machine_id() -> String {
    ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "no_machine_id_available".to_owned())
}

/// Writes the tree of `commit` under `dest` (created): `git archive` read by `tar -x`.
pub(crate) fn export(dir: &Path, commit: &str, dest: &Path) -> Result<(), GitError> {
    let archive = run(
        dir,
        &["archive", "--format=tar", commit],
        None,
        None,
        LOCAL_TIMEOUT,
    )?;
    let fail = |e: String| GitError::new("archive", e);
    std::fs::create_dir_all(dest).map_err(|e| fail(e.to_string()))?;
    let mut child = Command::new("tar")
        .args(["-x", "-f", "-", "-C"])
        .arg(dest)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| fail(format!("cannot run tar: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(&archive)
            .map_err(|e| fail(format!("tar: {e}")))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| fail(format!("tar: {e}")))?;
    if !out.status.success() {
        return Err(fail(format!(
            "tar: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// `cache.clear_git_lock <role>`: removes the `lock_types` lock files of the remotes whose URL
/// matches the glob `remote` (all without one); (what was removed, what could not be).
pub(crate) fn clear_locks<'a>(
    role: &str,
    remotes: impl Iterator<Item = &'a Remote>,
    machine_id: &str,
    remote: Option<&str>,
    lock_types: &[String],
) -> (Vec<String>, Vec<String>) {
    let remotes: Vec<&Remote> = remotes.collect();
    let pattern = remote.map(salt_keystore::GlobList::single);
    let mut cleared = Vec::new();
    let mut errors = Vec::new();
    for lock_type in lock_types {
        for r in &remotes {
            if let Some(p) = &pattern
                && !p.as_ref().is_ok_and(|g| g.is_match(&r.url))
            {
                continue;
            }
            let path = lock_file(&r.work_dir, lock_type);
            match std::fs::remove_file(&path) {
                Ok(()) => cleared.push(format!(
                    "Removed {lock_type} lock for {role} remote '{}' on machine_id '{}'",
                    r.id, machine_id
                )),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => errors.push(format!(
                    "Unable to remove update lock for {} ({}): {e} ",
                    r.url,
                    path.display()
                )),
            }
        }
    }
    (cleared, errors)
}
