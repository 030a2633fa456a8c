//! Progress of a long open (the word index of a large forum file of an earlier
//! schema is built when it is first opened), on stderr.

use std::sync::Arc;

use parley_forum::Progress;

/// Steps below this many messages finish too fast to be worth a line.
const WORTH_SHOWING: u64 = 20_000;

/// Prints `parley: <what>: <done>/<total>` lines to stderr for a large migration.
pub(crate) fn on_stderr() -> Progress {
    Arc::new(|what: &str, done: u64, total: u64| {
        if total >= WORTH_SHOWING {
            eprintln!("parley: {what}: {done}/{total} messages");
        }
    })
}
