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

use std::path::{Path, PathBuf};

/// Every file of `fuzz/corpus/<target>` and `fuzz/artifacts-regressions/<target>`.
fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut out = Vec::new();
    for sub in ["corpus", "artifacts-regressions"] {
        let Ok(rd) = std::fs::read_dir(fuzz.join(sub).join(target)) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_file() {
                let data = std::fs::read(&p).unwrap();
                out.push((p, data));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn request_corpus() {
    let all = inputs("request");
    assert!(
        all.len() >= 10,
        "fuzz/corpus/request has {} files",
        all.len()
    );
    for (path, data) in &all {
        let r = std::panic::catch_unwind(|| entries::request(data));
        assert!(r.is_ok(), "request: {} panics", path.display());
    }
    // The fixture's master state (pki, cache) lives in a temp dir named by our pid.
    let dir = std::env::temp_dir().join(format!("salt-fuzz-request-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(dir);
}
