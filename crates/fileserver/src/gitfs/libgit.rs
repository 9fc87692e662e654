//! git in-process through libgit2 (the `git2` crate, vendored, no TLS or ssh): the fetch of a
//! `file://` or local-path remote (libgit2's local transport reads the source repository's
//! objects itself, where `git fetch` runs `upload-pack`, `pack-objects`, `index-pack` and
//! `rev-list` as processes), and the bare caches' refs, trees and blobs, read as
//! `for-each-ref`, `ls-tree -r -t` and `cat-file` would print them. ssh and https remotes are
//! fetched by the `git` command ([`super::git::fetch`]).

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use git2::{AutotagOption, FetchOptions, FetchPrune, ObjectType, Oid, RemoteCallbacks, Repository};

use super::git::{FETCH_TIMEOUT, GitError};

/// One tree entry, as a line of `ls-tree`.
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

/// A remote's refs.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub(crate) struct Refs {
    /// Branch name → commit.
    pub(crate) branches: HashMap<String, String>,
    /// Tag name → commit.
    pub(crate) tags: HashMap<String, String>,
}

fn fail(what: &str) -> impl Fn(git2::Error) -> GitError + '_ {
    move |e| GitError::new(what, e.message().to_owned())
}

fn open(dir: &Path, what: &str) -> Result<Repository, GitError> {
    Repository::open_bare(dir).map_err(fail(what))
}

/// Whether `url` names a repository on this host (`file://` or an absolute path): fetched
/// in-process by [`fetch`].
pub(crate) fn is_local(url: &str) -> bool {
    url.starts_with("file://") || Path::new(url).is_absolute()
}

/// `git fetch --prune --no-write-fetch-head <url> <refspecs>` of a local remote, in-process
/// (tags pointing into what is fetched are followed, as `git fetch` does by default;
/// `FETCH_HEAD` is left empty, libgit2 truncates it); the pack is kept as it came, as with
/// `fetch.unpackLimit=1`. Given up after [`FETCH_TIMEOUT`].
pub(crate) fn fetch(dir: &Path, url: &str, refspecs: &[String]) -> Result<(), GitError> {
    let repo = open(dir, "fetch")?;
    let mut origin = repo.remote_anonymous(url).map_err(fail("fetch"))?;
    let start = Instant::now();
    let mut callbacks = RemoteCallbacks::new();
    callbacks.transfer_progress(move |_| start.elapsed() < FETCH_TIMEOUT);
    let mut opts = FetchOptions::new();
    opts.remote_callbacks(callbacks)
        .prune(FetchPrune::On)
        .download_tags(AutotagOption::Auto)
        .update_fetchhead(false);
    origin
        .fetch(refspecs, Some(&mut opts), None)
        .map_err(fail("fetch"))
}

