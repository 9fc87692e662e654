//! Shared entry points of the cargo-fuzz targets in `fuzz_targets/`.
//!
//! The bodies live in `proto_entries.rs`, `auth_entries.rs` and `pki_entries.rs` (with
//! the fixed test keys in `keys.rs`) so that the stable corpus-replay tests
//! (`crates/proto/tests/fuzz_corpus.rs`, `crates/pki/tests/fuzz_corpus.rs`) can include
//! the very same code with `#[path]` and run every committed corpus file through it
//! on `cargo test`.
#![forbid(unsafe_code)]

pub mod auth_entries;
pub mod channel_entries;
pub mod fileserver_entries;
pub mod keys;
pub mod pki_entries;
pub mod proto_entries;
pub mod request_entries;
