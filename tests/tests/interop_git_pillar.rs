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
//! Under `CI=true` a missing `git`, venv or GitPython fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use salt_integration_tests::git_support::{gitpython, venv_with};
use salt_integration_tests::interop_pair::Pair;
use salt_integration_tests::interop_support::{Side, assert_no_leftovers, serial, venv_for};
use salt_integration_tests::{TempRoot, Yaml, bins};
use salt_testkit::{bare, commit, git, write_file as write};
use serde_json::json;

const VERSION: &str = "3007.17";

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
    if Command::new("git").arg("--version").output().is_err() {
        return missing("no `git` command");
    }
    let Some(venv) = salt_integration_tests::require(venv_for(VERSION)) else {
        return missing(&format!("no Salt {VERSION} venv"));
    };
    let Some(gitpy) = gitpython(&venv) else {
        return missing("GitPython is not installable into target/gitfs-gitpython");
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
    let master_venv = venv_with(&venv, &gitpy, &root.path().join("venv-gitpython"));
    let py_master = Side::Salt(master_venv);
    let py_minion = Side::Salt(venv.clone());
    let ours = Side::Ours(bins().unwrap());
    let pair = Pair::start(
        root.path(),
        &ours,
        &py_master,
        &py_minion,
        ["gp-ours", "gp-salt"],
        |c| c.set("ext_pillar", ext.clone()),
    );
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
