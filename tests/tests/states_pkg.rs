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
