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

#[path = "../../../fuzz/src/replay.rs"]
mod replay;

#[test]
fn channel_corpus() {
    replay::replay("channel", 10, entries::publish);
}
