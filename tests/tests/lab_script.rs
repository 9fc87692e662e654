//! `scripts/lab.sh --check`: the README's "run" command starts two masters and a minion on
//! loopback, accepts the key with salt-key, answers one `test.ping`, and cleans up.

use std::process::Command;
use std::time::Duration;

use salt_integration_tests::{bins, free_port_pair, run_with_timeout, workspace_root};

#[test]
fn lab_script_check_pings_and_cleans_up() {
    let bins = bins().expect("building our binaries");
    bins.check().expect("our binaries");
    let bin_dir = bins.master.parent().expect("binary dir").to_path_buf();
    let (publish, _ret) = free_port_pair().expect("free ports");
    let mut c = Command::new("bash");
    c.arg(workspace_root().join("scripts/lab.sh"))
        .arg("--check")
        .env("LAB_BIN_DIR", &bin_dir)
        .env("LAB_PORT_BASE", publish.to_string());
    let out = run_with_timeout(c, Duration::from_secs(180)).expect("running lab.sh");
    assert!(
        out.success(),
        "lab.sh --check failed ({:?})\nstdout:\n{}\nstderr:\n{}",
        out.status,
        out.stdout,
        out.stderr
    );
    assert!(
        out.stdout.contains("lab-minion:"),
        "no ping answer:\n{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("True"),
        "no ping answer:\n{}",
        out.stdout
    );
    assert!(out.stdout.contains("lab: check passed"));
    // The lab's processes are gone: nothing listens on its ports any more.
    for port in [publish, publish + 1] {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port {port} still open after lab.sh exited"
        );
    }
}
