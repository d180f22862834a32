//! Why a connection ended, said by the part that saw it (a child's stdout reader or stdin
//! writer, the HTTP client) for the calls and the health page: the transport alone only
//! says `Transport closed`.

use std::sync::{Mutex, PoisonError};

use tokio::sync::Notify;

#[derive(Debug, Default)]
pub(crate) struct Fault {
    why: Mutex<Option<String>>,
    /// Why a write to a stdio child failed: said only when nothing better is known (the
    /// child's exit, which broke the pipe, says more).
    write: Mutex<Option<String>>,
    /// Woken when the connection must end: a stdio child whose stdin broke may still be
    /// alive with its stdout open, so nothing else would end its connection.
    ended: Notify,
}

impl Fault {
    /// The connection must end, for `why` (the first reason given is kept).
    pub(crate) fn end(&self, why: String) {
        self.slot().get_or_insert(why);
        self.ended.notify_one();
    }

    /// A write failed: the connection must end.
    pub(crate) fn write_failed(&self, why: String) {
        self.write
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(why);
        self.ended.notify_one();
    }

    pub(crate) fn write_failure(&self) -> Option<String> {
        self.write
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The last fault seen on a connection that may go on (an HTTP answer that could not
    /// be read); [`Fault::clear`]ed by the next good one.
    pub(crate) fn seen(&self, why: String) {
        *self.slot() = Some(why);
    }

    pub(crate) fn clear(&self) {
        *self.slot() = None;
    }

    pub(crate) fn why(&self) -> Option<String> {
        self.slot().clone()
    }

    /// Returns once [`Fault::end`] was called.
    pub(crate) async fn ended(&self) {
        self.ended.notified().await;
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.why.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
