//! `user.present`/`absent`, `group.present`/`absent` against Python 3007.17's
//! `salt-call --local`, on a uniquely named user (`saltrs-e2e-u1`, home in the throwaway
//! root) and groups (`saltrs-e2e-g1`, `-g2`) that are removed before each side's run and
//! at the end. Steps, each from the same start: `test=True`, apply, apply again, apply with
//! another shell, full name and group list, then the `gone` SLS. Each step: same
//! `--out json` (times and roots blanked), same retcode, same `/etc/passwd` and
//! `/etc/group` lines for the test accounts. The uids and gids the system hands out are
//! named by order of first appearance (`UID0`, `GID0`, `GID1`...) on each side: another
//! test binary creating a user between the two runs moves the next free id (seen with three
//! binaries at once), and one side's user may get uid = gid where the other's does not.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::states_support::{local_minion, normalize, salt_call};
use salt_integration_tests::{TempRoot, bins, workspace_root};
use salt_integration_tests::{require, root};

fn cleanup() {
    let _ = Command::new("userdel")
        .args(["-r", "saltrs-e2e-u1"])
        .output();
    for g in ["saltrs-e2e-g1", "saltrs-e2e-g2", "saltrs-e2e-u1"] {
        let _ = Command::new("groupdel").arg(g).output();
    }
}

fn accounts(root: &Path) -> Vec<String> {
    let mut v = Vec::new();
    for f in ["/etc/passwd", "/etc/group"] {
        for l in std::fs::read_to_string(f).unwrap().lines() {
            if l.starts_with("saltrs-e2e-") {
                v.push(l.replace(&root.display().to_string(), "ROOT"));
            }
        }
    }
    v
}

fn setup(root: &Path) {
    let tree = workspace_root().join("tests/data/states-user");
    local_minion(root, &tree, Some(&root.join("pillar")), "").unwrap();
    std::fs::create_dir_all(root.join("out/home")).unwrap();
}

#[test]
fn user_group_states_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let Some(()) = require(root()) else {
        return;
    };
    let _guard = serial();
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let tmp = TempRoot::new().unwrap();
    let (py_root, rs_root) = (tmp.path().join("py"), tmp.path().join("rs"));
    setup(&py_root);
    setup(&rs_root);
    let changed = r#""shell": "/bin/bash", "fullname": "Other Name", "groups": ["saltrs-e2e-g2"]"#;
    let steps: Vec<(Vec<&str>, &str)> = vec![
        (vec!["state.apply", "test=True"], ""),
        (vec!["state.apply"], ""),
        (vec!["state.apply"], ""),
        (vec!["state.apply", "test=True"], changed),
        (vec!["state.apply"], changed),
        (vec!["state.apply", "gone", "test=True"], ""),
        (vec!["state.apply", "gone"], ""),
    ];
    let mut outs = Vec::new();
    for (bin, root) in [(venv.bin("salt-call"), &py_root), (ours, &rs_root)] {
        cleanup();
        let mut mine = Vec::new();
        for (args, extra) in &steps {
            let sep = if extra.is_empty() { "" } else { ", " };
            let mut args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
            args.push(format!(
                "pillar={{\"outdir\": \"{}/out\"{sep}{extra}}}",
                root.display()
            ));
            let (o, rc) = salt_call(Command::new(&bin), root, "json", &args).unwrap();
            mine.push((normalize(&o, root), rc, accounts(root)));
        }
        outs.push(symbolic_ids(mine));
    }
    cleanup();
    for (i, ((py, rs), (args, extra))) in outs[0].iter().zip(&outs[1]).zip(&steps).enumerate() {
        assert!(
            py.0.contains("saltrs-e2e-u1"),
            "step {i}: Salt's run: {}",
            py.0
        );
        assert_eq!(
            rs.0, py.0,
            "step {i} {args:?} {extra}: our --out json differs from Salt 3007.17's"
        );
        assert_eq!(rs.1, py.1, "step {i}: retcode");
        assert_eq!(rs.2, py.2, "step {i}: accounts");
        println!(
            "step {} {args:?} {extra}: same output, retcode {:?}, accounts {:?}",
            i + 1,
            rs.1,
            rs.2
        );
    }
}

type Step = (String, Option<i32>, Vec<String>);

/// `steps` with the test accounts' uids and gids (from their `/etc/passwd` and `/etc/group`
/// lines) replaced by `UID<n>` and `GID<n>`, n their order of first appearance, in the
/// output (`"uid": N`, `"gid": N`) and in the account lines. Uids and gids are numbered
/// apart: one side's user may get uid 1001 and gid 1003, the other's 1001 and 1001.
fn symbolic_ids(steps: Vec<Step>) -> Vec<Step> {
    let (mut uids, mut gids): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    let note = |ids: &mut Vec<String>, id: &str| {
        if !ids.iter().any(|x| x == id) {
            ids.push(id.to_owned());
        }
    };
    for line in steps.iter().flat_map(|s| &s.2) {
        let f: Vec<&str> = line.split(':').collect();
        match f.len() {
            7 => {
                note(&mut uids, f[2]);
                note(&mut gids, f[3]);
            }
            4 => note(&mut gids, f[2]),
            _ => {}
        }
    }
    let name = |ids: &[String], kind: &str, id: &str| -> String {
        match ids.iter().position(|x| x == id) {
            Some(n) => format!("{kind}{n}"),
            None => id.to_owned(),
        }
    };
    let id_at = regex::Regex::new(r#""([ug])id": (\d+)\b"#).unwrap();
    let swap_out = |text: &str| -> String {
        id_at
            .replace_all(text, |c: &regex::Captures<'_>| {
                let (ids, kind) = if &c[1] == "u" {
                    (&uids, "UID")
                } else {
                    (&gids, "GID")
                };
                format!("\"{}id\": {}", &c[1], name(ids, kind, &c[2]))
            })
            .into_owned()
    };
    let swap_line = |line: &str| -> String {
        let mut f: Vec<String> = line.split(':').map(str::to_owned).collect();
        match f.len() {
            7 => {
                f[2] = name(&uids, "UID", &f[2]);
                f[3] = name(&gids, "GID", &f[3]);
            }
            4 => f[2] = name(&gids, "GID", &f[2]),
            _ => {}
        }
        f.join(":")
    };
    steps
        .into_iter()
        .map(|(out, rc, lines)| {
            (
                swap_out(&out),
                rc,
                lines.iter().map(|l| swap_line(l)).collect(),
            )
        })
        .collect()
}
