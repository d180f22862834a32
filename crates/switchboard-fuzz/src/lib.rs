//! The checks behind Switchboard's fuzz targets, and the seed inputs each starts from, in one
//! library so that `cargo fuzz` (the `fuzz/` crate) and a plain `cargo test` (which replays
//! the seeds and every saved crash under `fuzz/regressions/<target>/`) run the same code.
//!
//! A check takes the fuzzer's bytes and returns a [`Finding`] when a promise of the code
//! under test is broken; a panic inside that code is a finding too. The fuzz targets turn
//! both into crashes, the replay test into failures.
//!
//! It must not change what it checks: the promises are the code under test's own.

mod characters;
mod chunks;
mod gateway;
mod parsers;
mod repo;
mod tools;
mod wire;

pub use gateway::ENDPOINTS;
pub use repo::{REGRESSIONS, repository};

/// A broken promise found on one input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Finding {
    /// Feeding the same input in pieces gave another result than feeding it whole.
    #[error("{what}: the result depends on the chunking\n  whole:   {whole}\n  chunked: {chunked}")]
    Chunking {
        what: String,
        whole: String,
        chunked: String,
    },
    /// A documented property of a result does not hold.
    #[error("{what}: {problem}")]
    Broken { what: String, problem: String },
    /// The harness itself could not be set up (not a finding about the input).
    #[error("the fuzz harness could not start: {0}")]
    Setup(String),
}

impl Finding {
    pub(crate) fn broken(what: impl Into<String>, problem: impl Into<String>) -> Self {
        Self::Broken {
            what: what.into(),
            problem: problem.into(),
        }
    }
}

/// One fuzz target: its name (the `fuzz/fuzz_targets/<name>.rs` file and the
/// `fuzz/regressions/<name>/` directory), its check, and its seeds.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    pub name: &'static str,
    pub check: fn(&[u8]) -> Result<(), Finding>,
    /// Inputs built from the repository's own fixtures, read from its working tree.
    pub seeds: fn() -> std::io::Result<Vec<Vec<u8>>>,
}

/// Every fuzz target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "parsers",
        check: parsers::check,
        seeds: parsers::seeds,
    },
    Target {
        name: "wire",
        check: wire::check,
        seeds: wire::seeds,
    },
    Target {
        name: "tools",
        check: tools::check,
        seeds: tools::seeds,
    },
    Target {
        name: "characters",
        check: characters::check,
        seeds: characters::seeds,
    },
    Target {
        name: "gateway",
        check: gateway::check,
        seeds: gateway::seeds,
    },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|target| target.name == name)
}

/// Runs the check of the target called `name`: what each `fuzz/fuzz_targets/*.rs` calls.
pub fn run(name: &str, data: &[u8]) -> Result<(), Finding> {
    match target(name) {
        Some(target) => (target.check)(data),
        None => Err(Finding::Setup(format!("no fuzz target is called {name}"))),
    }
}
