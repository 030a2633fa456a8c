//! What a handler tells the request log (and the trace of its request) about the
//! request: an extension of its response, read by `crate::http`'s log and by
//! `crate::telemetry`'s span, so that neither depends on the other.

use axum::response::Response;

/// What a handler tells the log about its request.
#[derive(Clone, Debug, Default)]
pub(crate) struct Outcome {
    /// The MCP tool of a `tools/call`.
    pub(crate) tool: Option<String>,
    /// The refusal's (or error's) reason.
    pub(crate) reason: Option<String>,
}

/// Marks `response` for the log.
pub(crate) fn note(response: &mut Response, outcome: Outcome) {
    response.extensions_mut().insert(outcome);
}
