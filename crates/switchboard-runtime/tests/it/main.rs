//! The integration tests of `switchboard-runtime` as one test binary, so the crate and its
//! dependencies are linked once rather than once per file. Each module was a file of its own
//! under `tests/`; run one with `cargo test -p switchboard-runtime --test it conversation::`.
//! Fixtures and other data stay beside this folder, under `tests/`.

mod conversation;
