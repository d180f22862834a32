#![no_main]
//! Target `characters`: see crates/switchboard-fuzz/src/characters.rs for the input and the checks.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(finding) = switchboard_fuzz::run("characters", data) {
        panic!("{finding}");
    }
});
