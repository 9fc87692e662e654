//! Interop: git_pillar (`ext_pillar: - git: [...]`). Our master and Salt 3007.17's (with
//! GitPython, its git_pillar provider) read the same local bare repositories (`file://`,
//! made here with the `git` command), each for a real Python 3007.17 minion; the answers must
//! be identical:
//!
//! 1. `pillar.items`: a `master` remote (the `base` environment), a `dev` remote of the same
//!    repository (environment `dev`), an `__env__` remote, and a remote with `root`, merged;
//! 2. `pillar.items pillarenv=prod`: only the `__env__` remote's `prod` branch;
//! 3. a new commit, `salt-run git_pillar.update` on both (same answer), then `pillar.items`
//!    shows it; `cache.clear_git_lock git_pillar` answers the same.
//!
//! `git_pillar_options_3007`: per-remote `mountpoint` (a top file naming SLS of a mounted
//! remote), `fallback` and `all_saltenvs` on `__env__` remotes, and `env`; Salt names a
//! remote's environment from its target, not from the fallback branch checked out (ours
//! named it from the fallback until this test).
//!
//! Under `CI=true` a missing `git`, venv or GitPython fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use salt_integration_tests::git_support::{gitpython, venv_with};
use salt_integration_tests::interop_pair::Pair;
use salt_integration_tests::interop_support::{Side, assert_no_leftovers, serial, venv_for};
use salt_integration_tests::{SaltVenv, TempRoot, Yaml, bins};
use salt_testkit::{bare, commit, git, write_file as write};
use serde_json::json;

const VERSION: &str = "3007.17";

/// Salt's venv and GitPython (its git_pillar provider), with `git`; `None` (a failure under
/// `CI=true`) when one is missing.
fn prerequisites() -> Option<(SaltVenv, PathBuf)> {
    if Command::new("git").arg("--version").output().is_err() {
        missing("no `git` command");
        return None;
    }
    let Some(venv) = salt_integration_tests::require(venv_for(VERSION)) else {
        missing(&format!("no Salt {VERSION} venv"));
        return None;
    };
    let Some(gitpy) = gitpython(&venv) else {
        missing("GitPython is not installable into target/gitfs-gitpython");
        return None;
    };
    Some((venv, gitpy))
}

/// Our master and Salt's (with GitPython) with `ext_pillar: ext`, a Python minion on each.
fn start(dir: &Path, venv: &SaltVenv, gitpy: &Path, ids: [&'static str; 2], ext: &Yaml) -> Pair {
    let master_venv = venv_with(venv, gitpy, &dir.join("venv-gitpython"));
    let (py_master, py_minion) = (Side::Salt(master_venv), Side::Salt(venv.clone()));
    let ours = Side::Ours(bins().unwrap());
    Pair::start(dir, &ours, &py_master, &py_minion, ids, |c| {
        c.set("ext_pillar", ext.clone())
    })
}

fn missing(what: &str) {
    let _: Option<()> = salt_integration_tests::require(Err(salt_integration_tests::Missing::new(
        format!("interop_git_pillar: {what}"),
    )));
}

/// `pillar.git` (branches `master` and `dev`), `envs.git` (`master`, `prod`) and `rooted.git`
/// (its SLS under `pillar/`).
fn make_repos(base: &Path) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    std::fs::create_dir_all(base).unwrap();
    let (work, pillar) = bare(base, "pillar", |w| {
        write(w, "top.sls", "base:\n  '*':\n    - common\n    - web\n");
        write(
            w,
            "common.sls",
            "common:\n  from: master\n  list: [1, 2]\n  grain_os: {{ grains['os'] }}\n",
        );
        write(
            w,
            "web/init.sls",
            "include:\n  - .ports\nweb:\n  name: site\n",
        );
        write(w, "web/ports.sls", "web:\n  ports: [80, 443]\n");
        commit(w, "one");
        git(w, &["checkout", "-q", "-b", "dev"]);
        write(w, "top.sls", "dev:\n  '*':\n    - devonly\n");
        write(w, "devonly.sls", "devonly: true\ncommon:\n  from: dev\n");
        commit(w, "dev");
        git(w, &["checkout", "-q", "master"]);
    });
    let (_, envs) = bare(base, "envs", |w| {
        write(w, "top.sls", "{{ saltenv }}:\n  '*':\n    - env\n");
        write(w, "env.sls", "envbranch: master\n");
        commit(w, "one");
        git(w, &["checkout", "-q", "-b", "prod"]);
        write(w, "env.sls", "envbranch: prod\nprodonly: [a, b]\n");
        commit(w, "prod");
        git(w, &["checkout", "-q", "master"]);
    });
    let (_, rooted) = bare(base, "rooted", |w| {
        write(w, "pillar/top.sls", "base:\n  '*':\n    - rooted\n");
        write(
            w,
            "pillar/rooted.sls",
            "common:\n  rooted: yes\nrooted: {a: 1}\n",
        );
        write(w, "README", "outside the root\n");
        commit(w, "one");
    });
    (work, pillar, envs, rooted)
}

