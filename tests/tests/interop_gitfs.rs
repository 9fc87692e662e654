//! Interop: gitfs. Our master and Salt 3007.17's (with GitPython, its gitfs provider) serve
//! the same local bare repositories (`file://`, made here with the `git` command), each to a
//! real Python 3007.17 minion; the answers must be identical:
//!
//! 1. `cp.list_master` for `base` (branch `master`), a branch saltenv (`dev`) and a tag
//!    saltenv (`v1`), `cp.list_master_dirs`, `cp.list_master_symlinks`, `cp.hash_file`; one
//!    remote with `root`, `mountpoint` and `name`;
//! 2. `state.apply` (top file and states from git): same return, same files written;
//! 3. a new commit, then `salt-run fileserver.update` on both: the new file is listed;
//! 4. the remote made unreachable, `fileserver.update` again: both keep serving the last good
//!    tree (ours also names the failing remote in the runner's answer and the log);
//! 5. `cache.clear_git_lock gitfs` with no lock, then with a stale update lock on each remote
//!    (Salt's `<cachedir>/gitfs/work/<hash>/_/update.lk`): the same answers.
//!
//! Salt's master gets GitPython through `PYTHONPATH` (installed once with the venv's `pip
//! install --target target/gitfs-gitpython GitPython`). Under `CI=true` a missing `git`,
//! venv or GitPython fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use salt_integration_tests::interop_pair::{Pair, PairSide, UNTIMED};
use salt_integration_tests::interop_support::{Side, assert_no_leftovers, serial, venv_for};
use salt_integration_tests::{TempRoot, Yaml, bins};
use serde_json::json;

const VERSION: &str = "3007.17";

/// A prerequisite is missing: fail under `CI=true`, else a counted skip.
fn missing(what: &str) {
    let _: Option<()> = salt_integration_tests::require(Err(salt_integration_tests::Missing::new(
        format!("interop_gitfs: {what}"),
    )));
}

use salt_integration_tests::git_support::{gitpython, venv_with};
use salt_testkit::{git, write_file as write};

/// The repositories: `states.git` (branches `master` and `dev`, tag `v1`, a symlink) and
/// `other.git` (its files under `salt/`, served at `mnt/`).
fn make_repos(base: &Path, out: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let work = base.join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q"]);
    let o = out.display();
    write(&work, "top.sls", "base:\n  '*':\n    - web\n");
    write(
        &work,
        "web/init.sls",
        &format!(
            "web-index:\n  file.managed:\n    - name: {o}/{{{{ grains['id'] }}}}/index.html\n    - source: salt://files/index.html\n    - makedirs: True\n\
             web-tree:\n  file.recurse:\n    - name: {o}/{{{{ grains['id'] }}}}/tree\n    - source: salt://files/tree\n\
             web-mnt:\n  file.managed:\n    - name: {o}/{{{{ grains['id'] }}}}/from-mnt.txt\n    - source: salt://mnt/other.txt\n    - makedirs: True\n"
        ),
    );
    write(&work, "files/index.html", "<h1>from git</h1>\n");
    write(&work, "files/tree/a.txt", "a\n");
    write(&work, "files/tree/sub/b.txt", "b\n");
    std::os::unix::fs::symlink("index.html", work.join("files/link.html")).unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "one"]);
    git(&work, &["tag", "-a", "v1", "-m", "v1"]);
    git(&work, &["checkout", "-q", "-b", "dev"]);
    write(&work, "files/dev-only.txt", "dev\n");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "dev"]);
    git(&work, &["checkout", "-q", "master"]);
    let states = base.join("states.git");
    git(
        base,
        &["clone", "-q", "--bare", "work", states.to_str().unwrap()],
    );
    let other_work = base.join("other-work");
    std::fs::create_dir_all(&other_work).unwrap();
    git(&other_work, &["init", "-q"]);
    write(&other_work, "salt/other.txt", "other\n");
    write(&other_work, "README", "not served (outside root)\n");
    git(&other_work, &["add", "-A"]);
    git(&other_work, &["commit", "-q", "-m", "other"]);
    let other = base.join("other.git");
    git(
        base,
        &[
            "clone",
            "-q",
            "--bare",
            "other-work",
            other.to_str().unwrap(),
        ],
    );
    (work, states, other)
}

