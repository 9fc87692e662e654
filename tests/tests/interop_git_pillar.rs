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
use std::time::{Duration, Instant};

use salt_integration_tests::git_support::{gitpython, venv_with};
use salt_integration_tests::interop_support::{
    Daemon, SaltCli, Side, assert_no_leftovers, serial, venv_for,
};
use salt_integration_tests::{MasterConf, MinionConf, TempRoot, Yaml, bins, free_port_pair};
use salt_testkit::{git, write_file as write};
use serde_json::{Value, json};

const VERSION: &str = "3007.17";

fn missing(what: &str) {
    let _: Option<()> = salt_integration_tests::require(Err(salt_integration_tests::Missing::new(
        format!("interop_git_pillar: {what}"),
    )));
}

/// A bare repository `name.git` under `base` from the work tree `name` (branches made by
/// `build`).
fn bare(base: &Path, name: &str, build: impl FnOnce(&Path)) -> (PathBuf, PathBuf) {
    let work = base.join(name);
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q"]);
    build(&work);
    let repo = base.join(format!("{name}.git"));
    git(
        base,
        &["clone", "-q", "--bare", name, repo.to_str().unwrap()],
    );
    (work, repo)
}

fn commit(work: &Path, msg: &str) {
    git(work, &["add", "-A"]);
    git(work, &["commit", "-q", "-m", msg]);
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

struct Run {
    id: &'static str,
    cli: SaltCli,
    run_bin: PathBuf,
    conf_dir: PathBuf,
}

impl Run {
    fn salt(&self, args: &[&str]) -> Value {
        let mut full = vec![self.id];
        full.extend_from_slice(args);
        let (v, out) = self.cli.salt_json(&full, 60).unwrap();
        let ret = v.get(self.id).cloned().unwrap_or(Value::Null);
        assert!(
            !ret.is_null(),
            "{} {args:?}: no answer\n{}\n{}",
            self.cli.side.label(),
            out.stdout,
            out.stderr
        );
        normalize(&ret, self.id)
    }

    fn salt_run(&self, args: &[&str]) -> Value {
        let out = Command::new(&self.run_bin)
            .arg("-c")
            .arg(&self.conf_dir)
            .args(args)
            .args(["--out", "json"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(text.trim()).unwrap_or_else(|e| {
            panic!(
                "{} salt-run {args:?}: not JSON ({e}): {text}\n{}",
                self.cli.side.label(),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }
}

/// The minion id replaced by `ID`.
fn normalize(v: &Value, id: &str) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace(id, "ID")),
        Value::Array(a) => Value::Array(a.iter().map(|x| normalize(x, id)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.replace(id, "ID"), normalize(x, id)))
                .collect(),
        ),
        other => other.clone(),
    }
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
    let mut started = Vec::new();
    for (side, id) in [(&ours, "gp-ours"), (&py_master, "gp-salt")] {
        let ports = free_port_pair().unwrap();
        let conf = MasterConf::new(root.path().join(format!("m-{}", side.label())))
            .ports(ports.0, ports.1)
            .auto_accept(true)
            .set("worker_threads", 2u32)
            .set("ext_pillar", ext.clone());
        started.push((side, id, ports, Daemon::start_master(side, &conf).unwrap()));
    }
    let mut masters = Vec::new();
    let mut minions = Vec::new();
    for (side, id, ports, mut m) in started {
        m.wait_master_ready("127.0.0.1", ports.0, ports.1).unwrap();
        let n = MinionConf::new(root.path().join(id), id)
            .ports(ports.0, ports.1)
            .set("auth_timeout", 10u32);
        minions.push(Daemon::start_minion(&py_minion, &n).unwrap());
        let run_bin = match side {
            Side::Ours(b) => b.salt.with_file_name("salt-run"),
            Side::Salt(v) => v.bin("salt-run"),
        };
        let cli = SaltCli::new(side, &m.conf_dir);
        let conf_dir = m.conf_dir.clone();
        masters.push((
            m,
            Run {
                id,
                cli,
                run_bin,
                conf_dir,
            },
        ));
    }
    for m in &minions {
        m.wait_minion_ready().unwrap();
    }
    for (_, r) in &masters {
        r.cli
            .until_answer(r.id, &[r.id, "test.ping"], Duration::from_secs(60))
            .unwrap();
    }
    step("both masters and minions up");
    let (o, s) = (&masters[0].1, &masters[1].1);
    let both = |args: &[&str]| {
        let (a, b) = (o.salt(args), s.salt(args));
        assert_eq!(
            a, b,
            "{args:?}: ours (left) and Salt's master (right) differ"
        );
        a
    };

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

    drop(minions);
    drop(masters);
    assert_no_leftovers(root.path());
}
