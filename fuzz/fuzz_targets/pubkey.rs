#![no_main]
//! cargo-fuzz target `pubkey`: see `salt_fuzz::pki_entries::pubkey`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| salt_fuzz::pki_entries::pubkey(data));
