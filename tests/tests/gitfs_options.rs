//! gitfs options against Salt 3007.17's own file server (issue 36): the same local bare
//! repositories (`file://`) and the same master options, Salt's `salt.fileserver.Fileserver`
//! (what its master answers `_file_*` requests with; GitPython as provider, through
//! `scripts/gitfs-answers.py`) against ours (`salt_fileserver::FileServer::handle` with the
//! options our master's config loader read). No daemons: a few seconds per case.
//!
//! Per case, after an update on both: `_file_envs` (as a set: Salt's order is its dict's),
//! then for every saltenv either side serves plus a few it should not (an unknown name, a
//! blacklisted branch, a commit id): `_file_list`, `_dir_list`, `_symlink_list` and the
//! `_file_hash` of every listed file, all identical. The cases cover what
//! `interop_gitfs.rs` does not: `gitfs_saltenv_whitelist`/`blacklist` (globs and regexes,
//! global and per remote), per-remote `saltenv` mapping (`ref`, `root`, `mountpoint`,
//! `base` mapped), `gitfs_saltenv`, `all_saltenvs`, `ref_types` (global and per remote),
//! `disable_saltenv_mapping`, `gitfs_base`/`gitfs_root`/`gitfs_mountpoint`/`gitfs_fallback`
//! and their per-remote overrides, and a commit id as saltenv.
//!
//! Under `CI=true` a missing `git`, venv or GitPython fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use salt_config::{LoadOptions, MasterConfig};
use salt_fileserver::FileServer;
use salt_integration_tests::git_support::{gitpython, venv_with};
use salt_integration_tests::interop_support::venv_for;
use salt_integration_tests::{SaltVenv, TempRoot, run_with_timeout, workspace_root};
use salt_testkit::{git, write_file as write};
use serde_json::{Value as Js, json};

const VERSION: &str = "3007.17";

/// The repository: `master` (a symlink, a `sub/` root), `dev`, `feature-x`, `feature-old`,
/// a lightweight tag `v1` and an annotated tag `v2` on `master`'s first commit. Returns the
/// bare repository and `dev`'s commit id (10 hex digits).
fn make_repo(base: &Path) -> (PathBuf, String) {
    let work = base.join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q"]);
    write(&work, "a.txt", "a\n");
    write(&work, "sub/s.txt", "s\n");
    write(&work, "sub/deep/d.txt", "deep\n");
    write(&work, "top/t.txt", "t\n");
    std::os::unix::fs::symlink("a.txt", work.join("link.txt")).unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "one"]);
    git(&work, &["tag", "v1"]);
    git(&work, &["tag", "-a", "v2", "-m", "v2"]);
    git(&work, &["checkout", "-q", "-b", "dev"]);
    write(&work, "dev.txt", "dev\n");
    write(&work, "sub/dev.txt", "sub dev\n");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "dev"]);
    git(&work, &["checkout", "-q", "-b", "feature-x"]);
    write(&work, "feat.txt", "feature\n");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "feature"]);
    git(&work, &["checkout", "-q", "-b", "feature-old", "master"]);
    write(&work, "old.txt", "old\n");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "old"]);
    git(&work, &["checkout", "-q", "master"]);
    let bare = base.join("states.git");
    git(
        base,
        &["clone", "-q", "--bare", "work", bare.to_str().unwrap()],
    );
    let out = Command::new("git")
        .args(["rev-parse", "--short=10", "dev"])
        .current_dir(&work)
        .output()
        .unwrap();
    let sha = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    (bare, sha)
}

/// Salt's answers to `requests` for master options `yaml`.
fn salts(venv: &SaltVenv, dir: &Path, yaml: &str, requests: &Js) -> Vec<Js> {
    std::fs::create_dir_all(dir).unwrap();
    let conf = dir.join("master");
    std::fs::write(
        &conf,
        format!(
            "root_dir: {d}\ncachedir: {d}/cache\nlog_file: {d}/log\n{yaml}",
            d = dir.display()
        ),
    )
    .unwrap();
    let reqs = dir.join("requests.json");
    std::fs::write(&reqs, requests.to_string()).unwrap();
    let mut cmd = Command::new(venv.bin("python"));
    cmd.arg(workspace_root().join("scripts/gitfs-answers.py"))
        .arg(&conf)
        .arg(&reqs);
    let out = run_with_timeout(cmd, Duration::from_secs(180))
        .unwrap()
        .ok()
        .unwrap();
    serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "Salt's answers are not JSON ({e}): {}\n{}",
            out.stdout, out.stderr
        )
    })
}

