#![no_main]
//! cargo-fuzz target `auth_master`: see `salt_fuzz::auth_entries::auth_master`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| salt_fuzz::auth_entries::auth_master(data));
