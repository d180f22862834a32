#![no_main]
//! Target `tools`: see crates/switchboard-fuzz/src/tools.rs for the input and the checks.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(finding) = switchboard_fuzz::run("tools", data) {
        panic!("{finding}");
    }
});