/// Our answer to one request.
fn ours(fs: &FileServer, cmd: &str, load: &Js) -> Js {
    let mut load = load.clone();
    load["cmd"] = json!(cmd);
    if cmd == "_file_hash_listed" {
        let files = ours(fs, "_file_list", &load);
        let mut out = serde_json::Map::new();
        for f in files.as_array().unwrap() {
            let mut l = load.clone();
            l["path"] = f.clone();
            out.insert(f.as_str().unwrap().to_owned(), ours(fs, "_file_hash", &l));
        }
        return Js::Object(out);
    }
    let v = fs
        .handle(cmd, &salt_compat::json::json_to_msgpack(&load), "m1")
        .unwrap_or_else(|| panic!("{cmd}: not a file-server command"));
    salt_compat::json::msgpack_to_json(&v)
}

fn env_set(v: &Js) -> BTreeSet<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|e| e.as_str().unwrap().to_owned())
        .collect()
}

/// Runs one case: `yaml` (with `REPO` for the bare repository's path) on both sides.
fn case(venv: &SaltVenv, root: &Path, name: &str, yaml: &str, repo: &Path, sha: &str) -> Js {
    let yaml = format!(
        "fileserver_backend: [gitfs]\n{}",
        yaml.replace("REPO", &repo.display().to_string())
    );
    let dir = root.join(name);
    let cfg = MasterConfig::from_yaml_str(&yaml, &LoadOptions::new(&dir))
        .unwrap_or_else(|e| panic!("{name}: our config loader: {e}"))
        .config;
    let fs = FileServer::new(cfg.fileserver, cfg.hash_type, dir.join("ours-cache"));
    let report = fs.gitfs().unwrap().update(None);
    assert!(report.errors.is_empty(), "{name}: {report:?}");

    // Envs first (both sides), then every saltenv either serves, and some neither should.
    let salt_envs = &salts(
        venv,
        &dir.join("salt-envs"),
        &yaml,
        &json!([["_file_envs", {}]]),
    )[0];
    let our_envs = ours(&fs, "_file_envs", &json!({}));
    assert_eq!(
        env_set(&our_envs),
        env_set(salt_envs),
        "{name}: _file_envs, ours (left) and Salt's (right)"
    );
    let mut envs = env_set(salt_envs);
    for extra in [
        "base",
        "dev",
        "prod",
        "qa",
        "nope",
        "feature-old",
        "v1",
        "v2",
        sha,
    ] {
        envs.insert(extra.to_owned());
    }
    let mut requests = Vec::new();
    for env in &envs {
        for cmd in [
            "_file_list",
            "_dir_list",
            "_symlink_list",
            "_file_hash_listed",
        ] {
            requests.push(json!([cmd, {"saltenv": env}]));
        }
    }
    let requests = Js::Array(requests);
    let want = salts(venv, &dir.join("salt"), &yaml, &requests);
    let mut all = serde_json::Map::new();
    for (req, want) in requests.as_array().unwrap().iter().zip(want) {
        let (cmd, load) = (req[0].as_str().unwrap(), &req[1]);
        let got = ours(&fs, cmd, load);
        assert_eq!(
            got, want,
            "{name}: {cmd} {load}: ours (left) and Salt {VERSION}'s (right)"
        );
        if cmd == "_file_list" {
            all.insert(load["saltenv"].as_str().unwrap().to_owned(), want);
        }
    }
    drop(fs);
    Js::Object(all)
}

