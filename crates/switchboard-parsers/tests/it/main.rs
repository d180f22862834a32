//! The integration tests of `switchboard-parsers` as one test binary, so the crate and its
//! dependencies are linked once rather than once per file. Each module was a file of its own
//! under `tests/`; run one with `cargo test -p switchboard-parsers --test it anchors::`.
//! Fixtures and other data stay beside this folder, under `tests/`.

mod anchors;
mod canitoolcall;
mod own_fixtures;
mod render_roundtrip;
mod render_shapes;
