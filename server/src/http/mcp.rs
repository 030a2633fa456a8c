//! MCP Streamable HTTP, stateless: every `POST /mcp` carries one JSON-RPC message and
//! gets its answer as `application/json` (202 and no body for a notification). The
//! JSON-RPC handling itself is the engine's (`Forum::mcp`); this module only carries it.
//!
//! Every message, a `tools/call` of `post` included, is one engine call
//! (`Forum::mcp_value`) on tokio's blocking pool, as REST's calls are: concurrent
//! posts of both share the engine's group commits.
//!
//! A `tools/call` of a waiting read with `wait_ms` (SPEC §14.2) waits here, as the
//! REST reads do (see `waits`): the engine answers the call with `wait_ms` left
//! out, again after each commit, until the answer has items, is an error, or the
//! wait is over. Past the cap on waits, the call is a tool error whose structured
//! content is `{"error": {"reason": "too_many_waits", …}}`.

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use parley_forum::{Error, Reason, Refusal};
use serde_json::{json, Value};

use super::mcp_headers::{self, Route};
use super::waits::{self, Plan, Waited, Waits};
use super::{bearer, blocking, json_response, read_body, App, BodyError};
use parley_forum::mcp::codes::{INVALID_REQUEST, PARSE_ERROR};
use parley_forum::mcp::{error_response, McpReply, ToolOutcome};

pub(crate) async fn handle(State(app): State<App>, headers: HeaderMap, body: Body) -> Response {
    // A token that is absent goes on to the engine, which answers the operations that
    // need one with the refusal inside a normal result; an unparseable header is
    // answered here, before dispatch.
    let token = match bearer(&headers) {
        Ok(token) => token,
        Err(refusal) => {
            let mut resp = json_response(StatusCode::UNAUTHORIZED, &refusal_error(&refusal));
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return resp;
        }
    };
    let max = app.forum.config().limits.request_max_bytes;
    let bytes = match read_body(&headers, body, max).await {
        Ok(bytes) => bytes,
        Err(BodyError::TooLarge(refusal)) => {
            return json_response(StatusCode::PAYLOAD_TOO_LARGE, &refusal_error(&refusal))
        }
        Err(BodyError::Broken(why)) => {
            let error = error_response(
                Value::Null,
                INVALID_REQUEST,
                format!("unreadable request body: {why}"),
                None,
            );
            return json_response(StatusCode::BAD_REQUEST, &error);
        }
    };
    // Text that is not UTF-8 is not JSON (RFC 8259 §8.1): a parse error, never a
    // lossy decoding that would store U+FFFD in place of the bytes sent.
    let text = match String::from_utf8(Vec::from(bytes)) {
        Ok(text) => text,
        Err(err) => {
            let at = err.utf8_error().valid_up_to();
            let error = error_response(
                Value::Null,
                PARSE_ERROR,
                format!("Parse error: the request body is not valid UTF-8 (invalid byte at offset {at})"),
                None,
            );
            return json_response(StatusCode::BAD_REQUEST, &error);
        }
    };
    let route = mcp_headers::route(&headers);
    let size = text.len();
    // Parsed once, here: to check its headers, to name its tool in the log, to send
    // to plan a wait, and for the engine to answer it.
    // The engine's answer says what the status and the log need, so it is never
    // read back either.
    let parsed = serde_json::from_str::<Value>(&text).ok();
    if route == Route::Modern {
        if let Some(body) = &parsed {
            if let Some(rejection) = mcp_headers::reject(&headers, body) {
                return json_response(mcp_headers::status(route, &rejection), &rejection);
            }
        }
    }
    let tool = parsed.as_ref().and_then(super::log::tool_in);
    let mut trace = crate::telemetry::McpTrace::of(parsed.as_ref());
    let id = parsed.as_ref().and_then(|p| p.get("id")).cloned();
    let reply = match parsed {
        // Not JSON: the engine answers with its parse error, from the text.
        None => {
            let forum = app.forum.clone();
            blocking(move || forum.mcp_reply(token.as_deref(), &text)).await
        }
        Some(request) => run(&app, token, request, size).await,
    };
    let reply = match (reply, id) {
        (Ok(reply), _) => reply,
        // The engine call panicked: a request hears a JSON-RPC internal error
        // under its id (REST answers 500).
        (Err(_), Some(id)) => return internal_error(id),
        (Err(resp), None) => return resp,
    };
    if let Some(trace) = &mut trace {
        trace.answered(reply.as_ref());
    }
    let mut resp = match reply {
        Some(reply) => {
            let status = mcp_headers::status_of(route, reply.error_code, reply.id.is_null());
            let mut resp = (status, reply.text).into_response();
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            let reason = reply.reason;
            super::log::note(&mut resp, super::log::Outcome { tool, reason });
            resp
        }
        None => StatusCode::ACCEPTED.into_response(),
    };
    if let Some(trace) = trace {
        trace.note(&mut resp);
    }
    resp
}