#[test]
fn gitfs_options_as_salt_3007() {
    if Command::new("git").arg("--version").output().is_err() {
        let _: Option<()> = salt_integration_tests::require(Err(
            salt_integration_tests::Missing::new("gitfs_options: no `git` command"),
        ));
        return;
    }
    let Some(venv) = salt_integration_tests::require(venv_for(VERSION)) else {
        return;
    };
    let gitpy = salt_integration_tests::require(gitpython(&venv).ok_or_else(|| {
        salt_integration_tests::Missing::new(
            "gitfs_options: GitPython is not installable into target/gitfs-gitpython",
        )
    }));
    let Some(gitpy) = gitpy else {
        return;
    };
    let root = TempRoot::new().unwrap();
    let venv = venv_with(&venv, &gitpy, &root.path().join("venv-gitpython"));
    let (repo, sha) = make_repo(&root.path().join("git"));
    let run = |name: &str, yaml: &str| case(&venv, root.path(), name, yaml, &repo, &sha);

    // Global whitelist/blacklist (globs), a per-remote `saltenv` mapping (ref, root), and
    // `all_saltenvs` with a mountpoint on a second remote of the same repository.
    let p = run(
        "whitelist_saltenv_all_saltenvs",
        "gitfs_saltenv_whitelist: [base, 'feature-*', dev, v1, prod]\n\
         gitfs_saltenv_blacklist: ['feature-old']\n\
         gitfs_remotes:\n\
         \x20 - file://REPO:\n\
         \x20   - saltenv:\n\
         \x20     - prod:\n\
         \x20       - ref: v1\n\
         \x20       - root: sub\n\
         \x20 - file://REPO:\n\
         \x20   - name: second\n\
         \x20   - all_saltenvs: dev\n\
         \x20   - mountpoint: salt://all\n",
    );
    assert!(
        p["prod"].as_array().unwrap().contains(&json!("s.txt")),
        "{p}"
    );
    assert_eq!(p["feature-old"], json!([]), "{p}");

    // `ref_types` (global: branches only; per remote: tags only), `disable_saltenv_mapping`
    // with a mapped saltenv (also mounted elsewhere), and per-remote regex lists.
    run(
        "ref_types_disable_mapping",
        "gitfs_ref_types: [branch]\n\
         gitfs_remotes:\n\
         \x20 - file://REPO:\n\
         \x20   - saltenv_blacklist: ['feature-.*']\n\
         \x20 - file://REPO:\n\
         \x20   - name: tags\n\
         \x20   - ref_types: [tag]\n\
         \x20   - mountpoint: salt://tags\n\
         \x20 - file://REPO:\n\
         \x20   - name: mapped\n\
         \x20   - disable_saltenv_mapping: True\n\
         \x20   - saltenv_whitelist: ['^(base|qa)$']\n\
         \x20   - saltenv:\n\
         \x20     - qa:\n\
         \x20       - ref: dev\n\
         \x20       - mountpoint: salt://qa\n",
    );

    // Globals `gitfs_base`, `gitfs_root`, `gitfs_mountpoint`, `gitfs_fallback`; a remote
    // overriding them (its own base, an empty root, its own fallback), `base` mapped in a
    // remote's `saltenv`, and `gitfs_saltenv` for every remote.
    run(
        "globals_and_overrides",
        "gitfs_base: dev\ngitfs_root: sub\ngitfs_mountpoint: salt://g\n\
         gitfs_fallback: feature-x\n\
         gitfs_saltenv:\n\
         \x20 - qa:\n\
         \x20   - ref: v2\n\
         \x20   - mountpoint: salt://gq\n\
         gitfs_remotes:\n\
         \x20 - file://REPO\n\
         \x20 - file://REPO:\n\
         \x20   - name: own\n\
         \x20   - base: v2\n\
         \x20   - root: ''\n\
         \x20   - mountpoint: salt://own\n\
         \x20   - fallback: master\n\
         \x20 - file://REPO:\n\
         \x20   - name: mapped-base\n\
         \x20   - mountpoint: salt://mb\n\
         \x20   - saltenv:\n\
         \x20     - base:\n\
         \x20       - ref: feature-x\n",
    );
    assert_no_leftovers(&root);
}

fn assert_no_leftovers(root: &TempRoot) {
    salt_integration_tests::interop_support::assert_no_leftovers(root.path());
}
