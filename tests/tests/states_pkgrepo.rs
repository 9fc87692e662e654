//! `pkgrepo.managed` / `pkgrepo.absent` against Python 3007.17's `salt-call --local`.
//!
//! Salt (without python3-apt) reads and writes the fixed paths `/etc/apt/sources.list` and
//! `/etc/apt/sources.list.d/*.list`, as ours does. So each side runs in a private mount
//! namespace (`unshare -m`) with a temporary directory bind-mounted over `/etc/apt`: the
//! host's `/etc/apt` is never touched. `APT_CONFIG` points apt's lists and caches into the
//! temporary root, and the repositories refreshed are local flat `file:` ones (empty
//! `Packages`), so `apt-get update` fetches nothing from the network.
//!
//! Steps, each run by Salt and by ours from the same starting files: the `repos` SLS
//! (`test=True`, apply, apply again), `clean` (`clean_file`; `test=True`, apply), `remove`
//! (`pkgrepo.absent`; `test=True`, apply, apply again). Each step: same `--out json`
//! (times, pids and roots blanked), same retcode, same files under `/etc/apt`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use salt_integration_tests::interop_support::venv_for;
use salt_integration_tests::states_support::{self, local_minion, normalize};
use salt_integration_tests::{TempRoot, bins, workspace_root};
use salt_integration_tests::{both, command, require, root};

/// Runs the rest of its arguments with `$0` bind-mounted over `/etc/apt`, in a private
/// mount namespace.
const IN_NS: &str = "mount --bind \"$0\" /etc/apt && exec \"$@\"";

/// Two flat repositories (empty `Packages`) and the apt configuration; returns APT_CONFIG.
fn repos(root: &Path) -> String {
    for r in ["repo/one", "repo/two"] {
        std::fs::create_dir_all(root.join(r)).unwrap();
        std::fs::write(root.join(r).join("Packages"), "").unwrap();
    }
    for d in ["apt/lists/partial", "apt/cache/archives/partial"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let a = root.join("apt");
    let conf = a.join("apt.conf");
    std::fs::write(
        &conf,
        format!(
            "Dir::State::lists \"{a}/lists\";\nDir::Cache \"{a}/cache\";\n\
             Dir::Cache::pkgcache \"\";\nDir::Cache::srcpkgcache \"\";\n",
            a = a.display()
        ),
    )
    .unwrap();
    conf.display().to_string()
}

/// A side's `/etc/apt` as the run starts.
fn etc_apt(dir: &Path, repo: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("sources.list.d")).unwrap();
    std::fs::write(
        dir.join("sources.list"),
        format!(
            "# salt-rs test sources\n#deb file:/srv/saltrs-none bookworm main contrib\n\
             deb [trusted=yes] file:{}/one ./\n",
            repo.display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("sources.list.d/old.list"),
        "#deb [arch=amd64] file:/srv/saltrs-none/old bookworm main # old repo\n",
    )
    .unwrap();
    std::fs::write(dir.join("sources.list.d/notes.txt"), "not a list\n").unwrap();
}

/// Every file under `dir` with its text, sorted by path.
fn files(dir: &Path) -> String {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.push(format!(
                    "== {rel}\n{}",
                    std::fs::read_to_string(&p).unwrap_or_default()
                ));
            }
        }
    }
    out.sort();
    out.join("")
}

fn conf(root: &Path) {
    let tree = workspace_root().join("tests/data/states-pkgrepo");
    local_minion(root, &tree, Some(&root.join("pillar")), "").unwrap();
}

#[test]
fn pkgrepo_states_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let Some(_) = require(both(root(), both(command("unshare"), command("apt-get")))) else {
        return;
    };
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let tmp = TempRoot::new().unwrap();
    let apt = repos(tmp.path());
    let repo = tmp.path().join("repo");
    let steps: Vec<Vec<&str>> = vec![
        vec!["state.apply", "test=True"],
        vec!["state.apply"],
        vec!["state.apply"],
        vec!["state.apply", "clean", "test=True"],
        vec!["state.apply", "clean"],
        vec!["state.apply", "remove", "test=True"],
        vec!["state.apply", "remove"],
        vec!["state.apply", "remove"],
    ];
    let mut outs: Vec<Vec<(String, Option<i32>, String)>> = Vec::new();
    for (bin, side) in [(venv.bin("salt-call"), "py"), (ours, "rs")] {
        let root = tmp.path().join(side);
        conf(&root);
        let etc = tmp.path().join(format!("etc-apt-{side}"));
        etc_apt(&etc, &repo);
        let mut mine = Vec::new();
        for args in &steps {
            let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            a.push(format!("pillar={{\"repo\": \"{}\"}}", repo.display()));
            let mut c = Command::new("unshare");
            c.args(["-m", "--propagation", "private", "sh", "-c", IN_NS])
                .arg(&etc)
                .arg(&bin)
                .env("APT_CONFIG", &apt);
            let t0 = std::time::Instant::now();
            let (text, rc) = states_support::salt_call(c, &root, "json", &a).unwrap();
            println!("{side} {args:?}: {:?}", t0.elapsed());
            mine.push((normalize(&text, &root), rc, files(&etc)));
        }
        outs.push(mine);
    }
    for (i, ((py, rs), args)) in outs[0].iter().zip(&outs[1]).zip(&steps).enumerate() {
        assert!(
            !py.0.is_empty() && !py.0.contains("is not available"),
            "step {i}: Salt's run: {}",
            py.0
        );
        assert_eq!(
            rs.0, py.0,
            "step {i} {args:?}: our output differs from Salt 3007.17's"
        );
        assert_eq!(rs.1, py.1, "step {i}: retcode");
        assert_eq!(rs.2, py.2, "step {i}: files under /etc/apt");
        println!("step {} {args:?}: same output, retcode {:?}", i + 1, rs.1);
    }
}
