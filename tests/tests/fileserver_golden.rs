//! Our master's file-server replies against a real Salt 3007.17 master's, request by request.
//!
//! `scripts/fileserver-requests.py` (run with a Salt venv's python) signs in as a minion
//! through Salt's own request channel and sends every file-server request a Python minion
//! sends (listings with prefixes and environments, find/hash/stat of plain files, symlinks
//! and hostile paths, chunked and gzip `_serve_file`, `_master_opts`, `_master_tops`,
//! `_file_recv`, unknown commands). `scripts/gen-fileserver-golden.sh` recorded Salt's
//! replies in `tests/data/fileserver-golden.json`; here our master answers the same requests
//! on the same tree and config, and every reply must be equal after the script's
//! normalization (tree path, stat reduced to mode and size, gzip decompressed).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use salt_integration_tests::interop_support::{Daemon, Side, serial, venv_for};
use salt_integration_tests::require;
use salt_integration_tests::{
    MasterConf, TempRoot, Yaml, bins, free_port_pair, run_with_timeout, workspace_root,
};

/// The master options of `scripts/gen-fileserver-golden.sh`.
pub fn fileserver_master_conf(dir: &Path, tree: &Path, ports: (u16, u16)) -> MasterConf {
    MasterConf::new(dir)
        .id("fsgolden_master")
        .ports(ports.0, ports.1)
        .auto_accept(true)
        .set("worker_threads", 2u32)
        .set("file_buffer_size", 4096u32)
        .set("file_ignore_regex", Yaml::Raw("['/\\.hidden']".into()))
        .set(
            "file_roots",
            Yaml::Raw(format!(
                "{{base: ['{t}/base'], dev: ['{t}/dev']}}",
                t = tree.display()
            )),
        )
}

#[test]
fn fileserver_replies_match_salt_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let root = TempRoot::new().unwrap();
    let script = workspace_root().join("scripts/fileserver-requests.py");
    let python = venv.bin("python");
    let tree = root.path().join("tree");
    let mut c = std::process::Command::new(&python);
    c.arg(&script).arg("tree").arg(&tree);
    run_with_timeout(c, Duration::from_secs(60))
        .unwrap()
        .ok()
        .unwrap();
    let ports = free_port_pair().unwrap();
    let ours = Side::Ours(bins().unwrap());
    let conf = fileserver_master_conf(&root.path().join("m"), &tree, ports);
    let mut master = Daemon::start_master(&ours, &conf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let mut c = std::process::Command::new(&python);
    c.arg(&script)
        .args(["ask", "--port", &ports.1.to_string()])
        .args(["--pub", &ports.0.to_string(), "--dir"])
        .arg(root.path().join("client"))
        .arg("--tree")
        .arg(&tree);
    let out = run_with_timeout(c, Duration::from_secs(180)).unwrap();
    assert!(out.success(), "{out:?}\n{}", master.proc.tail(30));
    let ours: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let golden: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("data/fileserver-golden.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let (ours, golden) = (ours.as_object().unwrap(), golden.as_object().unwrap());
    let mut diffs = Vec::new();
    for (label, want) in golden {
        match ours.get(label) {
            Some(got) if got == want => {}
            got => diffs.push(format!("{label}:\n  salt: {want}\n  ours: {got:?}")),
        }
    }
    assert_eq!(ours.len(), golden.len(), "request sets differ");
    assert!(
        diffs.is_empty(),
        "{} of {} replies differ from Salt 3007.17's:\n{}",
        diffs.len(),
        golden.len(),
        diffs.join("\n")
    );
    // Each unsupported command (sent twice) is logged once, by name: as often as the
    // one-time sign-in line (the harness may see each log line more than once).
    let once = master.count("Authentication accepted from fsgolden");
    assert!(once > 0);
    assert_eq!(master.count("not exposed: _no_such_command"), once);
    assert_eq!(master.count("minion_pub from fsgolden"), once);
    println!(
        "{} file-server replies equal to Salt's\n{}",
        golden.len(),
        out.stderr
    );
}
