//! Peers: the programs from outside this repository that some tests drive (llama.cpp's
//! server, Chromium, Claude Code, Codex). `scripts/test` installs them; what a test does when
//! one is missing is decided here, in one place:
//!
//! - by default it prints a `SKIP` line naming itself and the reason (to standard error, past
//!   the test harness's capture, so it shows) and passes;
//! - under `SWITCHBOARD_REQUIRE_PEERS=1` (`.ci/run` sets it) it fails with that reason instead.
//!   `SWITCHBOARD_REQUIRE_REAL_BACKEND=1`, the older name, means the same;
//! - under `SWITCHBOARD_QUICK=1` (`scripts/test --quick` sets it) the slow peers are left out on
//!   purpose: [`peer`] skips without looking for them. A quick run and required peers
//!   contradict each other, so the two together fail.

use std::io::Write;

/// Set to `1`: a missing peer fails its test instead of skipping it.
pub const REQUIRE_PEERS: &str = "SWITCHBOARD_REQUIRE_PEERS";
/// The older name of [`REQUIRE_PEERS`], from when the real model server was the only peer.
const REQUIRE_REAL_BACKEND: &str = "SWITCHBOARD_REQUIRE_REAL_BACKEND";
/// Set to `1`: the tests of slow peers skip without looking for them.
pub const QUICK: &str = "SWITCHBOARD_QUICK";

fn is_set(name: &str) -> bool {
    std::env::var(name).as_deref() == Ok("1")
}

/// Whether this run insists on every peer (`SWITCHBOARD_REQUIRE_PEERS=1`).
pub fn peers_required() -> bool {
    is_set(REQUIRE_PEERS) || is_set(REQUIRE_REAL_BACKEND)
}

/// Whether this is a quick run, which leaves the slow peers out (`SWITCHBOARD_QUICK=1`).
/// Panics when peers are required too.
pub fn quick() -> bool {
    let quick = is_set(QUICK);
    if quick && peers_required() {
        panic!(
            "{QUICK}=1 leaves the slow peers out and {REQUIRE_PEERS}=1 insists on them; unset one"
        );
    }
    quick
}

/// The running test cannot run here because `peer` is missing; `why` says what is missing
/// and how to get it. Under `SWITCHBOARD_REQUIRE_PEERS=1` this panics with that reason;
/// otherwise it prints a `SKIP` line and the test should return (and pass).
pub fn skip_or_fail(peer: &str, why: &str) {
    if peers_required() {
        panic!("{peer} is required ({REQUIRE_PEERS}=1) but missing: {why}");
    }
    skip_line(&format!("{peer} is missing: {why}"));
}

/// A slow peer for the running test: what `find` found, or `None` after a `SKIP` line (or a
/// panic, see [`skip_or_fail`]) when `find` says why it is not here. In a quick run `find` is
/// not called: the test is skipped on purpose.
pub fn peer<T>(peer: &str, find: impl FnOnce() -> Result<T, String>) -> Option<T> {
    if quick() {
        skip_line(&format!(
            "{peer} left out ({QUICK}=1, as scripts/test --quick sets)"
        ));
        return None;
    }
    match find() {
        Ok(found) => Some(found),
        Err(why) => {
            skip_or_fail(peer, &why);
            None
        }
    }
}

fn skip_line(reason: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    let _ = writeln!(std::io::stderr(), "SKIP {test}: {reason}");
}
