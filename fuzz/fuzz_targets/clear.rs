#![no_main]
//! cargo-fuzz target `clear`: see `salt_fuzz::proto_entries::clear`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| salt_fuzz::proto_entries::clear(data));
