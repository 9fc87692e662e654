//! `alternatives.install`/`set`/`auto`/`remove` against Python 3007.17's `salt-call
//! --local`. Salt's module reads `/etc/alternatives` by that name and runs
//! `update-alternatives` with its default admin dir, so each side runs in a private mount
//! namespace (`unshare -m`) with copies of the host's `/etc/alternatives` and
//! `/var/lib/dpkg/alternatives` (and an empty `/var/log`) bound over them: the host is not
//! changed. Links and targets are in each side's throwaway root. Steps: `test=True`, apply,
//! apply again, `auto` (test, apply, again), `gone` (test, apply, again). Each step: same
//! `--out json` (times and roots blanked), same retcode, same files (the link, the
//! `/etc/alternatives` entry, the admin file).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::states_support::{
    Pair, assert_same, local_minion, normalize, salt_call,
};
use salt_integration_tests::{both, command, require, root, workspace_root};

const NAMES: &[&str] = &["saltrs-e2e-alt", "saltrs-e2e-alt2", "saltrs-e2e-never"];

/// Binds the side's copies over the host's paths, then runs the rest of the arguments.
const WRAP: &str = "set -e; r=$1; shift; mount --bind \"$r/ns/etc-alt\" /etc/alternatives; \
                    mount --bind \"$r/ns/admin\" /var/lib/dpkg/alternatives; \
                    mount --bind \"$r/ns/log\" /var/log; exec \"$@\"";

fn setup(root: &Path) {
    let tree = workspace_root().join("tests/data/states-alternatives");
    local_minion(root, &tree, Some(&root.join("pillar")), "").unwrap();
    for d in ["out/bin", "out/opt", "ns/log"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    for (from, to) in [
        ("/etc/alternatives", "ns/etc-alt"),
        ("/var/lib/dpkg/alternatives", "ns/admin"),
    ] {
        let out = Command::new("cp")
            .args(["-a", from])
            .arg(root.join(to))
            .output()
            .unwrap();
        assert!(out.status.success(), "cp -a {from}: {out:?}");
    }
    for t in ["alt-a", "alt-b"] {
        std::fs::write(
            root.join("out/opt").join(t),
            format!("#!/bin/sh\necho {t}\n"),
        )
        .unwrap();
    }
}

/// The link in the root, each test name's `/etc/alternatives` entry and admin file.
fn files(root: &Path) -> Vec<String> {
    let link = |p: &Path| {
        std::fs::read_link(p)
            .map_or_else(|e| format!("({})", e.kind()), |t| t.display().to_string())
    };
    let mut v = vec![format!(
        "bin/saltrs-alt -> {}",
        link(&root.join("out/bin/saltrs-alt"))
    )];
    for n in NAMES {
        v.push(format!(
            "alternatives/{n} -> {}",
            link(&root.join("ns/etc-alt").join(n))
        ));
        let admin = std::fs::read_to_string(root.join("ns/admin").join(n))
            .unwrap_or_else(|e| format!("({})", e.kind()));
        v.push(format!("admin/{n}: {admin:?}"));
    }
    v.into_iter()
        .map(|l| l.replace(&root.display().to_string(), "ROOT"))
        .collect()
}

#[test]
fn alternatives_states_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let Some(_) = require(both(
        root(),
        both(command("unshare"), command("update-alternatives")),
    )) else {
        return;
    };
    let _guard = serial();
    let pair = Pair::new(&venv, setup).unwrap();
    let steps: Vec<Vec<&str>> = vec![
        vec!["state.apply", "test=True"],
        vec!["state.apply"],
        vec!["state.apply"],
        vec!["state.apply", "auto", "test=True"],
        vec!["state.apply", "auto"],
        vec!["state.apply", "auto"],
        vec!["state.apply", "gone", "test=True"],
        vec!["state.apply", "gone"],
        vec!["state.apply", "gone"],
    ];
    let mut outs = Vec::new();
    for (bin, root) in pair.sides() {
        let mut mine = Vec::new();
        for args in &steps {
            let mut args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
            args.push(format!("pillar={{\"outdir\": \"{}/out\"}}", root.display()));
            let mut wrapper = Command::new("unshare");
            wrapper.args(["-m", "--propagation", "private", "sh", "-c", WRAP, "sh"]);
            wrapper.arg(root).arg(bin);
            let (o, rc) = salt_call(wrapper, root, "json", &args).unwrap();
            mine.push((normalize(&o, root), rc, files(root)));
        }
        outs.push(mine);
    }
    for (i, ((py, rs), args)) in outs[0].iter().zip(&outs[1]).zip(&steps).enumerate() {
        assert_same(
            &format!("step {} {args:?}", i + 1),
            py,
            rs,
            "alternatives_|-",
        );
    }
    assert!(
        !Path::new("/etc/alternatives/saltrs-e2e-alt").exists(),
        "the host's /etc/alternatives was changed"
    );
}
