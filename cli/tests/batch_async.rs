//! `salt --async -b N` (issue #38, item 4): refused by name with a non-zero exit before any
//! configuration is read or anything is published, rather than sending nothing silently.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn async_batch_is_refused_by_name() {
    for args in [
        &["--async", "-b", "1", "*", "test.ping"][..],
        &["-b", "10%", "--async", "*", "test.ping"][..],
        &[
            "--batch-size",
            "2",
            "--async",
            "-c",
            "/nonexistent",
            "*",
            "test.ping",
        ][..],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_salt"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("salt: --async with --batch-size: ")
                && err.contains("not supported by salt-rs"),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
    }
}
