#![no_main]
//! Target `parsers`: see crates/switchboard-fuzz/src/parsers.rs for the input and the checks.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(finding) = switchboard_fuzz::run("parsers", data) {
        panic!("{finding}");
    }
});
