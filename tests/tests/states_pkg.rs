//! `pkg.*` states against Python 3007.17's `salt-call --local`, on packages of a local apt
//! repository this test builds: tiny `.deb` files made with `dpkg-deb --build`, served as a
//! `[trusted=yes] file:` source through a temporary `APT_CONFIG` (own sources list, lists
//! and cache directories), so nothing is fetched and the host's apt configuration is not
//! touched. The packages (`saltrs-e2e-*`) are purged before each side's run and at the end.
//!
//! Steps, each run by Salt and by ours from the same clean state: `test=True`, apply,
//! apply again (nothing to do), `--out highstate` of a `test=True` run, then the `remove`
//! SLS (`pkg.removed`, `pkg.purged`). Each step: same `--out json` (times, pids and roots
//! blanked), same retcode, same installed packages.
//!
//! Holds (`pkg_holds_same_as_python_3007`): alpha installed with `dpkg -i`, then the `holds`
//! SLS (`pkg.held`, `pkg.installed` with `version` and `hold`) and `unholds` (`pkg.unheld`,
//! `hold: False`), each `test=True`, applied, applied
//! again; each step compared as above plus `apt-mark showhold`. Holds are released and the
//! packages purged at the end (also when an assertion fails).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::states_support::{self, local_minion, normalize};
use salt_integration_tests::{TempRoot, bins, workspace_root};
use salt_integration_tests::{both, command, require, root};

const PKGS: &[(&str, &str)] = &[("saltrs-e2e-alpha", "1.0-1"), ("saltrs-e2e-beta", "2.1-1")];