#[test]
fn git_pillar_3007() {
    let Some((venv, gitpy)) = prerequisites() else {
        return;
    };
    let _guard = serial();
    let t0 = Instant::now();
    let step = |what: &str| println!("[{:6.1}s] {what}", t0.elapsed().as_secs_f64());
    let root = TempRoot::new().unwrap();
    let (work, pillar, envs, rooted) = make_repos(&root.path().join("git"));
    let ext = Yaml::Raw(format!(
        "[{{git: ['master file://{p}', 'dev file://{p}', '__env__ file://{e}', \
         {{'master file://{r}': [{{root: pillar}}]}}]}}]",
        p = pillar.display(),
        e = envs.display(),
        r = rooted.display()
    ));
    let pair = start(root.path(), &venv, &gitpy, ["gp-ours", "gp-salt"], &ext);
    step("both masters and minions up");
    let (o, s) = (&pair.ours, &pair.salt);
    let both = |args: &[&str]| pair.both(args, 60, &[]);

    // 1. Every remote, merged in order (the `dev` remote's `common` after `master`'s; its
    // top file targets `dev`, compiled as that remote's environment).
    let items = both(&["pillar.items"]);
    assert_eq!(items["common"]["from"], json!("dev"), "{items:#}");
    assert_eq!(items["common"]["list"], json!([1, 2]), "{items:#}");
    assert_eq!(items["common"]["rooted"], json!(true), "{items:#}");
    assert_eq!(items["web"]["ports"], json!([80, 443]), "{items:#}");
    assert_eq!(items["envbranch"], json!("master"), "{items:#}");
    assert_eq!(items["devonly"], json!(true), "{items:#}");
    step("pillar.items");

    // 2. pillarenv=prod: the __env__ remote's prod branch only.
    let prod = both(&["pillar.items", "pillarenv=prod"]);
    assert_eq!(prod["envbranch"], json!("prod"), "{prod:#}");
    assert!(prod.get("common").is_none(), "{prod:#}");
    both(&["pillar.items", "pillarenv=dev"]);
    step("pillar.items pillarenv=prod, dev");

    // 3. A new commit, git_pillar.update, the new value.
    write(&work, "common.sls", "common:\n  from: master-two\n");
    commit(&work, "two");
    git(&work, &["push", "-q", pillar.to_str().unwrap(), "master"]);
    let (a, b) = (
        o.salt_run(&["git_pillar.update"]),
        s.salt_run(&["git_pillar.update"]),
    );
    assert_eq!(a, b, "git_pillar.update: ours (left), Salt's (right)");
    let after = both(&["pillar.items"]);
    assert!(after["common"].get("list").is_none(), "{after:#}");
    step("new commit, git_pillar.update, pillar.items");

    // cache.clear_git_lock: no lock left behind on either side.
    assert_eq!(
        o.salt_run(&["cache.clear_git_lock", "git_pillar"]),
        s.salt_run(&["cache.clear_git_lock", "git_pillar"])
    );

    drop(pair);
    assert_no_leftovers(root.path());
}

