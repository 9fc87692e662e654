//! `salt-call --local` flags and functions against Salt 3007.17's own `salt-call --local`,
//! each in its own throwaway root with the same minion config (no `file_roots` or
//! `pillar_roots`: the command line gives them):
//!
//! * `--file-root` / `--pillar-root` (relative paths, made absolute as Salt does) with
//!   `state.show_highstate` and `state.apply` of an SLS whose template calls
//!   `salt['file.file_exists']` and `salt['cmd.run']` (a template calling execution modules
//!   once panicked "Cannot start a runtime from within a runtime");
//! * `pillar.get` with `delimiter=`, list indexes and a default;
//! * `--out-indent` (positive and negative) and `--out-file`.
//!
//! Every case compares the output (throwaway root, times and pids blanked) and the exit code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::states_support::normalize;
use salt_integration_tests::{TempRoot, bins, run_with_timeout};

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A minion config without roots, a state tree in `srv/`, a pillar tree in `pil/`.
fn tree(root: &Path) {
    let r = root.display();
    write(
        root,
        "conf/minion",
        &format!(
            "id: t1\nroot_dir: {r}\ncachedir: {r}/cache\npki_dir: {r}/pki\nsock_dir: {r}/sock\n\
             log_file: {r}/minion.log\n"
        ),
    );
    write(root, "srv/top.sls", "base:\n  '*':\n    - tmpl\n");
    write(
        root,
        "srv/tmpl.sls",
        &format!(
            "{{% if salt['file.file_exists']('{r}/srv/top.sls') %}}\n\
             from-template:\n  test.succeed_without_changes:\n    - name: {{{{ salt['cmd.run']('echo from-cmd') }}}}\n\
             {{% endif %}}\n\
             {{% if not salt['file.file_exists']('{r}/srv/missing') %}}\n\
             no-missing:\n  test.nop: []\n\
             {{% endif %}}\n"
        ),
    );
    write(root, "pil/top.sls", "base:\n  '*':\n    - p\n");
    write(
        root,
        "pil/p.sls",
        "a:\n  b:\n    - x\n    - y\n  c: {d: 1}\n'k:e': colon\n",
    );
}

/// `salt-call -c conf --local ARGS` in `root`: stdout and exit code.
fn call(bin: &Path, root: &Path, args: &[&str]) -> (String, Option<i32>) {
    let mut c = Command::new(bin);
    c.current_dir(root)
        .args(["-c", "conf", "--local"])
        .args(args);
    let out = run_with_timeout(c, Duration::from_secs(120)).unwrap();
    (out.stdout, out.status.and_then(|s| s.code()))
}

