//! `file.blockreplace`, `file.comment`, `file.uncomment`, `file.serialize`, `module.run` (both
//! syntaxes) and `module.wait` against Python 3007.17's `salt-call --local`, each in its own
//! throwaway root: `test=True`, apply, apply again, apply with a changed pillar, and
//! `--out highstate`. Each step: same `--out json` (times, pids, roots blanked), same
//! retcode, same files (names, modes, contents, backups).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::require;
use salt_integration_tests::states_support::{local_minion, normalize, salt_call};
use salt_integration_tests::{TempRoot, bins, workspace_root};

fn setup(root: &Path) {
    let tree = workspace_root().join("tests/data/states-blocks");
    local_minion(root, &tree, None, "").unwrap();
    let write = |name: &str, body: &str| std::fs::write(root.join("out").join(name), body).unwrap();
    write(
        "app.conf",
        "# app\nname = app\n# BEGIN managed\nold = 1\n# END managed\ntail = 1\n",
    );
    write(
        "lines.conf",
        "bind 127.0.0.1\n  # EXTRA_GROUPS=\"audio video\"\nport 22\n#PermitRoot yes\n",
    );
    write(
        "php.ini",
        "[PHP]\nengine = On\nextension=gd\nextension=zip\n",
    );
    write("merge.yaml", "keep: me\nport: 1\nnested:\n  a: 1\n");
}

fn files(root: &Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let mut v: Vec<String> = std::fs::read_dir(root.join("out"))
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let m = std::fs::metadata(&p).unwrap();
            format!(
                "{} {:o} {:?}",
                p.file_name().unwrap().to_string_lossy(),
                m.mode() & 0o7777,
                std::fs::read_to_string(&p).unwrap_or_default()
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn block_serialize_module_states_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let tmp = TempRoot::new().unwrap();
    let (py_root, rs_root) = (tmp.path().join("py"), tmp.path().join("rs"));
    setup(&py_root);
    setup(&rs_root);
    let steps: [(&str, bool, u32); 6] = [
        ("json", true, 8080),
        ("json", false, 8080),
        ("json", false, 8080),
        ("json", true, 9090),
        ("json", false, 9090),
        ("highstate", true, 7070),
    ];
    for (i, (out, test, port)) in steps.iter().enumerate() {
        let mut res = Vec::new();
        for (bin, root) in [(venv.bin("salt-call"), &py_root), (ours.clone(), &rs_root)] {
            let mut args = vec!["state.apply".to_owned()];
            if *test {
                args.push("test=True".into());
            }
            args.push(format!(
                "pillar={{\"outdir\": \"{}/out\", \"port\": {port}, \
                 \"app\": {{\"port\": {port}, \"hosts\": [\"b\", \"a\"], \"name\": \"caf\u{e9}\"}}}}",
                root.display()
            ));
            let (o, rc) = salt_call(Command::new(bin), root, out, &args).unwrap();
            res.push((normalize(&o, root), rc, files(root)));
        }
        assert!(
            res[0].0.contains("block-between-markers"),
            "step {i}: Salt's run: {}",
            res[0].0
        );
        assert_eq!(
            res[1].0, res[0].0,
            "step {i}: --out {out} test={test} differs from Salt 3007.17's"
        );
        assert_eq!(res[1].1, res[0].1, "step {i}: retcode");
        assert_eq!(res[1].2, res[0].2, "step {i}: files");
        println!(
            "step {} test={test} port={port} --out {out}: same output, retcode {:?}, files",
            i + 1,
            res[1].1
        );
    }
}
