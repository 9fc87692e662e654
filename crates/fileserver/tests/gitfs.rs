//! gitfs over real repositories made with the `git` command (`file://` remotes): saltenvs
//! from branches and tags, listings, hashes and chunks as the file-server commands answer
//! them, an update after a new commit, a failing remote serving its last good tree, and
//! `fileserver_backend` order with `roots`.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

use salt_config::{LoadOptions, MasterConfig};
use salt_fileserver::FileServer;
use salt_proto::Value;

use salt_testkit::{git, write_file as write};

fn have_git() -> bool {
    let ok = Command::new("git").arg("--version").output().is_ok();
    if !ok && std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("gitfs tests need the `git` command (required under CI=true)");
    }
    ok
}

fn server(yaml: &str, cachedir: &Path) -> FileServer {
    let cfg = MasterConfig::from_yaml_str(yaml, &LoadOptions::new("/nonexistent"))
        .unwrap()
        .config;
    FileServer::new(cfg.fileserver, cfg.hash_type, cachedir.to_path_buf())
}

fn load(pairs: &[(&str, Value)]) -> Value {
    Value::Map(
        pairs
            .iter()
            .map(|(k, v)| (Value::from(*k), v.clone()))
            .collect(),
    )
}

fn ask(fs: &FileServer, cmd: &str, pairs: &[(&str, Value)]) -> Value {
    let mut all = vec![("cmd", Value::from(cmd))];
    all.extend_from_slice(pairs);
    fs.handle(cmd, &load(&all), "m1").unwrap()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn branches_tags_update_and_a_failing_remote() {
    if !have_git() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let work = t.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q"]);
    write(&work, "top.sls", "base:\n  '*': [web]\n");
    write(&work, "salt/web/init.sls", "x: 1\n");
    write(&work, "salt/files/a.txt", "hello\n");
    std::os::unix::fs::symlink("a.txt", work.join("salt/files/l.txt")).unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "one"]);
    git(&work, &["tag", "-a", "v1", "-m", "v1"]);
    git(&work, &["checkout", "-q", "-b", "dev"]);
    write(&work, "salt/files/dev.txt", "dev\n");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "dev"]);
    git(&work, &["checkout", "-q", "master"]);
    let bare = t.path().join("states.git");
    git(t.path(), &["clone", "-q", "--bare", "work", "states.git"]);
    let roots = t.path().join("roots");
    write(&roots, "only-roots.txt", "r\n");
    write(&roots, "salt/files/a.txt", "from roots\n");
    let yaml = format!(
        "fileserver_backend: [gitfs, roots]\nfile_roots: {{base: ['{}']}}\n\
         gitfs_remotes:\n  - file://{}:\n    - root: salt\n    - mountpoint: salt://m\n",
        roots.display(),
        bare.display()
    );
    let fs = server(&yaml, &t.path().join("cache"));
    let g = fs.gitfs().unwrap();
    let report = g.update(None);
    // (The background updater may have fetched first: `changed` is not asserted here.)
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(fs.envs(), ["base", "dev", "v1"]);
    assert!(t.path().join("cache/gitfs/remote_map.txt").is_file());

    let base = || ("saltenv", Value::from("base"));
    let files = strings(&ask(&fs, "_file_list", &[base()]));
    assert_eq!(
        files,
        [
            "m/files/a.txt",
            "m/files/l.txt",
            "m/web/init.sls",
            "only-roots.txt",
            "salt/files/a.txt"
        ]
    );
    let dirs = strings(&ask(&fs, "_dir_list", &[base()]));
    assert!(
        dirs.contains(&"m".to_owned()) && dirs.contains(&"m/files".to_owned()),
        "{dirs:?}"
    );
    let dev = strings(&ask(&fs, "_file_list", &[("saltenv", Value::from("dev"))]));
    assert!(dev.contains(&"m/files/dev.txt".to_owned()), "{dev:?}");
    let tag = strings(&ask(&fs, "_file_list", &[("saltenv", Value::from("v1"))]));
    assert!(!tag.contains(&"m/files/dev.txt".to_owned()), "{tag:?}");
    // Symlinks: the last backend's answer (roots here, as Salt's loop leaves it).
    assert_eq!(ask(&fs, "_symlink_list", &[base()]), Value::Map(vec![]));

    // Hash and chunks of a gitfs file (the symlink served as its target).
    let hash = ask(
        &fs,
        "_file_hash",
        &[("path", Value::from("m/files/l.txt")), base()],
    );
    let want = hex::encode(salt_pki::HashType::Sha256.digest(b"hello\n"));
    assert_eq!(
        hash,
        load(&[
            ("hash_type", Value::from("sha256")),
            ("hsum", Value::from(want.as_str()))
        ])
    );
    let hs = ask(
        &fs,
        "_file_hash_and_stat",
        &[("path", Value::from("m/files/a.txt")), base()],
    );
    assert_eq!(
        hs.as_array().unwrap()[1],
        Value::Array(vec![Value::from(0o100_644)])
    );
    let chunk = ask(
        &fs,
        "_serve_file",
        &[
            ("path", Value::from("m/files/a.txt")),
            base(),
            ("loc", Value::from(2)),
        ],
    );
    assert_eq!(
        chunk,
        load(&[
            ("data", Value::Binary(b"llo\n".to_vec())),
            ("dest", Value::from("m/files/a.txt"))
        ])
    );
    let mut out = Vec::new();
    let load_serve = load(&[
        ("cmd", Value::from("_serve_file")),
        ("path", Value::from("m/files/a.txt")),
        base(),
        ("loc", Value::from(0)),
    ]);
    let Some(salt_proto::msg::FileLoad::Serve(s)) =
        salt_proto::msg::FileLoad::read("_serve_file", &load_serve)
    else {
        panic!("not a serve load");
    };
    let direct = fs
        .serve_file_into(&s, &mut out, &salt_fileserver::inline::Budget::unlimited())
        .unwrap_err();
    assert_eq!(
        direct.as_map().unwrap()[0].1,
        Value::Binary(b"hello\n".to_vec())
    );
    // Roots files are still served; a missing file is "not found".
    let found = ask(
        &fs,
        "_file_find",
        &[("path", Value::from("only-roots.txt")), base()],
    );
    assert_eq!(found.as_map().unwrap()[3].1, Value::from("roots"));
    let found = ask(
        &fs,
        "_file_find",
        &[("path", Value::from("m/files/a.txt")), base()],
    );
    assert_eq!(found.as_map().unwrap()[3].1, Value::from("gitfs"));
    assert_eq!(
        ask(
            &fs,
            "_file_hash",
            &[("path", Value::from("m/nope")), base()]
        ),
        Value::from("")
    );
    // A branch name that base maps to is not a saltenv of its own.
    assert_eq!(
        ask(&fs, "_file_list", &[("saltenv", Value::from("master"))]),
        Value::Array(vec![])
    );

    // A new commit, then an update.
    write(&work, "salt/files/new.txt", "new\n");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "two"]);
    git(&work, &["push", "-q", bare.to_str().unwrap(), "master"]);
    let report = g.update(None);
    assert!(report.changed && report.errors.is_empty(), "{report:?}");
    let files = strings(&ask(&fs, "_file_list", &[base()]));
    assert!(files.contains(&"m/files/new.txt".to_owned()), "{files:?}");

    // The remote fails: the last good tree is still served, and the update says so.
    std::fs::rename(&bare, t.path().join("gone.git")).unwrap();
    let report = g.update(None);
    assert_eq!(report.errors.len(), 1, "{report:?}");
    assert!(report.errors[0].contains("states.git"), "{report:?}");
    assert!(report.errors[0].contains("last good fetch"), "{report:?}");
    let files = strings(&ask(&fs, "_file_list", &[base()]));
    assert!(files.contains(&"m/files/new.txt".to_owned()), "{files:?}");
    let (cleared, errors) = g.clear_lock(None, &["update".to_owned()]);
    assert!(cleared.is_empty() && errors.is_empty());
}

