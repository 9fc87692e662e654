#![no_main]
//! cargo-fuzz target `request`: see `salt_fuzz::request_entries::request`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| salt_fuzz::request_entries::request(data));
