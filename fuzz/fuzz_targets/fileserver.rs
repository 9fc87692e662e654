#![no_main]
//! cargo-fuzz target `fileserver`: see `salt_fuzz::fileserver_entries::fileserver`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| salt_fuzz::fileserver_entries::fileserver(data));
