//! `file.append`, `file.replace`, `file.touch`, `file.line`, `cmd.script`, `host.present`/`absent` (on a `hosts.file`
//! in the root) states against Python 3007.17's
//! `salt-call --local`, each in its own throwaway root: `test=True`, apply, apply again,
//! apply with a changed pillar, and `--out highstate`. Each step: same `--out json` (times,
//! pids, roots blanked), same retcode, same files (names, modes, contents, backups).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::require;
use salt_integration_tests::states_support::{
    Pair, assert_same, local_minion, out_files, salt_call,
};
use salt_integration_tests::workspace_root;

fn setup(root: &Path) {
    let tree = workspace_root().join("tests/data/states-edit");
    let hosts = format!("hosts.file: {}/out/hosts\n", root.display());
    local_minion(root, &tree, Some(&root.join("pillar")), &hosts).unwrap();
    std::fs::write(
        root.join("out/hosts"),
        "127.0.0.1\tlocalhost\n# a comment\n10.0.0.5\told-alias web.example  # old one\n",
    )
    .unwrap();
    std::fs::write(
        root.join("out/lines.conf"),
        "[main]\n    key = 1\nfoo=bar\n# end\n",
    )
    .unwrap();
}

#[test]
fn edit_states_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let pair = Pair::new(&venv, setup).unwrap();
    let steps: [(&str, bool, u32); 6] = [
        ("json", true, 8080),
        ("json", false, 8080),
        ("json", false, 8080),
        ("json", true, 9090),
        ("json", false, 9090),
        ("highstate", true, 7070),
    ];
    for (i, (out, test, port)) in steps.iter().enumerate() {
        let args = |root: &Path| {
            let mut args = vec!["state.apply".to_owned()];
            if *test {
                args.push("test=True".into());
            }
            args.push(format!(
                "pillar={{\"outdir\": \"{}/out\", \"port\": {port}}}",
                root.display()
            ));
            args
        };
        let seen = pair.run(out, args, out_files).unwrap();
        let step = format!("step {} test={test} port={port} --out {out}", i + 1);
        assert_same(&step, &seen[0], &seen[1], "append-lines");
    }
}

/// `file.recurse`: apply, apply again, `test=True` after one file changed locally, apply.
/// Salt iterates sets here (the order of `changes` varies between its runs), so each
/// `--out json` is compared as parsed JSON (keys sorted).
#[test]
fn recurse_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let pair = Pair::new(&venv, setup).unwrap();
    for (i, test) in [false, false, true, false].into_iter().enumerate() {
        let mut res = Vec::new();
        for (bin, root) in pair.sides() {
            if i == 2 {
                std::fs::write(root.join("out/tree/sub/b.conf"), "changed\n").unwrap();
            }
            let mut args = vec!["state.apply".to_owned(), "recurse".into()];
            if test {
                args.push("test=True".into());
            }
            args.push(format!("pillar={{\"outdir\": \"{}/out\"}}", root.display()));
            let (o, rc) = salt_call(Command::new(bin), root, "json", &args).unwrap();
            let text = o.replace(&root.display().to_string(), "ROOT");
            let mut json: serde_json::Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("step {i}: {e}: {text}"));
            blank(&mut json);
            res.push((json, rc, tree_files(&root.join("out/tree"))));
        }
        assert!(
            res[0].0.to_string().contains("recurse-tree"),
            "{}",
            res[0].0
        );
        assert_eq!(
            res[1].0, res[0].0,
            "step {i} test={test}: file.recurse differs from Salt's"
        );
        assert_eq!(res[1].1, res[0].1, "step {i}: retcode");
        assert_eq!(res[1].2, res[0].2, "step {i}: files");
        println!(
            "recurse step {} test={test}: same output, retcode {:?}",
            i + 1,
            res[1].1
        );
    }
}

/// Blank `start_time`, `duration` and `pid` everywhere.
fn blank(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if ["start_time", "duration", "pid"].contains(&k.as_str()) {
                    *x = serde_json::Value::Null;
                } else {
                    blank(x);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(blank),
        _ => {}
    }
}

/// Every entry under `dir`: relative path, mode, contents.
fn tree_files(dir: &Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let m = std::fs::metadata(&p).unwrap();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if m.is_dir() {
                stack.push(p.clone());
                out.push(format!("{rel}/ {:o}", m.mode() & 0o7777));
            } else {
                let body = std::fs::read_to_string(&p).unwrap_or_default();
                out.push(format!("{rel} {:o} {body:?}", m.mode() & 0o7777));
            }
        }
    }
    out.sort();
    out
}