#[test]
fn gitfs_3007() {
    if Command::new("git").arg("--version").output().is_err() {
        return missing("no `git` command");
    }
    let Some(venv) = salt_integration_tests::require(venv_for(VERSION)) else {
        return missing(&format!("no Salt {VERSION} venv"));
    };
    let Some(gitpy) = gitpython(&venv) else {
        return missing(
            "GitPython is not installable into target/gitfs-gitpython (add `GitPython` to \
             the pip line of scripts/salt-venv.sh)",
        );
    };
    let _guard = serial();
    let t0 = Instant::now();
    let step = |what: &str| println!("[{:6.1}s] {what}", t0.elapsed().as_secs_f64());
    let root = TempRoot::new().unwrap();
    let outdir = root.path().join("out");
    let (work, states, other) = make_repos(&root.path().join("git"), &outdir);
    let remotes = Yaml::Raw(format!(
        "['file://{}', {{'file://{}': [{{name: other}}, {{root: salt}}, {{mountpoint: 'salt://mnt'}}]}}]",
        states.display(),
        other.display()
    ));
    let master_venv = venv_with(&venv, &gitpy, &root.path().join("venv-gitpython"));
    let py_master = Side::Salt(master_venv.clone());
    let py_minion = Side::Salt(venv.clone());
    let ours = Side::Ours(bins().unwrap());
    let pair = Pair::start(
        root.path(),
        &ours,
        &py_master,
        &py_minion,
        ["git-ours", "git-salt"],
        |c| {
            c.set("fileserver_backend", Yaml::Raw("[gitfs]".into()))
                .set("gitfs_remotes", remotes.clone())
        },
    );
    step("both masters and minions up");
    let (ours_run, salt_run) = (&pair.ours, &pair.salt);
    // Both masters fetch at start; make sure, then compare.
    for r in [ours_run, salt_run] {
        r.salt_run(&["fileserver.update"]);
    }
    let both = |args: &[&str], timeout: u32| pair.both(args, timeout, UNTIMED);

    // 1. Listings and hashes per saltenv.
    let base = both(&["cp.list_master"], 60);
    assert_eq!(
        base,
        json!([
            "files/index.html",
            "files/link.html",
            "files/tree/a.txt",
            "files/tree/sub/b.txt",
            "mnt/other.txt",
            "top.sls",
            "web/init.sls"
        ])
    );
    let dev = both(&["cp.list_master", "saltenv=dev"], 60);
    assert!(
        dev.as_array()
            .unwrap()
            .contains(&json!("files/dev-only.txt")),
        "{dev}"
    );
    let tag = both(&["cp.list_master", "saltenv=v1"], 60);
    assert!(
        tag.as_array().unwrap().contains(&json!("files/index.html")),
        "{tag}"
    );
    both(&["cp.list_master_dirs"], 60);
    both(&["cp.list_master_dirs", "saltenv=dev"], 60);
    both(&["cp.list_master_symlinks"], 60);
    both(&["cp.hash_file", "salt://files/index.html"], 60);
    both(
        &["cp.hash_file", "salt://files/dev-only.txt", "saltenv=dev"],
        60,
    );
    both(&["cp.hash_file", "salt://mnt/other.txt"], 60);
    both(&["cp.hash_file", "salt://files/link.html"], 60);
    both(&["cp.hash_file", "salt://missing.txt"], 60);
    let envs = |r: &PairSide| {
        let mut e = r.salt_run(&["fileserver.envs"]);
        e.as_array_mut().unwrap().sort_by_key(ToString::to_string);
        e
    };
    assert_eq!(envs(ours_run), envs(salt_run));
    step("cp.list_master (base, dev, v1), dirs, symlinks, hash_file, fileserver.envs");

    // 2. Highstate from git.
    let hs = both(&["state.apply"], 180);
    assert_eq!(hs.as_object().unwrap().len(), 3, "{hs:#}");
    assert!(
        hs.as_object()
            .unwrap()
            .values()
            .all(|s| s["result"] == json!(true)),
        "{hs:#}"
    );
    for id in [ours_run.id, salt_run.id] {
        assert_eq!(
            std::fs::read_to_string(outdir.join(id).join("index.html")).unwrap(),
            "<h1>from git</h1>\n"
        );
        assert_eq!(
            std::fs::read_to_string(outdir.join(id).join("from-mnt.txt")).unwrap(),
            "other\n"
        );
    }
    step("state.apply");

    // 3. A new commit, then fileserver.update.
    write(&work, "files/new.txt", "new\n");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "two"]);
    git(&work, &["push", "-q", states.to_str().unwrap(), "master"]);
    assert_eq!(ours_run.salt_run(&["fileserver.update"]), json!(true));
    assert_eq!(salt_run.salt_run(&["fileserver.update"]), json!(true));
    let listed = |r: &PairSide| r.list_master_until("files/new.txt");
    let (a, b) = (listed(ours_run), listed(salt_run));
    assert_eq!(a, b, "after the update: ours (left), Salt's (right)");
    assert!(
        a.as_array().unwrap().contains(&json!("files/new.txt")),
        "{a}"
    );
    both(&["cp.hash_file", "salt://files/new.txt"], 60);
    step("new commit, fileserver.update, cp.list_master");

    // 4. The remote fails: the last good tree is still served.
    std::fs::rename(&states, root.path().join("git/gone.git")).unwrap();
    let ours_update = ours_run.salt_run(&["fileserver.update"]);
    let errors = ours_update["errors"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        errors.len() == 1 && errors[0].as_str().unwrap().contains("states.git"),
        "{ours_update}"
    );
    assert_eq!(salt_run.salt_run(&["fileserver.update"]), json!(true));
    let after = both(&["cp.list_master"], 60);
    assert_eq!(after, a, "the last good tree is served");
    both(&["cp.hash_file", "salt://files/new.txt"], 60);
    assert!(pair.ours.master.count("serving the last good fetch") >= 1);
    step("failing remote keeps the last good tree");

    // cache.clear_git_lock: no lock left behind on either side.
    assert_eq!(
        ours_run.salt_run(&["cache.clear_git_lock", "gitfs"]),
        salt_run.salt_run(&["cache.clear_git_lock", "gitfs"])
    );
    // A stale update lock on every remote (a process gone): both clear it the same way.
    for side in [ours_run, salt_run] {
        let work = side.master.dir.join("cache/gitfs/work");
        let mut n = 0;
        for hash in std::fs::read_dir(&work).unwrap() {
            let lock = hash.unwrap().path().join("_/update.lk");
            std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
            std::fs::write(&lock, "999999999\nsomewhere-else\n").unwrap();
            n += 1;
        }
        assert_eq!(n, 2, "{}", work.display());
    }
    let cleared = ours_run.salt_run(&["cache.clear_git_lock", "gitfs", "type=update"]);
    assert_eq!(
        cleared,
        salt_run.salt_run(&["cache.clear_git_lock", "gitfs", "type=update"]),
        "cache.clear_git_lock with a stale lock: ours (left), Salt's (right)"
    );
    assert_eq!(
        cleared["cleared"].as_array().map(Vec::len),
        Some(2),
        "{cleared}"
    );
    drop(pair);
    assert_no_leftovers(root.path());
    let _ = other;
}