#[test]
fn gitfs_first_wins_and_roots_is_off_when_not_listed() {
    if !have_git() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let work = t.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q"]);
    write(&work, "a.txt", "git\n");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "one"]);
    git(&work, &["branch", "-q", "-m", "main"]);
    git(t.path(), &["clone", "-q", "--bare", "work", "s.git"]);
    let roots = t.path().join("roots");
    write(&roots, "a.txt", "roots\n");
    let yaml = |backends: &str| {
        format!(
            "fileserver_backend: {backends}\nfile_roots: {{base: ['{}']}}\ngitfs_base: main\n\
             gitfs_remotes: ['file://{}']\n",
            roots.display(),
            t.path().join("s.git").display()
        )
    };
    let data = |fs: &FileServer| {
        let v = ask(
            fs,
            "_serve_file",
            &[
                ("path", Value::from("a.txt")),
                ("saltenv", Value::from("base")),
                ("loc", Value::from(0)),
            ],
        );
        v.as_map().unwrap()[0].1.clone()
    };
    let fs = server(&yaml("[gitfs, roots]"), &t.path().join("c1"));
    fs.gitfs().unwrap().update(None);
    assert_eq!(data(&fs), Value::Binary(b"git\n".to_vec()));
    let fs = server(&yaml("[roots, git]"), &t.path().join("c2"));
    fs.gitfs().unwrap().update(None);
    assert_eq!(data(&fs), Value::Binary(b"roots\n".to_vec()));
    let fs = server(&yaml("[gitfs]"), &t.path().join("c3"));
    fs.gitfs().unwrap().update(None);
    assert_eq!(fs.envs(), ["base"]);
    let only_git = strings(&ask(&fs, "_file_list", &[("saltenv", Value::from("base"))]));
    assert_eq!(only_git, ["a.txt"]);
}

