//! The `git` command, as Salt 3008's `gitcli` provider uses it: one bare repository per
//! remote (`git init --bare`, `git fetch --prune origin <refspecs>`), refs read with
//! `for-each-ref`, trees with `ls-tree -r -t -z`, blobs with `cat-file`. Every call has a
//! deadline, never prompts, and runs with `LC_ALL=C`; secrets reach `git` only through the
//! environment of the child (never its arguments, never the log).

use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// One tree entry of `ls-tree`.
#[derive(Clone, Debug, Eq, PartialEq)]
pub(crate) struct TreeEntry {
    /// The mode, as git writes it (octal `100644`, `120000`, `040000`, `160000`).
    pub(crate) mode: u32,
    /// `blob`, `tree` or `commit` (a submodule).
    pub(crate) kind: EntryKind,
    /// Object id (hex).
    pub(crate) oid: String,
    /// Full path from the repository root.
    pub(crate) path: String,
}

/// The kinds of tree entries.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum EntryKind {
    /// A file or a symlink.
    Blob,
    /// A directory.
    Tree,
    /// A submodule (not served, as GitPython's `traverse` does not descend into it).
    Commit,
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
    let what = args.first().copied().unwrap_or("git");
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
            // BatchMode: no prompt; host keys are checked as ssh always does.
            let quoted = key.to_string_lossy().replace('\'', "'\\''");
            cmd.env(
                "GIT_SSH_COMMAND",
                format!("ssh -i '{quoted}' -o IdentitiesOnly=yes -o BatchMode=yes"),
            );
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
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
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

/// Makes `dir` a bare repository whose `origin` is `remote.url` (kept up to date).
pub(crate) fn init(dir: &Path, remote: &Remote) -> Result<(), GitError> {
    std::fs::create_dir_all(dir).map_err(|e| GitError::new("init", e.to_string()))?;
    if !dir.join("HEAD").exists() {
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
    Ok(())
}

/// `git fetch --prune origin <refspecs>`.
pub(crate) fn fetch(dir: &Path, remote: &Remote) -> Result<(), GitError> {
    let mut args = vec![
        "fetch",
        "--prune",
        "--quiet",
        "--no-write-fetch-head",
        "origin",
    ];
    args.extend(remote.refspecs.iter().map(String::as_str));
    run(dir, &args, Some(remote), None, FETCH_TIMEOUT).map(|_| ())
}

/// The branches (`refs/remotes/origin/*`) and tags (`refs/tags/*`) as name → commit id
/// (annotated tags peeled).
pub(crate) fn refs(dir: &Path) -> Result<Refs, GitError> {
    let out = run(
        dir,
        &[
            "for-each-ref",
            "--format=%(objectname) %(*objectname) %(refname)",
            "refs/remotes/origin/",
            "refs/tags/",
        ],
        None,
        None,
        LOCAL_TIMEOUT,
    )?;
    let mut refs = Refs::default();
    for line in String::from_utf8_lossy(&out).lines() {
        let mut parts = line.splitn(3, ' ');
        let (Some(oid), Some(peeled), Some(name)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let commit = if peeled.is_empty() { oid } else { peeled }.to_owned();
        if let Some(b) = name.strip_prefix("refs/remotes/origin/") {
            if b != "HEAD" {
                refs.branches.insert(b.to_owned(), commit);
            }
        } else if let Some(t) = name.strip_prefix("refs/tags/") {
            refs.tags.insert(t.to_owned(), commit);
        }
    }
    Ok(refs)
}

/// A remote's refs.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub(crate) struct Refs {
    /// Branch name → commit.
    pub(crate) branches: HashMap<String, String>,
    /// Tag name → commit.
    pub(crate) tags: HashMap<String, String>,
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

/// Every entry of `commit`'s tree, recursively (`ls-tree -r -t -z --full-tree`).
pub(crate) fn ls_tree(dir: &Path, commit: &str) -> Result<Vec<TreeEntry>, GitError> {
    let out = run(
        dir,
        &["ls-tree", "-r", "-t", "-z", "--full-tree", commit],
        None,
        None,
        LOCAL_TIMEOUT,
    )?;
    let mut entries = Vec::new();
    for rec in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let Some(tab) = rec.iter().position(|b| *b == b'\t') else {
            continue;
        };
        let Ok(path) = std::str::from_utf8(&rec[tab + 1..]) else {
            tracing::debug!("gitfs: skipping a non-UTF-8 path in {commit}");
            continue;
        };
        let head = String::from_utf8_lossy(&rec[..tab]);
        let mut f = head.split(' ');
        let (Some(mode), Some(kind), Some(oid)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let kind = match kind {
            "blob" => EntryKind::Blob,
            "tree" => EntryKind::Tree,
            _ => EntryKind::Commit,
        };
        entries.push(TreeEntry {
            mode: u32::from_str_radix(mode, 8).unwrap_or(0),
            kind,
            oid: oid.to_owned(),
            path: path.to_owned(),
        });
    }
    Ok(entries)
}

/// The contents of the blobs `oids`, in order (`cat-file --batch`).
pub(crate) fn read_blobs(dir: &Path, oids: &[&str]) -> Result<Vec<Vec<u8>>, GitError> {
    if oids.is_empty() {
        return Ok(Vec::new());
    }
    let mut input = oids.join("\n").into_bytes();
    input.push(b'\n');
    let out = run(
        dir,
        &["cat-file", "--batch"],
        None,
        Some(&input),
        LOCAL_TIMEOUT,
    )?;
    let mut blobs = Vec::with_capacity(oids.len());
    let mut at = 0;
    for oid in oids {
        let nl = out[at..]
            .iter()
            .position(|b| *b == b'\n')
            .ok_or_else(|| GitError::new("cat-file", "short output"))?;
        let header = String::from_utf8_lossy(&out[at..at + nl]).into_owned();
        at += nl + 1;
        let size: usize = header
            .rsplit(' ')
            .next()
            .and_then(|s| s.parse().ok())
            .filter(|_| header.contains(" blob "))
            .ok_or_else(|| GitError::new("cat-file", format!("{oid}: {header}")))?;
        let end = at
            .checked_add(size)
            .filter(|e| *e <= out.len())
            .ok_or_else(|| GitError::new("cat-file", "short output"))?;
        blobs.push(out[at..end].to_vec());
        at = end + 1;
    }
    Ok(blobs)
}

/// The contents of one blob.
pub(crate) fn read_blob(dir: &Path, oid: &str) -> Result<Vec<u8>, GitError> {
    run(dir, &["cat-file", "blob", oid], None, None, LOCAL_TIMEOUT)
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
