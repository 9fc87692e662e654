#![no_main]
//! cargo-fuzz target `pubsig`: see `salt_fuzz::pki_entries::pubsig`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| salt_fuzz::pki_entries::pubsig(data));
