//! The deadline of a character's running code, which the sandbox's interrupt handler and
//! its console both read.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The deadline of whatever character code is running now. The interrupt handler reads it,
/// and so does `console`, so that nothing is printed once the deadline has passed.
#[derive(Debug, Default)]
pub(crate) struct Clock {
    deadline: Cell<Option<Instant>>,
    fired: Cell<bool>,
}

impl Clock {
    /// Starts a run that may last `limit`.
    pub fn start(&self, limit: Duration) {
        self.deadline.set(Some(Instant::now() + limit));
        self.fired.set(false);
    }

    /// Makes any code still queued stop at its first interrupt check.
    pub fn expire(&self) {
        self.deadline.set(Some(Instant::now()));
    }

    pub fn stop(&self) {
        self.deadline.set(None);
    }

    pub fn expired(&self) -> bool {
        self.deadline
            .get()
            .is_some_and(|deadline| Instant::now() >= deadline)
    }

    /// Whether the interrupt handler stopped code since the last `start`.
    pub fn fired(&self) -> bool {
        self.fired.get()
    }

    /// For the interrupt handler: whether to stop the code now (and note that it did).
    pub(crate) fn interrupt(&self) -> bool {
        let expired = self.expired();
        if expired {
            self.fired.set(true);
        }
        expired
    }
}
