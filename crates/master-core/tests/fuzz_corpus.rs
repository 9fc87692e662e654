//! Replays the committed cargo-fuzz corpus of the `request` target (`fuzz/corpus/request`)
//! and any minimized crash reproducers (`fuzz/artifacts-regressions/request`) through the
//! very entry function the fuzz target calls (`fuzz/src/request_entries.rs`), so every
//! `cargo test` on stable re-checks what fuzzing found.

#![allow(clippy::unwrap_used)] // tests may unwrap

#[allow(dead_code)]
#[path = "../../../fuzz/src/request_entries.rs"]
mod entries;
#[allow(dead_code)]
#[path = "../../../fuzz/src/keys.rs"]
mod keys;

#[path = "../../../fuzz/src/replay.rs"]
mod replay;

#[test]
fn request_corpus() {
    replay::replay("request", 10, entries::request);
    // The fixture's master state (pki, cache) lives in a temp dir named by our pid.
    let dir = std::env::temp_dir().join(format!("salt-fuzz-request-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(dir);
}