/// The engine's answer to a message parsed already, on the blocking pool (a
/// waiting read as often as it must run).
async fn run(
    app: &App,
    token: Option<String>,
    request: Value,
    size: usize,
) -> Result<Option<McpReply>, Response> {
    let mut request = request;
    let forum = app.forum.clone();
    match waiting_call(&app.waits, &mut request) {
        None => blocking(move || forum.mcp_value(token.as_deref(), request, size)).await,
        Some(wait) => {
            let holder = token.clone();
            let run = move || forum.mcp_value(token.as_deref(), request.clone(), size);
            match waits::wait(app, holder.as_deref(), wait, run, tool_settled).await {
                Ok(Waited::Done(reply)) => Ok(reply),
                Ok(Waited::Full(first, refusal)) => Ok(first.map(|r| too_many_waits(r, refusal))),
                Err(resp) => Err(resp),
            }
        }
    }
}

/// The answer to a request whose engine call failed (it panicked).
fn internal_error(id: Value) -> Response {
    let error = Error::Internal("the engine call failed".into());
    let message = format!("Internal error: {error}");
    let body = error_response(id, parley_forum::mcp::codes::INTERNAL_ERROR, &message, None);
    let mut resp = json_response(StatusCode::OK, &body);
    super::note_reason(&mut resp, "internal_error");
    resp
}

/// For a `tools/call` that is to wait here: how long, with `wait_ms` taken out of
/// the request's arguments. `None` for every other message, which goes to the
/// engine as it came.
fn waiting_call(waits: &Waits, request: &mut Value) -> Option<std::time::Duration> {
    if request.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let params = request.get_mut("params")?.as_object_mut()?;
    let name = params.get("name")?.as_str()?.to_string();
    let arguments = params.get_mut("arguments")?.as_object_mut()?;
    let Plan::Wait(wait) = waits.plan(&name, arguments) else {
        return None;
    };
    arguments.remove("wait_ms");
    Some(wait)
}

/// Whether a reply to a waiting `tools/call` is final: anything but a successful
/// result without items.
fn tool_settled(reply: &Option<McpReply>) -> bool {
    reply
        .as_ref()
        .and_then(|r| r.tool)
        .is_none_or(|t| t.is_error || t.has_items)
}

/// The reply past the cap on waits: the first run's reply (its id and the era's
/// result fields) turned into a tool error carrying the refusal.
fn too_many_waits(first: McpReply, refusal: Value) -> McpReply {
    // The one answer read back, on a path taken only at the cap.
    let Ok(mut reply) = serde_json::from_str::<Value>(&first.text) else {
        return first;
    };
    let text = format!(
        "{}: {}",
        waits::TOO_MANY_WAITS,
        refusal["message"].as_str().unwrap_or_default()
    );
    if let Some(result) = reply.get_mut("result").and_then(Value::as_object_mut) {
        result.insert("content".into(), json!([{ "type": "text", "text": text }]));
        result.insert("structuredContent".into(), json!({ "error": refusal }));
        result.insert("isError".into(), Value::Bool(true));
    }
    McpReply {
        text: reply.to_string(),
        reason: Some(waits::TOO_MANY_WAITS.to_string()),
        tool: first.tool.map(|t| ToolOutcome {
            is_error: true,
            ..t
        }),
        ..first
    }
}

/// 405 for GET (this server opens no SSE stream) and DELETE (it keeps no sessions).
pub(crate) async fn method_not_allowed() -> Response {
    let body = error_response(
        Value::Null,
        INVALID_REQUEST,
        "method not allowed: this stateless server answers POST only",
        None,
    );
    let mut resp = json_response(StatusCode::METHOD_NOT_ALLOWED, &body);
    resp.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    resp
}

/// A JSON-RPC error carrying a refusal in `data`, for refusals met before the message
/// could be read (its id unknown, hence `null`).
fn refusal_error(refusal: &Refusal) -> Value {
    error_response(
        Value::Null,
        INVALID_REQUEST,
        refusal.to_string(),
        Some(refusal.to_json()),
    )
}

/// The answer to a message over `max` bytes, shared with the stdio transport.
pub fn too_large_response(max: usize) -> String {
    let refusal = Refusal::new(
        Reason::PayloadTooLarge,
        format!("the request is larger than request_max_bytes ({max} bytes)"),
    )
    .with_limit(parley_forum::Limit::RequestMaxBytes);
    refusal_error(&refusal).to_string()
}

#[cfg(test)]
mod tests;
