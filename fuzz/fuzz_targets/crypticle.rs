#![no_main]
//! cargo-fuzz target `crypticle`: see `salt_fuzz::pki_entries::crypticle`. The body
//! `loads` returns is then decoded and read like a real message.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(body) = salt_fuzz::pki_entries::crypticle(data) {
        let _ = salt_proto::fuzzing::decode_any(&body);
    }
});