fn sh(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Build the .debs, the repository index and the apt configuration; return APT_CONFIG.
fn repo(root: &Path) -> String {
    let repo = root.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let mut index = String::new();
    for (name, ver) in PKGS {
        let d = root.join("build").join(name);
        std::fs::create_dir_all(d.join("DEBIAN")).unwrap();
        std::fs::create_dir_all(d.join("usr/share/doc").join(name)).unwrap();
        std::fs::write(
            d.join("usr/share/doc").join(name).join("README"),
            "salt-rs test package\n",
        )
        .unwrap();
        let control = format!(
            "Package: {name}\nVersion: {ver}\nArchitecture: all\nMaintainer: salt-rs tests <t@example.invalid>\nDescription: salt-rs test package\n"
        );
        std::fs::write(d.join("DEBIAN/control"), &control).unwrap();
        let deb = repo.join(format!("{name}_{ver}_all.deb"));
        sh(Command::new("dpkg-deb")
            .args(["--root-owner-group", "--build"])
            .arg(&d)
            .arg(&deb));
        let data = std::fs::read(&deb).unwrap();
        let sha = sh(Command::new("sha256sum").arg(&deb));
        index.push_str(&control);
        index.push_str(&format!(
            "Filename: ./{}\nSize: {}\nSHA256: {}\n\n",
            deb.file_name().unwrap().to_string_lossy(),
            data.len(),
            sha.split_whitespace().next().unwrap()
        ));
    }
    std::fs::write(repo.join("Packages"), index).unwrap();
    for d in [
        "apt/lists/partial",
        "apt/cache/archives/partial",
        "apt/parts",
        "apt/prefs",
    ] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(
        root.join("apt/sources.list"),
        format!("deb [trusted=yes] file:{} ./\n", repo.display()),
    )
    .unwrap();
    let a = root.join("apt");
    let conf = root.join("apt/apt.conf");
    std::fs::write(
        &conf,
        format!(
            "Dir::Etc::sourcelist \"{a}/sources.list\";\nDir::Etc::sourceparts \"{a}/parts\";\n\
             Dir::Etc::preferencesparts \"{a}/prefs\";\nDir::State::lists \"{a}/lists\";\n\
             Dir::Cache \"{a}/cache\";\nDir::Cache::pkgcache \"\";\nDir::Cache::srcpkgcache \"\";\n",
            a = a.display()
        ),
    )
    .unwrap();
    conf.display().to_string()
}

/// Releases the test packages' holds (dpkg keeps a held package on purge).
fn unhold() {
    let held: Vec<String> = showhold().lines().map(str::to_owned).collect();
    if held.is_empty() {
        return;
    }
    let out = Command::new("apt-mark")
        .arg("unhold")
        .args(&held)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn purge() {
    let names: Vec<&str> = PKGS
        .iter()
        .map(|(n, _)| *n)
        .chain(["saltrs-e2e-gamma"])
        .collect();
    let out = Command::new("dpkg")
        .arg("--purge")
        .args(&names)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn installed() -> String {
    let out = Command::new("dpkg-query")
        .args([
            "-W",
            "-f",
            "${Package} ${Version} ${Status}\n",
            "saltrs-e2e-*",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn conf(root: &Path) {
    let tree = workspace_root().join("tests/data/states-pkg");
    local_minion(root, &tree, Some(&root.join("pillar")), "").unwrap();
}

fn salt_call(
    bin: &Path,
    root: &Path,
    apt: &str,
    out: &str,
    args: &[String],
) -> (String, Option<i32>) {
    let mut c = Command::new(bin);
    c.env("APT_CONFIG", apt);
    states_support::salt_call(c, root, out, args).unwrap()
}

#[test]
fn pkg_states_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let Some(_) = require(both(root(), command("dpkg-deb"))) else {
        return;
    };
    let _guard = serial();
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let tmp = TempRoot::new().unwrap();
    let apt = repo(tmp.path());
    let (py_root, rs_root) = (tmp.path().join("py"), tmp.path().join("rs"));
    conf(&py_root);
    conf(&rs_root);
    let steps: Vec<(&str, Vec<&str>)> = vec![
        ("json", vec!["state.apply", "test=True"]),
        ("json", vec!["state.apply"]),
        ("json", vec!["state.apply"]),
        ("highstate", vec!["state.apply", "test=True"]),
        ("json", vec!["state.apply", "remove", "test=True"]),
        ("json", vec!["state.apply", "remove"]),
    ];
    let mut outs: Vec<Vec<(String, Option<i32>, String)>> = Vec::new();
    for (bin, root) in [(venv.bin("salt-call"), &py_root), (ours, &rs_root)] {
        purge();
        let mut mine = Vec::new();
        for (out, args) in &steps {
            let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            a.push(format!("pillar={{\"outdir\": \"{}/out\"}}", root.display()));
            let t0 = std::time::Instant::now();
            let (text, rc) = salt_call(&bin, root, &apt, out, &a);
            println!("{} {args:?}: {:?}", bin.display(), t0.elapsed());
            mine.push((normalize(&text, root), rc, installed()));
        }
        outs.push(mine);
    }
    purge();
    for (i, ((py, rs), (out, args))) in outs[0].iter().zip(&outs[1]).zip(&steps).enumerate() {
        assert!(
            !py.0.is_empty() && !py.0.contains("is not available"),
            "step {i}: Salt's run: {}",
            py.0
        );
        assert_eq!(
            rs.0, py.0,
            "step {i} {args:?}: our --out {out} differs from Salt 3007.17's"
        );
        assert_eq!(rs.1, py.1, "step {i}: retcode");
        assert_eq!(rs.2, py.2, "step {i}: installed packages");
        println!(
            "step {} {args:?} --out {out}: same output, retcode {:?}",
            i + 1,
            rs.1
        );
    }
}

/// The test packages on hold.
fn showhold() -> String {
    let out = Command::new("apt-mark").arg("showhold").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("saltrs-e2e-"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Unholds and purges the test packages when dropped.
struct Cleanup;

impl Drop for Cleanup {
    fn drop(&mut self) {
        // Not asserting: a panic while unwinding would abort the test binary.
        let held: Vec<String> = showhold().lines().map(str::to_owned).collect();
        if !held.is_empty() {
            let _ = Command::new("apt-mark").arg("unhold").args(&held).status();
        }
        let _ = Command::new("dpkg")
            .arg("--purge")
            .args(PKGS.iter().map(|(n, _)| *n))
            .status();
    }
}

#[test]
fn pkg_holds_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let Some(_) = require(both(root(), both(command("dpkg-deb"), command("apt-mark")))) else {
        return;
    };
    let _guard = serial();
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let tmp = TempRoot::new().unwrap();
    let apt = repo(tmp.path());
    let (py_root, rs_root) = (tmp.path().join("py"), tmp.path().join("rs"));
    conf(&py_root);
    conf(&rs_root);
    let steps: Vec<Vec<&str>> = vec![
        vec!["state.apply", "holds", "test=True"],
        vec!["state.apply", "holds"],
        vec!["state.apply", "holds"],
        vec!["state.apply", "unholds", "test=True"],
        vec!["state.apply", "unholds"],
        vec!["state.apply", "unholds"],
    ];
    let _cleanup = Cleanup;
    let mut outs: Vec<Vec<(String, Option<i32>, String)>> = Vec::new();
    for (bin, root) in [(venv.bin("salt-call"), &py_root), (ours, &rs_root)] {
        unhold();
        purge();
        let debs: Vec<_> = std::fs::read_dir(tmp.path().join("repo"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().ends_with("alpha_1.0-1_all.deb"))
            .collect();
        sh(Command::new("dpkg").arg("-i").args(&debs));
        // Each side starts with apt's lists unfetched (a `test=True` run does not fetch them).
        let lists = tmp.path().join("apt/lists");
        std::fs::remove_dir_all(&lists).unwrap();
        std::fs::create_dir_all(lists.join("partial")).unwrap();
        let mut mine = Vec::new();
        for args in &steps {
            let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            let (text, rc) = salt_call(&bin, root, &apt, "json", &a);
            mine.push((normalize(&text, root), rc, showhold()));
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
        assert_eq!(rs.2, py.2, "step {i}: apt-mark showhold");
        println!("step {} {args:?}: same output, retcode {:?}", i + 1, rs.1);
    }
    assert_eq!(
        outs[1][1].2, "saltrs-e2e-alpha\nsaltrs-e2e-beta\n",
        "held after `holds`"
    );
    assert_eq!(outs[1][4].2, "", "released after `unholds`");
}
