#![no_main]
//! cargo-fuzz target `channel`: see `salt_fuzz::channel_entries::publish`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| salt_fuzz::channel_entries::publish(data));
