#![no_main]
//! cargo-fuzz target `rsa`: see `salt_fuzz::pki_entries::rsa`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| salt_fuzz::pki_entries::rsa(data));
