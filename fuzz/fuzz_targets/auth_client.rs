#![no_main]
//! cargo-fuzz target `auth_client`: see `salt_fuzz::auth_entries::auth_client`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    salt_fuzz::auth_entries::auth_client(data);
});
