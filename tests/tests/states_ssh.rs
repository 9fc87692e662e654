//! `ssh_auth.present`/`absent` and `ssh_known_hosts.present`/`absent` against Python
//! 3007.17's `salt-call --local`, on a uniquely named user (`saltrs-e2e-ssh`, created here
//! with its home in each side's throwaway root, removed at the end) whose
//! `authorized_keys` starts with hand-written lines (a comment, CRLF, a blank line, a junk
//! line, no final newline). Steps, each from the same start: `test=True`, apply, apply
//! again, `test=True` and apply with another comment, options and host key, then the `gone`
//! SLS. Each step: same `--out json` (times and roots blanked, `ssh-keygen -H`'s random
//! salts blanked), same retcode, same files under the root (names, owners, modes, bytes).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::states_support::{
    Pair, assert_same, local_minion, normalize, salt_call,
};
use salt_integration_tests::{both, command, require, root, workspace_root};

const USER: &str = "saltrs-e2e-ssh";

const HAND_WRITTEN: &str = "# keys by hand\r\n\r\necdsa-sha2-nistp256 \
AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBL7b0SfGYUePdJiszQpj5Fknr4A70b6bzijlZk9UHTZgYFP2uqyR6OSak94Pso5EGYsh/STGAKBCfID/kgkoqzE= \
old@host\r\ngarbage line here\n  \nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFfTs9eMPy7zyyQaibwYAqz0RBz1z7eoRSLFlqUMnnDC  extra  spaces";

fn cleanup() {
    let _ = Command::new("userdel").arg(USER).output();
    let _ = Command::new("groupdel").arg(USER).output();
}

fn setup(root: &Path) {
    let tree = workspace_root().join("tests/data/states-ssh");
    local_minion(root, &tree, Some(&root.join("pillar")), "").unwrap();
}

/// The user, with `ROOT/home/ssh` as home and the hand-written key file.
fn create_user(root: &Path) {
    let home = root.join("home/ssh");
    let out = Command::new("useradd")
        .args(["-M", "-s", "/bin/sh", "-d"])
        .arg(&home)
        .arg(USER)
        .output()
        .unwrap();
    assert!(out.status.success(), "useradd: {out:?}");
    let ssh = home.join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("authorized_keys"), HAND_WRITTEN).unwrap();
    std::fs::set_permissions(
        ssh.join("authorized_keys"),
        PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let pw = Command::new("chown")
        .args(["-R", &format!("{USER}:{USER}")])
        .arg(&home)
        .output()
        .unwrap();
    assert!(pw.status.success(), "chown: {pw:?}");
}

/// `|1|salt|hash` (a hashed known_hosts name) with salt and hash blanked.
fn unsalt(text: &str) -> String {
    let re = regex::Regex::new(r"\|1\|[A-Za-z0-9+/=]+\|[A-Za-z0-9+/=]+").unwrap();
    re.replace_all(text, "|1|SALT|HASH").into_owned()
}

/// Every file under `root/home` and `root/out`: path, owner (`user`/`root`), mode, bytes.
fn files(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, root: &Path, uid: u32, out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let owner = if m.uid() == uid { "user" } else { "other" };
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            if m.is_dir() {
                out.push(format!("{rel}/ {owner} {:o}", m.mode() & 0o7777));
                walk(&p, root, uid, out);
            } else {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                out.push(format!(
                    "{rel} {owner} {:o} {:?}",
                    m.mode() & 0o7777,
                    unsalt(&text)
                ));
            }
        }
    }
    let uid = std::fs::metadata(root.join("home/ssh"))
        .map(|m| m.uid())
        .unwrap_or(u32::MAX);
    let mut v = Vec::new();
    walk(&root.join("home"), root, uid, &mut v);
    walk(&root.join("out"), root, uid, &mut v);
    v.sort();
    v
}

#[test]
fn ssh_states_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let Some(_) = require(both(
        root(),
        both(command("useradd"), command("ssh-keygen")),
    )) else {
        return;
    };
    let _guard = serial();
    let pair = Pair::new(&venv, setup).unwrap();
    let changed = r#""comment": "other@host", "options": ["no-pty"], "hostkey": "AAAAC3NzaC1lZDI1NTE5AAAAIFfTs9eMPy7zyyQaibwYAqz0RBz1z7eoRSLFlqUMnnDC""#;
    let steps: Vec<(Vec<&str>, &str)> = vec![
        (vec!["state.apply", "test=True"], ""),
        (vec!["state.apply"], ""),
        (vec!["state.apply"], ""),
        (vec!["state.apply", "test=True"], changed),
        (vec!["state.apply"], changed),
        (vec!["state.apply", "gone", "test=True"], ""),
        (vec!["state.apply", "gone"], ""),
        (vec!["state.apply", "gone"], ""),
    ];
    let mut outs = Vec::new();
    for (bin, root) in pair.sides() {
        cleanup();
        create_user(root);
        let mut mine = Vec::new();
        for (args, extra) in &steps {
            let sep = if extra.is_empty() { "" } else { ", " };
            let mut args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
            args.push(format!(
                "pillar={{\"outdir\": \"{}/out\"{sep}{extra}}}",
                root.display()
            ));
            let (o, rc) = salt_call(Command::new(bin), root, "json", &args).unwrap();
            mine.push((unsalt(&normalize(&o, root)), rc, files(root)));
        }
        outs.push(mine);
    }
    cleanup();
    for (i, ((py, rs), (args, extra))) in outs[0].iter().zip(&outs[1]).zip(&steps).enumerate() {
        let step = format!("step {} {args:?} {extra}", i + 1);
        assert_same(&step, py, rs, "ssh_auth_|-");
    }
}