/// The branches (`refs/remotes/origin/*`) and tags (`refs/tags/*`) as name → commit id
/// (annotated tags peeled one level, as `for-each-ref`'s `%(*objectname)`).
pub(crate) fn refs(dir: &Path) -> Result<Refs, GitError> {
    let repo = open(dir, "for-each-ref")?;
    let mut refs = Refs::default();
    for r in repo.references().map_err(fail("for-each-ref"))? {
        let Ok(r) = r else { continue };
        let Ok(name) = r.name().map(str::to_owned) else {
            continue;
        };
        let Some(oid) = r.resolve().ok().and_then(|r| r.target()) else {
            continue;
        };
        let commit = match repo.find_object(oid, None) {
            Ok(o) if o.kind() == Some(ObjectType::Tag) => o.as_tag().map_or(oid, |t| t.target_id()),
            _ => oid,
        }
        .to_string();
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

/// Every entry of `commit`'s tree, recursively (`ls-tree -r -t --full-tree`): directories
/// and their contents, submodules listed but not entered, non-UTF-8 paths left out.
pub(crate) fn ls_tree(dir: &Path, commit: &str) -> Result<Vec<TreeEntry>, GitError> {
    let what = "ls-tree";
    let repo = open(dir, what)?;
    let object = match Oid::from_str(commit) {
        Ok(oid) if commit.len() == 40 || commit.len() == 64 => repo.find_object(oid, None),
        _ => repo.revparse_single(commit),
    }
    .map_err(fail(what))?;
    let root = object.peel_to_tree().map_err(fail(what))?;
    let mut entries = Vec::new();
    let mut pending = vec![(String::new(), root)];
    while let Some((prefix, tree)) = pending.pop() {
        for e in tree.iter() {
            let Ok(name) = std::str::from_utf8(e.name_bytes()) else {
                tracing::debug!("gitfs: skipping a non-UTF-8 path in {commit}");
                continue;
            };
            let path = format!("{prefix}{name}");
            let kind = match e.kind() {
                Some(ObjectType::Blob) => EntryKind::Blob,
                Some(ObjectType::Tree) => {
                    let sub = repo.find_tree(e.id()).map_err(fail(what))?;
                    pending.push((format!("{path}/"), sub));
                    EntryKind::Tree
                }
                _ => EntryKind::Commit,
            };
            entries.push(TreeEntry {
                mode: u32::try_from(e.filemode()).unwrap_or(0),
                kind,
                oid: e.id().to_string(),
                path,
            });
        }
    }
    Ok(entries)
}

/// The contents of the blobs `oids`, in order.
pub(crate) fn read_blobs(dir: &Path, oids: &[&str]) -> Result<Vec<Vec<u8>>, GitError> {
    if oids.is_empty() {
        return Ok(Vec::new());
    }
    let repo = open(dir, "cat-file")?;
    oids.iter().map(|oid| blob(&repo, oid)).collect()
}

/// The contents of one blob.
pub(crate) fn read_blob(dir: &Path, oid: &str) -> Result<Vec<u8>, GitError> {
    blob(&open(dir, "cat-file")?, oid)
}

fn blob(repo: &Repository, oid: &str) -> Result<Vec<u8>, GitError> {
    let id = Oid::from_str(oid).map_err(fail("cat-file"))?;
    let b = repo.find_blob(id).map_err(fail("cat-file"))?;
    Ok(b.content().to_vec())
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use salt_testkit::{bare, commit, git, write_file};

    use super::*;

    const REFSPECS: [&str; 2] = [
        "+refs/heads/*:refs/remotes/origin/*",
        "+refs/tags/*:refs/tags/*",
    ];

    fn out(dir: &Path, args: &[&str]) -> Vec<u8> {
        let o = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git runs");
        assert!(o.status.success(), "git {args:?}: {o:?}");
        o.stdout
    }

    /// A source repository with nested directories, an executable, a symlink, a submodule
    /// entry, a non-UTF-8 name, a second branch, a light and an annotated tag.
    fn source(base: &Path) -> (PathBuf, PathBuf) {
        bare(base, "src", |w| {
            write_file(w, "top.sls", "a: 1\n");
            write_file(w, "a/b/c.sls", "c: 1\n");
            write_file(w, "a/run.sh", "#!/bin/sh\n");
            let exec = std::os::unix::fs::PermissionsExt::from_mode(0o755);
            std::fs::set_permissions(w.join("a/run.sh"), exec).unwrap();
            std::os::unix::fs::symlink("b/c.sls", w.join("a/link")).unwrap();
            std::fs::write(w.join(std::ffi::OsStr::from_bytes(b"bad\xffname")), "x").unwrap();
            commit(w, "one");
            let head = String::from_utf8(out(w, &["rev-parse", "HEAD"])).unwrap();
            let info = format!("160000,{},sub", head.trim());
            git(w, &["update-index", "--add", "--cacheinfo", &info]);
            git(w, &["commit", "-q", "-m", "submodule"]);
            git(w, &["tag", "light"]);
            git(w, &["tag", "-a", "-m", "annotated", "v1"]);
            git(w, &["checkout", "-q", "-b", "dev"]);
            write_file(w, "dev.sls", "d: 1\n");
            commit(w, "dev");
            git(w, &["checkout", "-q", "master"]);
        })
    }

    fn cache(base: &Path, name: &str) -> PathBuf {
        let dir = base.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        git(&dir, &["init", "-q", "--bare"]);
        dir
    }

    fn cli_fetch(dir: &Path, url: &str) {
        let mut args = vec!["fetch", "-q", "--prune", "--no-write-fetch-head", url];
        args.extend(REFSPECS);
        git(dir, &args);
    }

    /// `for-each-ref` of the cache, as [`refs`] reads it.
    fn cli_refs(dir: &Path) -> Refs {
        let text = out(
            dir,
            &[
                "for-each-ref",
                "--format=%(objectname) %(*objectname) %(refname)",
                "refs/remotes/origin/",
                "refs/tags/",
            ],
        );
        let mut refs = Refs::default();
        for line in String::from_utf8(text).unwrap().lines() {
            let mut p = line.splitn(3, ' ');
            let (oid, peeled, name) = (p.next().unwrap(), p.next().unwrap(), p.next().unwrap());
            let c = if peeled.is_empty() { oid } else { peeled }.to_owned();
            if let Some(b) = name.strip_prefix("refs/remotes/origin/") {
                refs.branches.insert(b.to_owned(), c);
            } else if let Some(t) = name.strip_prefix("refs/tags/") {
                refs.tags.insert(t.to_owned(), c);
            }
        }
        refs
    }

    fn specs() -> Vec<String> {
        REFSPECS.iter().map(|s| (*s).to_owned()).collect()
    }

    use std::os::unix::ffi::OsStrExt as _;
    use std::path::PathBuf;

    #[test]
    fn reads_refs_trees_and_blobs_as_the_git_command() {
        let tmp = tempfile::tempdir().unwrap();
        let (_, src) = source(tmp.path());
        let dir = cache(tmp.path(), "cache");
        cli_fetch(&dir, &format!("file://{}", src.display()));

        let refs = refs(&dir).unwrap();
        assert_eq!(refs, cli_refs(&dir));
        assert_eq!(refs.branches.len(), 2);
        assert_eq!(refs.tags.len(), 2);
        assert_eq!(refs.tags["v1"], refs.branches["master"]);

        let master = &refs.branches["master"];
        let mut ours = ls_tree(&dir, master).unwrap();
        ours.sort_by(|a, b| a.path.cmp(&b.path));
        let listing = out(&dir, &["ls-tree", "-r", "-t", "-z", "--full-tree", master]);
        let mut theirs: Vec<(u32, String, String, Vec<u8>)> = listing
            .split(|b| *b == 0)
            .filter(|r| !r.is_empty())
            .map(|r| {
                let tab = r.iter().position(|b| *b == b'\t').unwrap();
                let head = String::from_utf8(r[..tab].to_vec()).unwrap();
                let f: Vec<&str> = head.split(' ').collect();
                (
                    u32::from_str_radix(f[0], 8).unwrap(),
                    f[1].to_owned(),
                    f[2].to_owned(),
                    r[tab + 1..].to_vec(),
                )
            })
            .collect();
        // The non-UTF-8 name is left out (as before, by the `ls-tree` reader).
        let before = theirs.len();
        theirs.retain(|t| std::str::from_utf8(&t.3).is_ok());
        assert_eq!(before - 1, theirs.len());
        theirs.sort_by(|a, b| a.3.cmp(&b.3));
        let ours_rows: Vec<(u32, String, String, Vec<u8>)> = ours
            .iter()
            .map(|e| {
                let kind = match e.kind {
                    EntryKind::Blob => "blob",
                    EntryKind::Tree => "tree",
                    EntryKind::Commit => "commit",
                };
                (
                    e.mode,
                    kind.to_owned(),
                    e.oid.clone(),
                    e.path.clone().into_bytes(),
                )
            })
            .collect();
        assert_eq!(ours_rows, theirs);
        let modes: HashMap<&str, u32> = ours.iter().map(|e| (e.path.as_str(), e.mode)).collect();
        assert_eq!(modes["a/run.sh"], 0o100_755);
        assert_eq!(modes["a/link"], 0o120_000);
        assert_eq!(modes["a/b"], 0o040_000);
        assert_eq!(modes["sub"], 0o160_000);

        // Blobs, and a commit named by a prefix or by an annotated tag.
        let oids: Vec<&str> = ours
            .iter()
            .filter(|e| e.kind == EntryKind::Blob)
            .map(|e| e.oid.as_str())
            .collect();
        let blobs = read_blobs(&dir, &oids).unwrap();
        for (oid, data) in oids.iter().zip(&blobs) {
            assert_eq!(*data, out(&dir, &["cat-file", "blob", oid]));
            assert_eq!(*data, read_blob(&dir, oid).unwrap());
        }
        assert_eq!(ls_tree(&dir, &master[..10]).unwrap().len(), ours.len());
        assert_eq!(ls_tree(&dir, "v1").unwrap().len(), ours.len());
        assert!(read_blob(&dir, master).is_err());
        assert!(ls_tree(&dir, "0123456789012345678901234567890123456789").is_err());
    }

    #[test]
    fn fetches_and_prunes_as_the_git_command() {
        let tmp = tempfile::tempdir().unwrap();
        let (work, src) = source(tmp.path());
        let url = format!("file://{}", src.display());
        let by_cli = cache(tmp.path(), "cli");
        let in_process = cache(tmp.path(), "lib");
        for round in 0..2 {
            if round == 1 {
                // New commits, a moved branch, a deleted branch and tag, a new tag.
                write_file(&work, "top.sls", "a: 2\n");
                commit(&work, "two");
                git(&work, &["tag", "-a", "-m", "two", "v2"]);
                let push = src.to_string_lossy().into_owned();
                git(&work, &["push", "-q", "-f", "--tags", &push, "master"]);
                git(&src, &["branch", "-D", "dev"]);
                git(&src, &["tag", "-d", "light"]);
            }
            cli_fetch(&by_cli, &url);
            fetch(&in_process, &url, &specs()).unwrap();
            assert_eq!(refs(&in_process).unwrap(), cli_refs(&by_cli));
            assert_eq!(cli_refs(&in_process), cli_refs(&by_cli));
        }
        let r = refs(&in_process).unwrap();
        assert!(!r.branches.contains_key("dev"));
        assert!(!r.tags.contains_key("light"));
        assert!(r.tags.contains_key("v2"));
        // A plain path fetches the same; the cache is whole and FETCH_HEAD holds nothing
        // (libgit2 truncates it).
        let by_path = cache(tmp.path(), "path");
        fetch(&by_path, &src.to_string_lossy(), &specs()).unwrap();
        assert_eq!(refs(&by_path).unwrap(), r);
        out(&in_process, &["fsck", "--strict", "--no-dangling"]);
        let head = std::fs::read(in_process.join("FETCH_HEAD")).unwrap_or_default();
        assert!(head.is_empty(), "{}", String::from_utf8_lossy(&head));
        // A missing repository is an error naming it.
        let gone = format!("file://{}", tmp.path().join("gone.git").display());
        let e = fetch(&in_process, &gone, &specs()).unwrap_err().to_string();
        assert!(e.contains("gone.git"), "{e}");
    }

    #[test]
    fn local_urls() {
        assert!(is_local("file:///srv/r.git"));
        assert!(is_local("/srv/r.git"));
        assert!(!is_local("ssh://git@h/r.git"));
        assert!(!is_local("git@h:r.git"));
        assert!(!is_local("https://h/r.git"));
        assert!(!is_local("r.git"));
    }
}
