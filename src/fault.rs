//! A panic on demand, for tests of the boundaries (built only with the
//! `fault-injection` feature, which no package or release build enables).
//!
//! A post whose body is [`FAULT_BODY`] panics inside the engine, in the group
//! commit's batch, after its envelope was checked and before anything of it is
//! written. Each boundary must answer it as an internal error: the Rust API as
//! [`crate::Error::Internal`], C as `PARLEY_PANIC`, Python as
//! `parley.InternalError`, the server as 500 `internal_error` (REST) or a tool
//! error (MCP).

/// The body that makes a post panic.
pub const FAULT_BODY: &str = "parley fault injection: panic inside the engine";

/// Panics when `body` is [`FAULT_BODY`].
pub(crate) fn panic_on(body: &str) {
    if body == FAULT_BODY {
        panic!("injected fault (the `fault-injection` feature): {FAULT_BODY}");
    }
}
