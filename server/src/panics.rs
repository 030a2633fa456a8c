//! The one place the server catches a panic: around each engine call it runs (a
//! request's call on the blocking pool, a waiting read's run on a reader thread,
//! an admin channel request). A panic is a bug, not damage to the forum file: the
//! request that hit it is answered with an internal error and the server goes on.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// A call that panicked; its message has been written to stderr.
#[derive(Debug)]
pub(crate) struct Panicked;

/// Runs `f`, turning a panic into [`Panicked`].
pub(crate) fn contained<T>(f: impl FnOnce() -> T) -> Result<T, Panicked> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        eprintln!("parley: an engine call failed: {message}");
        Panicked
    })
}
