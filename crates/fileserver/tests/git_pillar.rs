//! git_pillar's checkouts over real repositories made with the `git` command (`file://`):
//! the pillar directory and environment of each remote (branch, `__env__`, `env`, `root`,
//! `mountpoint`), `git_pillar.update` after a new commit, and a missing ref skipped.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

use salt_config::{LoadOptions, MasterConfig};
use salt_fileserver::gitfs::GitPillar;
use salt_pillar::GitPillarSource;
use salt_testkit::{git, write_file as write};

fn have_git() -> bool {
    let ok = Command::new("git").arg("--version").output().is_ok();
    if !ok && std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("git_pillar tests need the `git` command (required under CI=true)");
    }
    ok
}

fn start(yaml: &str, cachedir: &Path) -> GitPillar {
    let cfg = MasterConfig::from_yaml_str(yaml, &LoadOptions::new("/nonexistent"))
        .unwrap()
        .config;
    let item = cfg.ext_pillar.iter().find(|e| e.module == "git").unwrap();
    GitPillar::start(
        &item.git,
        &cfg.fileserver.git_pillar,
        cachedir.join("git_pillar"),
        salt_pki::HashType::Sha256,
    )
}

#[test]
fn checkouts_per_branch_env_root_and_mountpoint() {
    if !have_git() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let work = t.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q"]);
    write(&work, "top.sls", "base: {'*': [a]}\n");
    write(&work, "a.sls", "a: 1\n");
    write(&work, "sub/top.sls", "x: {}\n");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "one"]);
    git(&work, &["checkout", "-q", "-b", "prod"]);
    write(&work, "a.sls", "a: prod\n");
    git(&work, &["commit", "-q", "-am", "prod"]);
    git(&work, &["checkout", "-q", "master"]);
    let repo = t.path().join("r.git");
    git(
        t.path(),
        &["clone", "-q", "--bare", "work", repo.to_str().unwrap()],
    );
    let url = format!("file://{}", repo.display());
    let yaml = format!(
        "ext_pillar:\n  - git:\n    - master {url}\n    - prod {url}\n    - __env__ {url}\n    \
         - master {url}:\n      - env: other\n      - root: sub\n    - master {url}:\n      - \
         mountpoint: mnt/x\n      - name: mounted\n    - nosuch {url}\n"
    );
    let gp = start(&yaml, t.path());
    let dirs = gp.pillar_dirs(None, None);
    let envs: Vec<(&str, bool)> = dirs.iter().map(|d| (d.env.as_str(), d.linked)).collect();
    assert_eq!(
        envs,
        [
            ("base", false),
            ("prod", false),
            ("base", false),
            ("other", false),
            ("base", true)
        ],
        "{dirs:#?}"
    );
    // `master` and `__env__` (base → master) are the same commit: the same tree.
    assert_eq!(dirs[0].dir, dirs[2].dir);
    assert_eq!(
        std::fs::read_to_string(dirs[0].dir.join("a.sls")).unwrap(),
        "a: 1\n"
    );
    assert_eq!(
        std::fs::read_to_string(dirs[1].dir.join("a.sls")).unwrap(),
        "a: prod\n"
    );
    assert!(dirs[3].dir.ends_with("sub"), "{:?}", dirs[3].dir);
    assert!(
        dirs[4].dir.join("mnt/x/a.sls").is_file(),
        "{:?}",
        dirs[4].dir
    );
    // __env__ follows the pillarenv asked for.
    let prod = gp.pillar_dirs(Some("prod"), None);
    assert_eq!(
        std::fs::read_to_string(prod[2].dir.join("a.sls")).unwrap(),
        "a: prod\n"
    );

    // A new commit: update reports the change, the new tree is served.
    write(&work, "a.sls", "a: 2\n");
    git(&work, &["commit", "-q", "-am", "two"]);
    git(&work, &["push", "-q", repo.to_str().unwrap(), "master"]);
    let report = gp.update(Some("master"), None);
    assert!(
        report.iter().all(|(_, changed)| *changed == Some(true)),
        "{report:?}"
    );
    assert!(report[0].0.starts_with("master file://"), "{report:?}");
    assert_eq!(report.len(), 3, "{report:?}");
    let dirs = gp.pillar_dirs(None, None);
    assert_eq!(
        std::fs::read_to_string(dirs[0].dir.join("a.sls")).unwrap(),
        "a: 2\n"
    );
    // cache.clear_git_lock git_pillar: a lock left behind is removed, by remote glob.
    let lock = t.path().join("git_pillar/work/mounted/_/update.lk");
    std::fs::write(&lock, "1\nx\n").unwrap();
    let types = ["update".to_owned()];
    assert_eq!(gp.clear_lock(Some("file:///nowhere*"), &types).0.len(), 0);
    let (cleared, errors) = gp.clear_lock(None, &types);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(cleared.len(), 1, "{cleared:?}");
    assert!(cleared[0].contains("git_pillar remote"), "{cleared:?}");
    assert!(!lock.exists());
    assert_eq!(gp.update(None, Some("mounted")).len(), 1);
    assert!(
        gp.update(None, Some("mounted"))
            .iter()
            .all(|(_, c)| c.is_none())
    );
}

#[test]
fn bad_remote_parameters_stop_the_master_by_name() {
    let load = |y: &str| {
        MasterConfig::from_yaml_str(y, &LoadOptions::new("/nonexistent"))
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let e = load("ext_pillar:\n  - git:\n    - master file:///x:\n      - bogus: 1\n").unwrap_err();
    assert!(e.contains("bogus"), "{e}");
    let e =
        load("ext_pillar:\n  - git:\n    - master file:///x:\n      - base: dev\n").unwrap_err();
    assert!(e.contains("__env__"), "{e}");
    let e = load("git_pillar_provider: pygit2\n").unwrap_err();
    assert!(e.contains("pygit2"), "{e}");
    load("ext_pillar:\n  - git:\n    - __env__ file:///x:\n      - base: dev\n").unwrap();
}
