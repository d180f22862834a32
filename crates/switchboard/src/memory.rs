//! Giving memory back to the system once a burst of requests is over.
//!
//! mimalloc keeps the pages a thread has freed in that thread's heap, and returns them
//! (and purges what the heap returned) only when that thread next allocates through its
//! slow path or collects. A tokio worker that has gone idle after a burst does neither, so
//! everything the burst used stayed resident: 60 s after 3,000 concurrent streams the
//! gateway held 104 MiB more than before them (`cargo bench -p switchboard --bench
//! stream_memory`). So each worker collects its heap as it goes idle (at most every
//! [`COLLECT_EVERY`], a few microseconds each time), and a timer wakes the runtime every
//! [`SWEEP_EVERY`] so that purges that were due after a worker's last collect happen too.
//!
//! Calling into mimalloc is foreign code: the one place this crate allows `unsafe`.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// Least time between two collections on one thread.
const COLLECT_EVERY: Duration = Duration::from_millis(10);

/// How often an idle gateway still collects (and purges what is due).
pub const SWEEP_EVERY: Duration = Duration::from_secs(1);

thread_local! {
    static LAST_COLLECT: Cell<Option<Instant>> = const { Cell::new(None) };
}

#[allow(unsafe_code)]
mod mimalloc {
    unsafe extern "C" {
        /// Frees the calling thread's empty pages, returns them to mimalloc's arenas, and
        /// purges arena memory whose purge delay has passed (`force` purges at once).
        fn mi_collect(force: bool);
    }

    pub(super) fn collect() {
        // SAFETY: `mi_collect` only works on the calling thread's own heap and on the
        // arenas under their lock; it takes no pointers and may be called at any time on
        // any thread mimalloc serves (the global allocator of this binary).
        unsafe { mi_collect(false) }
    }
}

/// For the runtime's `on_thread_park`: collects this thread's heap as it goes idle, unless
/// it did less than [`COLLECT_EVERY`] ago.
pub fn collect_when_idle() {
    LAST_COLLECT.with(|last| {
        let now = Instant::now();
        if last
            .get()
            .is_none_or(|at| now.duration_since(at) >= COLLECT_EVERY)
        {
            last.set(Some(now));
            mimalloc::collect();
        }
    });
}

/// Collects every [`SWEEP_EVERY`] on whichever worker runs it, for as long as the runtime
/// runs: the purges that fell due after the workers' last collections, and the heap of a
/// worker that went idle moments after collecting.
pub async fn sweep() {
    let mut ticks = tokio::time::interval(SWEEP_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        collect_when_idle();
    }
}
