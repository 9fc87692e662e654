//! Git repositories on disk for tests (gitfs, git_pillar): the `git` command with a fixed
//! identity and no signing, and file writes that make their directories.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `git <args>` in `dir` as user `t`, default branch `master`, no signing; panics with
/// git's stderr when it fails (a test's repository could not be made).
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(["-c", "init.defaultBranch=master", "-c", "tag.gpgSign=false"])
        .args(["-c", "commit.gpgSign=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: cannot run git: {e}"));
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes `data` to `root/rel`, creating its directories; panics when it cannot.
pub fn write_file(root: &Path, rel: &str, data: &str) {
    let p = root.join(rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{}: {e}", parent.display()));
    }
    std::fs::write(&p, data).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
}

/// A bare repository `<name>.git` under `base`, cloned from the work tree `<name>` that
/// `build` fills (its branches and commits); returns (work tree, bare repository).
pub fn bare(base: &Path, name: &str, build: impl FnOnce(&Path)) -> (PathBuf, PathBuf) {
    let work = base.join(name);
    std::fs::create_dir_all(&work).unwrap_or_else(|e| panic!("{}: {e}", work.display()));
    git(&work, &["init", "-q"]);
    build(&work);
    let repo = base.join(format!("{name}.git"));
    let target = repo.to_string_lossy().into_owned();
    git(base, &["clone", "-q", "--bare", name, &target]);
    (work, repo)
}

/// Commit everything in the work tree `work` with `msg`.
pub fn commit(work: &Path, msg: &str) {
    git(work, &["add", "-A"]);
    git(work, &["commit", "-q", "-m", msg]);
}
