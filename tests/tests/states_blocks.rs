//! `file.blockreplace`, `file.comment`, `file.uncomment`, `file.serialize`, `module.run` (both
//! syntaxes) and `module.wait` against Python 3007.17's `salt-call --local`, each in its own
//! throwaway root: `test=True`, apply, apply again, apply with a changed pillar, and
//! `--out highstate`. Each step: same `--out json` (times, pids, roots blanked), same
//! retcode, same files (names, modes, contents, backups).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::require;
use salt_integration_tests::states_support::{Pair, assert_same, local_minion, out_files};
use salt_integration_tests::workspace_root;

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

#[test]
fn block_serialize_module_states_same_as_python_3007() {
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
                "pillar={{\"outdir\": \"{}/out\", \"port\": {port}, \
                 \"app\": {{\"port\": {port}, \"hosts\": [\"b\", \"a\"], \"name\": \"caf\u{e9}\"}}}}",
                root.display()
            ));
            args
        };
        let seen = pair.run(out, args, out_files).unwrap();
        let step = format!("step {} test={test} port={port} --out {out}", i + 1);
        assert_same(&step, &seen[0], &seen[1], "block-between-markers");
    }
}
