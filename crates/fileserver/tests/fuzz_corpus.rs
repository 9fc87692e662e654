//! Replays the committed cargo-fuzz corpus of the `fileserver` target (`fuzz/corpus/fileserver`,
//! seeded by `fuzz/seed_corpora.py`) and any minimized crash reproducers
//! (`fuzz/artifacts-regressions/fileserver`) through the entry function the target calls, so
//! every stable `cargo test` re-checks the hostile-path invariants.

#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
#[path = "../../../fuzz/src/fileserver_entries.rs"]
mod entries;

use std::path::Path;

#[test]
fn fileserver_corpus_replays_cleanly() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut n = 0;
    for sub in ["corpus", "artifacts-regressions"] {
        let Ok(rd) = std::fs::read_dir(fuzz.join(sub).join("fileserver")) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            entries::fileserver(&std::fs::read(&p).unwrap());
            n += 1;
        }
    }
    assert!(n >= 100, "only {n} corpus files");
    let tree = std::env::temp_dir().join(format!("salt-fuzz-fileserver-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(tree);
}