/// `gitfs_update_interval` (and a remote's own `update_interval`): the background updater
/// fetches a new commit by itself, with no `fileserver.update`; a remote with a long
/// interval is not fetched meanwhile.
#[test]
fn the_background_updater_fetches_every_update_interval() {
    if !have_git() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let mut bares = Vec::new();
    for name in ["fast", "slow"] {
        let work = t.path().join(name);
        std::fs::create_dir_all(&work).unwrap();
        git(&work, &["init", "-q", "-b", "master"]);
        write(&work, &format!("{name}.txt"), "one\n");
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", "one"]);
        let bare = t.path().join(format!("{name}.git"));
        git(
            t.path(),
            &["clone", "-q", "--bare", name, &format!("{name}.git")],
        );
        bares.push((work, bare));
    }
    let yaml = format!(
        "fileserver_backend: [gitfs]\ngitfs_update_interval: 1\n\
         gitfs_remotes:\n  - file://{}\n  - file://{}:\n    - update_interval: 3600\n",
        bares[0].1.display(),
        bares[1].1.display()
    );
    let fs = server(&yaml, &t.path().join("cache"));
    let base = || ("saltenv", Value::from("base"));
    let listed = |fs: &FileServer| strings(&ask(fs, "_file_list", &[base()]));
    // The first fetch of both, by the updater.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while listed(&fs) != ["fast.txt", "slow.txt"] {
        assert!(std::time::Instant::now() < deadline, "{:?}", listed(&fs));
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    for (work, bare) in &bares {
        let name = work.file_name().unwrap().to_str().unwrap().to_owned();
        write(work, &format!("{name}-two.txt"), "two\n");
        git(work, &["add", "-A"]);
        git(work, &["commit", "-q", "-m", "two"]);
        git(work, &["push", "-q", bare.to_str().unwrap(), "master"]);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !listed(&fs).contains(&"fast-two.txt".to_owned()) {
        assert!(std::time::Instant::now() < deadline, "{:?}", listed(&fs));
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Two more of the fast remote's intervals: the slow one (3600 s) was not fetched.
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(listed(&fs), ["fast-two.txt", "fast.txt", "slow.txt"]);
    // fileserver.update fetches it at once.
    let report = fs.gitfs().unwrap().update(None);
    assert!(report.changed && report.errors.is_empty(), "{report:?}");
    assert_eq!(
        listed(&fs),
        ["fast-two.txt", "fast.txt", "slow-two.txt", "slow.txt"]
    );
}
