//! Replays the committed cargo-fuzz corpus of the `channel` target (`fuzz/corpus/channel`)
//! and any minimized crash reproducers (`fuzz/artifacts-regressions/channel`) through the
//! very entry function the fuzz target calls (`fuzz/src/channel_entries.rs`), so every
//! `cargo test` on stable re-checks what fuzzing found.

#![allow(clippy::unwrap_used)] // tests may unwrap

#[allow(dead_code)]
#[path = "../../../fuzz/src/channel_entries.rs"]
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
fn channel_corpus() {
    let all = inputs("channel");
    assert!(
        all.len() >= 10,
        "fuzz/corpus/channel has {} files",
        all.len()
    );
    for (path, data) in &all {
        let r = std::panic::catch_unwind(|| entries::publish(data));
        assert!(r.is_ok(), "channel: {} panics", path.display());
    }
}