/// Without the lines of the `__pub_pid` and `__pub_jid` keyword arguments (`test.arg`).
fn no_pub(text: &str) -> String {
    text.lines()
        .filter(|l| !l.contains("\"__pub_pid\"") && !l.contains("\"__pub_jid\""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn salt_call_local_flags_same_as_python_3007() {
    let Some(venv) = salt_integration_tests::require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let theirs = venv.bin("salt-call");
    let tmp = TempRoot::new().unwrap();
    let (py_root, rs_root) = (tmp.path().join("py"), tmp.path().join("rs"));
    tree(&py_root);
    tree(&rs_root);
    let roots = ["--file-root", "srv", "--pillar-root", "pil"];
    let cases: Vec<Vec<&str>> = vec![
        [&roots[..], &["--out", "json", "state.show_highstate"]].concat(),
        [&roots[..], &["--out", "json", "state.show_sls", "tmpl"]].concat(),
        [
            &roots[..],
            &["--out", "json", "--retcode-passthrough", "state.apply"],
        ]
        .concat(),
        [&roots[..], &["--out", "json", "state.sls", "tmpl"]].concat(),
        vec![
            "--pillar-root",
            "pil",
            "--out",
            "json",
            "pillar.get",
            "a,b,1",
            "delimiter=,",
        ],
        vec![
            "--pillar-root",
            "pil",
            "--out",
            "json",
            "pillar.get",
            "a:b:0",
        ],
        vec![
            "--pillar-root",
            "pil",
            "--out",
            "json",
            "pillar.get",
            "a|c|d",
            "delimiter=|",
        ],
        vec!["--pillar-root", "pil", "pillar.get", "a:nope", "default=zz"],
        vec!["--pillar-root", "pil", "--out", "json", "pillar.items"],
        vec!["--out", "json", "--out-indent", "2", "test.arg", "x", "k=v"],
        vec![
            "--out",
            "json",
            "--out-indent",
            "-1",
            "test.arg",
            "x",
            "k=v",
        ],
        vec!["--out", "yaml", "test.echo", "hi"],
        vec![
            "--out", "json", "test.arg", "1", "x", "l=[1, 2]", "h=a#b", "p=|", "n=None",
        ],
    ];
    for args in &cases {
        let (py_out, py_rc) = call(&theirs, &py_root, args);
        let (rs_out, rs_rc) = call(&ours, &rs_root, args);
        assert!(!py_out.is_empty(), "{args:?}: Salt printed nothing");
        assert_eq!(
            normalize(&no_pub(&rs_out), &rs_root),
            normalize(&no_pub(&py_out), &py_root),
            "salt-call --local {args:?}: ours (left) and Salt 3007.17's (right) differ"
        );
        assert_eq!(rs_rc, py_rc, "{args:?}: exit code");
        println!("{args:?}: same output, exit code {rs_rc:?}");
    }
    // The template's calls ran (not an empty or failed run).
    let (out, rc) = call(&ours, &rs_root, &cases[2]);
    assert_eq!(rc, Some(0), "{out}");
    assert!(
        out.contains("from-cmd") && out.contains("no-missing"),
        "{out}"
    );
    // --out-file: the same text in the file, nothing on stdout.
    for (bin, root) in [(&theirs, &py_root), (&ours, &rs_root)] {
        let (stdout, rc) = call(
            bin,
            root,
            &["--out", "json", "--out-file", "o.json", "test.echo", "hi"],
        );
        assert_eq!((stdout.as_str(), rc), ("", Some(0)));
    }
    assert_eq!(
        std::fs::read_to_string(rs_root.join("o.json")).unwrap(),
        std::fs::read_to_string(py_root.join("o.json")).unwrap(),
        "--out-file"
    );
}

/// Execution functions bound to Salt's parameter names and honouring what they take (before,
/// `file.touch name=`, `file.mkdir dir_path=` and `file.symlink src= path=` were not found
/// under those names, and `file.get_mode` read a symlink's own mode): the same answers and
/// exit codes as Salt 3007.17's `salt-call --local`, each side in its own root.
#[test]
fn execution_function_arguments_bound_as_python_3007() {
    let Some(venv) = salt_integration_tests::require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let ours = bins().unwrap().minion.with_file_name("salt-call");
    let theirs = venv.bin("salt-call");
    let tmp = TempRoot::new().unwrap();
    for (bin, side) in [(&theirs, "py"), (&ours, "rs")] {
        let root = tmp.path().join(side);
        tree(&root);
        std::os::unix::fs::symlink("top.sls", root.join("srv/link")).unwrap();
        let r = root.display().to_string();
        let cases: Vec<Vec<String>> = vec![
            vec!["file.get_mode".into(), "srv/link".into()],
            vec![
                "file.get_mode".into(),
                "srv/link".into(),
                "follow_symlinks=False".into(),
            ],
            vec![
                "file.get_hash".into(),
                "srv/top.sls".into(),
                "chunk_size=5".into(),
            ],
            vec!["file.touch".into(), format!("name={r}/touched")],
            vec!["file.mkdir".into(), format!("dir_path={r}/made/deep")],
            vec![
                "file.symlink".into(),
                "src=top.sls".into(),
                format!("path={r}/srv/l2"),
            ],
            // Already the link asked for: True, nothing done.
            vec![
                "file.symlink".into(),
                "top.sls".into(),
                format!("{r}/srv/l2"),
            ],
            vec!["file.directory_exists".into(), format!("{r}/made/deep")],
            vec!["file.file_exists".into(), format!("path={r}/touched")],
            vec!["file.readlink".into(), format!("{r}/srv/l2")],
        ];
        for args in &cases {
            let mut full = vec!["--out", "json"];
            full.extend(args.iter().map(String::as_str));
            let (out, rc) = call(bin, &root, &full);
            let log = root.join("outs");
            let mut all = std::fs::read_to_string(&log).unwrap_or_default();
            all.push_str(&format!(
                "{args:?}\n{}\nrc {rc:?}\n",
                normalize(&out, &root)
            ));
            std::fs::write(&log, all).unwrap();
        }
    }
    let read = |side: &str| std::fs::read_to_string(tmp.path().join(side).join("outs")).unwrap();
    let (py, rs) = (read("py"), read("rs"));
    assert!(py.contains("\"0644\"") && py.contains("\"0777\""), "{py}");
    assert_eq!(
        rs.replace("/rs/", "/SIDE/"),
        py.replace("/py/", "/SIDE/"),
        "ours (left) and Salt 3007.17's (right) differ"
    );
}
