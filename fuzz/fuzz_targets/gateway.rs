#![no_main]
//! Target `gateway`: see crates/switchboard-fuzz/src/gateway.rs for the input and the checks.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(finding) = switchboard_fuzz::run("gateway", data) {
        panic!("{finding}");
    }
});
