//! Corpus replay for the stable tests (`crates/*/tests/fuzz_corpus.rs` include this file
//! with `#[path]`): every committed corpus file and every minimized reproducer of a target
//! goes through the very entry function its fuzz target calls. Not part of the fuzz crate.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

/// `fuzz/` of the repository (the including crate sits at `crates/<name>`).
pub fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Every file of `fuzz/corpus/<target>` and `fuzz/artifacts-regressions/<target>`, sorted.
pub fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for sub in ["corpus", "artifacts-regressions"] {
        let Ok(rd) = std::fs::read_dir(fuzz_dir().join(sub).join(target)) else {
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

/// Run every input of `target` (at least `min` of them) through `f`; none may panic.
pub fn replay(target: &str, min: usize, f: fn(&[u8])) {
    let all = inputs(target);
    assert!(
        all.len() >= min,
        "fuzz/corpus/{target} has {} files, expected at least {min}",
        all.len()
    );
    for (path, data) in &all {
        let r = std::panic::catch_unwind(|| f(data));
        assert!(r.is_ok(), "{target}: {} panics", path.display());
    }
}
