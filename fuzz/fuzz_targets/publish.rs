#![no_main]
//! cargo-fuzz target `publish`: see `salt_fuzz::proto_entries::publish`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| salt_fuzz::proto_entries::publish(data));
