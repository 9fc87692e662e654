#![no_main]
//! cargo-fuzz target `envelope`: see `salt_fuzz::proto_entries::envelope`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| salt_fuzz::proto_entries::envelope(data));
