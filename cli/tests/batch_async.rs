//! `salt --async -b N` (issue #38, item 4) is Salt 3008's batch handed to the master: no longer
//! refused; without a master it fails as any job does (the ping's error), exit 2, having
//! published nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn async_batch_needs_a_master() {
    let dir = std::env::temp_dir().join(format!("salt-batch-async-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("master"),
        format!("sock_dir: {}\n", dir.join("sock").display()),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_salt"))
        .arg("-c")
        .arg(&dir)
        .args(["--async", "-b", "1", "*", "test.ping", "-t", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("not supported by salt-rs"), "{err}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("Executed batch command"),
        "{out:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
