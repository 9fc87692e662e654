#![no_main]
//! cargo-fuzz target `pem`: see `salt_fuzz::pki_entries::pem`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| salt_fuzz::pki_entries::pem(data));
