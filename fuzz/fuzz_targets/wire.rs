#![no_main]
//! Target `wire`: see crates/switchboard-fuzz/src/wire.rs for the input and the checks.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(finding) = switchboard_fuzz::run("wire", data) {
        panic!("{finding}");
    }
});