/// Per-remote `mountpoint`, `fallback`, `all_saltenvs` and `env`, with `git_pillar_includes`
/// (on by default: a top file may name SLS of another remote of its environment), on both
/// masters; every answer must be identical, and each option must have had an effect.
#[test]
fn git_pillar_options_3007() {
    let Some((venv, gitpy)) = prerequisites() else {
        return;
    };
    let _guard = serial();
    let t0 = Instant::now();
    let step = |what: &str| println!("[{:6.1}s] {what}", t0.elapsed().as_secs_f64());
    let root = TempRoot::new().unwrap();
    let base = root.path().join("git");
    let (_, _, envs, _) = make_repos(&base);
    // The top file names an SLS of the mounted remote.
    let (_, top) = bare(&base, "top", |w| {
        write(
            w,
            "top.sls",
            "base:\n  '*':\n    - topcommon\n    - mnt.sub.inner\n",
        );
        write(w, "topcommon.sls", "topcommon: yes\n");
        commit(w, "one");
    });
    let (_, mounted) = bare(&base, "mounted", |w| {
        write(w, "inner.sls", "mounted: {deep: 1}\n");
        commit(w, "one");
    });
    let (_, staged) = bare(&base, "staged", |w| {
        write(w, "top.sls", "staging:\n  '*':\n    - staged\n");
        write(w, "staged.sls", "staged: yes\n");
        commit(w, "one");
    });
    let (_, allenvs) = bare(&base, "allenvs", |w| {
        write(w, "top.sls", "{{ saltenv }}:\n  '*':\n    - allenv\n");
        write(w, "allenv.sls", "allenv_branch: master\n");
        commit(w, "one");
    });
    let ext = Yaml::Raw(format!(
        "[{{git: ['master file://{t}', {{'master file://{m}': [{{mountpoint: mnt/sub}}]}}, \
         {{'__env__ file://{e}': [{{fallback: master}}]}}, \
         {{'__env__ file://{a}': [{{all_saltenvs: master}}]}}, \
         {{'master file://{s}': [{{env: staging}}]}}]}}]",
        t = top.display(),
        m = mounted.display(),
        e = envs.display(),
        a = allenvs.display(),
        s = staged.display(),
    ));
    let pair = start(root.path(), &venv, &gitpy, ["gpo-ours", "gpo-salt"], &ext);
    step("both masters and minions up");
    let both = |args: &[&str]| pair.both(args, 60, &[]);

    // base: the top file's SLS from the mounted remote; the __env__ remotes' master branch.
    let items = both(&["pillar.items"]);
    println!("base: {items}");
    assert_eq!(items["topcommon"], json!(true), "{items:#}");
    assert_eq!(items["mounted"]["deep"], json!(1), "{items:#}");
    assert_eq!(items["allenv_branch"], json!("master"), "{items:#}");
    step("pillar.items (mountpoint)");

    // A saltenv no branch has: `fallback: master` serves master's; `all_saltenvs` too.
    let qa = both(&["pillar.items", "pillarenv=qa"]);
    println!("qa: {qa}");
    assert_eq!(qa["envbranch"], json!("master"), "{qa:#}");
    assert_eq!(qa["allenv_branch"], json!("master"), "{qa:#}");
    // prod has a branch: it wins over the fallback; all_saltenvs still serves master.
    let prod = both(&["pillar.items", "pillarenv=prod"]);
    println!("prod: {prod}");
    assert_eq!(prod["envbranch"], json!("prod"), "{prod:#}");
    assert_eq!(prod["allenv_branch"], json!("master"), "{prod:#}");
    step("pillar.items pillarenv=qa, prod (fallback, all_saltenvs)");

    // `env: staging`: that remote's master branch is the staging environment.
    let staging = both(&["pillar.items", "pillarenv=staging"]);
    println!("staging: {staging}");
    assert_eq!(staging["staged"], json!(true), "{staging:#}");
    step("pillar.items pillarenv=staging (env)");

    drop(pair);
    assert_no_leftovers(root.path());
}
