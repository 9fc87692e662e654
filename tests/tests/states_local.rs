//! States, masterless: the formula-style tree `tests/data/states-formula` (top with a compound
//! match, map.jinja with `grains.filter_by`, relative and absolute includes, `extend`,
//! `names`, `order`, every requisite salt-rs has and their `_in` forms, `mod_watch`,
//! `unless`/`onlyif`/`creates`, a missing requisite, an unavailable state, pillar from
//! `pillar_roots` through `salt['pillar.get']` and `pillar[...]`) applied by the
//! Python 3007.17 `salt-call --local` and by ours, each in its own throwaway root, four
//! times: `test=True`, apply, apply again (nothing to do), `test=True` again.
//!
//! Each step: the `--out json` output is identical once the roots, `start_time`,
//! `duration` and `pid` are blanked; same `--retcode-passthrough` code; same files, modes,
//! symlink targets and contents after the run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::require;
use salt_integration_tests::states_support::{self, local_minion, normalize};
use salt_integration_tests::{TempRoot, bins, run_with_timeout, workspace_root};

fn conf(root: &Path) {
    let tree = workspace_root().join("tests/data/states-formula");
    let pillar = workspace_root().join("tests/data/states-formula-pillar");
    local_minion(root, &tree, Some(&pillar), "").unwrap();
    // States that change something existing: a diff and a removal.
    std::fs::write(root.join("out/c.txt"), "old\n").unwrap();
    std::fs::write(root.join("out/gone"), "").unwrap();
}

fn files(root: &Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut stack = vec![root.join("out")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let what = if m.file_type().is_symlink() {
                let t = std::fs::read_link(&p).unwrap().display().to_string();
                format!("link -> {}", t.replace(&root.display().to_string(), "ROOT"))
            } else if m.is_dir() {
                stack.push(p.clone());
                "dir".into()
            } else {
                format!("file {:?}", std::fs::read_to_string(&p).unwrap())
            };
            out.push(format!("{rel} {:o} {what}", m.mode() & 0o7777));
        }
    }
    out.sort();
    out
}

fn salt_call(bin: &Path, root: &Path, extra: &[&str]) -> (String, Option<i32>) {
    salt_call_out(bin, root, "json", extra)
}

fn salt_call_out(bin: &Path, root: &Path, out: &str, extra: &[&str]) -> (String, Option<i32>) {
    let args: Vec<&str> = std::iter::once("state.apply")
        .chain(extra.iter().copied())
        .collect();
    states_support::salt_call(Command::new(bin), root, out, &args).unwrap()
}

#[test]
fn formula_tree_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let tmp = TempRoot::new().unwrap();
    let (py_root, rs_root) = (tmp.path().join("py"), tmp.path().join("rs"));
    conf(&py_root);
    conf(&rs_root);
    for (step, extra) in [["test=True"], [""], [""], ["test=True"]]
        .iter()
        .enumerate()
    {
        let extra: Vec<&str> = extra.iter().copied().filter(|s| !s.is_empty()).collect();
        let (py_out, py_rc) = salt_call(&venv.bin("salt-call"), &py_root, &extra);
        let (rs_out, rs_rc) = salt_call(&ours, &rs_root, &extra);
        assert!(
            py_out.contains("\"__run_num__\": 24"),
            "step {step}: Salt's run is not the expected one:\n{py_out}"
        );
        assert_eq!(
            normalize(&rs_out, &rs_root),
            normalize(&py_out, &py_root),
            "step {step} ({extra:?}): our salt-call --out json differs from Salt 3007.17's"
        );
        assert_eq!(rs_rc, py_rc, "step {step}: retcode");
        assert_eq!(files(&rs_root), files(&py_root), "step {step}: files");
        println!(
            "step {} {:?}: same output, retcode {:?}, files",
            step + 1,
            extra,
            rs_rc
        );
    }
    // `--out highstate` (no terminal: no colours), a test run that would change things.
    std::fs::write(py_root.join("out/c.txt"), "changed\n").unwrap();
    std::fs::write(rs_root.join("out/c.txt"), "changed\n").unwrap();
    let (py_out, _) = salt_call_out(
        &venv.bin("salt-call"),
        &py_root,
        "highstate",
        &["test=True"],
    );
    let (rs_out, _) = salt_call_out(&ours, &rs_root, "highstate", &["test=True"]);
    assert!(py_out.contains("Summary for local"), "{py_out}");
    assert_eq!(
        normalize_highstate(&rs_out, &rs_root),
        normalize_highstate(&py_out, &py_root),
        "--out highstate differs from Salt 3007.17's"
    );
    println!("--out highstate: same");
    // `exclude=` (applied after `extend`, as in Salt) and `pillarenv=`.
    let extra = ["exclude=web.conf", "pillarenv=base", "test=True"];
    let (py_out, py_rc) = salt_call(&venv.bin("salt-call"), &py_root, &extra);
    let (rs_out, rs_rc) = salt_call(&ours, &rs_root, &extra);
    assert!(!py_out.contains("web.conf"), "{py_out}");
    assert_eq!(
        normalize(&rs_out, &rs_root),
        normalize(&py_out, &py_root),
        "{extra:?}"
    );
    assert_eq!(rs_rc, py_rc);
    println!("{extra:?}: same");
    // state.single: a new file from `contents`, with and without Salt's temp-file mode.
    for mode in ["mode=600", "mode=644"] {
        let mut outs = Vec::new();
        for (bin, root) in [(venv.bin("salt-call"), &py_root), (ours.clone(), &rs_root)] {
            let target = root.join("out/single.txt");
            let mut c = Command::new(bin);
            c.current_dir(root)
                .args(["-c", "conf", "--local", "--out", "json"])
                .args(["state.single", "file.managed"])
                .arg(format!("name={}", target.display()))
                .args(["contents=hey", mode]);
            let out = run_with_timeout(c, Duration::from_secs(120)).unwrap();
            outs.push(normalize(&out.stdout, root));
            std::fs::remove_file(&target).unwrap();
        }
        assert_eq!(outs[1], outs[0], "state.single file.managed {mode}");
        println!("state.single {mode}: same");
    }
}

