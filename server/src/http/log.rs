//! The request log: one `tracing` event per request (target `parley::request`) with
//! the method, the path (never the query), the MCP tool, the caller's identity
//! (never the token), the status, the refusal's reason and the duration.
//!
//! Handlers leave what only they know (the tool, the reason) in an [`Outcome`]
//! extension of their response; the JSON responses set it themselves
//! ([`reason_in`]). For an event stream the duration is the time to its first byte.
//! When the level filter (`RUST_LOG`) leaves the event out, nothing is looked up.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use serde_json::Value;

use super::App;

pub(crate) use crate::outcome::{note, Outcome};

/// The token of a request (its bearer token, or its web session's), once
/// admission has let it in: left empty for a request refused at admission, and
/// when the log is off.
#[derive(Clone, Default)]
pub(crate) struct Caller(Arc<OnceLock<String>>);

/// Notes the token of an admitted `request` for the log, when the log wants it.
pub(crate) fn admitted(app: &App, request: &Request) {
    let Some(caller) = request.extensions().get::<Caller>() else {
        return;
    };
    if let Some(token) = token(app, request.headers()) {
        let _ = caller.0.set(token);
    }
}

/// The longest path written to the log, in characters; a longer one is cut.
const PATH_MAX: usize = 200;

pub(crate) async fn log_request(
    State(app): State<App>,
    mut request: Request,
    next: Next,
) -> Response {
    if !tracing::enabled!(target: "parley::request", tracing::Level::INFO) {
        return next.run(request).await;
    }
    let started = Instant::now();
    let method = request.method().to_string();
    let path: String = request.uri().path().chars().take(PATH_MAX).collect();
    let caller = Caller::default();
    request.extensions_mut().insert(caller.clone());
    let mut response = next.run(request).await;
    let outcome = response
        .extensions_mut()
        .remove::<Outcome>()
        .unwrap_or_default();
    let status = response.status().as_u16();
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let tool = outcome.tool.as_deref().unwrap_or("-");
    let reason = outcome.reason.as_deref().unwrap_or("-");
    // A token the engine refused names nobody: it is not looked up a second time.
    let refused = matches!(reason, "token_invalid" | "token_missing");
    let identity = match caller.0.get() {
        Some(token) if !refused => identity_of(&app, token),
        _ => None,
    };
    let identity = identity.as_deref().unwrap_or("-");
    if status >= 500 {
        tracing::warn!(target: "parley::request", method, path, tool, identity, status, reason, ms, "request");
    } else {
        tracing::info!(target: "parley::request", method, path, tool, identity, status, reason, ms, "request");
    }
    response
}

/// The token of a request: its bearer token, or its web session's.
fn token(app: &App, headers: &HeaderMap) -> Option<String> {
    match super::bearer(headers) {
        Ok(Some(token)) => Some(token),
        Ok(None) => crate::sessions::cookie(headers, crate::sessions::SESSION_COOKIE)
            .and_then(|id| app.web.token_of(&id)),
        Err(_) => None,
    }
}

/// Who holds `token`.
fn identity_of(app: &App, token: &str) -> Option<String> {
    if app.forum.is_shared() {
        // A shared forum's token is looked up in the database, a blocking round
        // trip: off the async worker (the PostgreSQL client may not block on one).
        tokio::task::block_in_place(|| app.forum.identity_of(token))
    } else {
        // The file's callers are cached: no I/O, no hand-off.
        app.forum.identity_of(token)
    }
}

/// The reason a JSON response carries: a REST refusal or error (`error.reason`), a
/// JSON-RPC error (its `data.reason`, else `jsonrpc <code>`), or a refused tool call
/// (`result.structuredContent.error.reason`).
pub(crate) fn reason_in(value: &Value) -> Option<String> {
    let error = &value["error"];
    if let Some(reason) = error["reason"].as_str() {
        return Some(reason.to_string());
    }
    if let Some(reason) = error["data"]["reason"].as_str() {
        return Some(reason.to_string());
    }
    if let Some(code) = error["code"].as_i64() {
        return Some(format!("jsonrpc {code}"));
    }
    value["result"]["structuredContent"]["error"]["reason"]
        .as_str()
        .map(str::to_string)
}

/// The tool of an MCP `tools/call` request already parsed.
pub(crate) fn tool_in(request: &Value) -> Option<String> {
    if request["method"].as_str() != Some("tools/call") {
        return None;
    }
    request["params"]["name"]
        .as_str()
        .map(|n| n.chars().take(64).collect())
}

/// The tool of an MCP `tools/call` request, read without building the whole request.
pub fn tool_of(request: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Call {
        method: Option<String>,
        params: Option<Params>,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        name: Option<String>,
    }
    let call: Call = serde_json::from_str(request).ok()?;
    if call.method.as_deref() != Some("tools/call") {
        return None;
    }
    call.params?.name.map(|n| n.chars().take(64).collect())
}
