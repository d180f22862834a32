//! The integration tests of `switchboard-wire` as one test binary, so the crate and its
//! dependencies are linked once rather than once per file. Each module was a file of its own
//! under `tests/`; run one with `cargo test -p switchboard-wire --test it anthropic_serving::`.
//! Fixtures and other data stay beside this folder, under `tests/`.

mod anthropic_serving;
mod oracles;
mod streams;
mod translation;