/// Blank roots, start times, durations and pids in `--out highstate` text.
fn normalize_highstate(text: &str, root: &Path) -> String {
    let text = text.replace(&root.display().to_string(), "ROOT");
    let mut out = Vec::new();
    let mut after_pid = false;
    for l in text.lines() {
        let t = l.trim_start();
        let line = if after_pid {
            "PID".to_owned()
        } else if let Some(k) = ["Started:", "Duration:", "Total run time:"]
            .iter()
            .find(|k| t.starts_with(**k))
        {
            format!("{k} X")
        } else {
            l.to_owned()
        };
        after_pid = t == "pid:";
        out.push(line);
    }
    out.join("\n")
}

#[test]
fn no_top_match_and_render_error() {
    let tmp = TempRoot::new().unwrap();
    let root = tmp.path();
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    std::fs::create_dir_all(root.join("srv")).unwrap();
    std::fs::write(root.join("srv/top.sls"), "base:\n  'other':\n    - x\n").unwrap();
    std::fs::write(root.join("srv/bad.sls"), "a: {{ nope }}\n").unwrap();
    std::fs::create_dir_all(root.join("conf")).unwrap();
    std::fs::write(
        root.join("conf/minion"),
        format!(
            "id: t1\nfile_roots:\n  base: [{r}/srv]\npillar_roots:\n  base: [{r}/nopillar]\n",
            r = root.display()
        ),
    )
    .unwrap();
    let (out, rc) = salt_call(&ours, root, &[]);
    assert!(out.contains("\"no_|-states_|-states_|-None\""), "{out}");
    assert!(
        out.contains("No Top file or master_tops data matches found."),
        "{out}"
    );
    assert_eq!(rc, Some(2));
    let mut c = Command::new(&ours);
    c.current_dir(root)
        .args(["-c", "conf", "--local", "--out", "json", "state.sls", "bad"]);
    let res = run_with_timeout(c, Duration::from_secs(60)).unwrap();
    assert!(
        res.stdout.contains("Rendering SLS 'base:bad' failed"),
        "{}",
        res.stdout
    );
    assert_eq!(res.status.and_then(|s| s.code()), Some(1));
    // A pillar that fails to render stops states, as in Salt.
    std::fs::create_dir_all(root.join("pillar")).unwrap();
    std::fs::write(root.join("pillar/top.sls"), "base:\n  '*':\n    - broken\n").unwrap();
    std::fs::write(root.join("pillar/broken.sls"), "a: {{ nope }}\n").unwrap();
    std::fs::write(
        root.join("conf/minion"),
        format!(
            "id: t1\npki_dir: {r}/pki\ncachedir: {r}/cache\nfile_roots:\n  base: [{r}/srv]\npillar_roots:\n  base: [{r}/pillar]\n",
            r = root.display()
        ),
    )
    .unwrap();
    let (out, rc) = salt_call(&ours, root, &[]);
    assert!(
        out.contains("Pillar failed to render with the following messages:"),
        "{out}"
    );
    assert_eq!(rc, Some(5));
    // Without --local: signs in to the configured master (here none answers: said so).
    // Unknown outputters: refused by name.
    let mut c = Command::new(&ours);
    c.current_dir(root).args(["-c", "conf", "state.apply"]);
    let res = run_with_timeout(c, Duration::from_secs(60)).unwrap();
    assert!(
        res.stderr.contains("Unable to sign in to a master"),
        "{}",
        res.stderr
    );
    let mut c = Command::new(&ours);
    c.current_dir(root)
        .args(["-c", "conf", "--local", "--out", "bogus", "state.apply"]);
    let res = run_with_timeout(c, Duration::from_secs(60)).unwrap();
    assert!(
        res.stderr.contains("outputter 'bogus' is not supported"),
        "{}",
        res.stderr
    );
}
