#![no_main]
//! cargo-fuzz target `messages`: see `salt_fuzz::proto_entries::messages`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| salt_fuzz::proto_entries::messages(data));
