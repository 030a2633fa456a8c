//! The server spans and what they say.
//!
//! A span is opened when a request arrives and never entered: nothing runs inside
//! it (the engine has no spans of its own), and an OpenTelemetry span is built only
//! when it ends. Its parent is then still open to choice: a JSON-RPC message's
//! `params._meta` (`traceparent`, `tracestate`: MCP's convention for propagating
//! context, per message) wins over the HTTP request's headers, which describe the
//! HTTP exchange that carried it.
//!
//! Names and attributes: an MCP message's span is `{mcp.method.name} {tool}` for a
//! `tools/call` (`tools/call post`), else `{mcp.method.name}`; a REST or web request's
//! is `{METHOD} {route}` (`POST /v1/messages`). The forum's own attributes come from
//! the request's arguments and the answer's JSON: `gen_ai.conversation.id` (the
//! thread), `parley.act` (the envelope's kind), `parley.transition`
//! (`from_state->to_state`), `parley.reason` (the refusal's reason).

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use parley_forum::mcp::McpReply;
use serde_json::Value;
use tracing::field::Empty;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::on;

/// The longest value an attribute taken from a request carries, in characters.
const VALUE_MAX: usize = 200;

fn server_span() -> Span {
    tracing::info_span!(
        target: "parley::otel",
        "request",
        otel.name = Empty,
        otel.kind = "server",
        otel.status_code = Empty
    )
}

/// What a JSON answer says of the forum: the thread, the act, the transition.
#[derive(Clone, Debug, Default)]
struct Found {
    thread: Option<String>,
    act: Option<String>,
    transition: Option<String>,
}

impl Found {
    /// From a result: a post's (`message`, `thread`, `event`/`events`) or a read's.
    fn of(result: &Value) -> Found {
        let thread = text(&result["thread"]["id"]).or_else(|| text(&result["message"]["thread"]));
        let act = text(&result["message"]["kind"]);
        let events = match &result["events"] {
            Value::Array(events) => events.iter().collect(),
            _ => vec![&result["event"]],
        };
        // The last transition: where the thread ended up.
        let transition = events
            .into_iter()
            .rev()
            .filter(|e| e["type"] == "transition")
            .filter_map(|e| {
                Some(format!(
                    "{}->{}",
                    e["from_state"].as_str()?,
                    e["to_state"].as_str()?
                ))
            })
            .next();
        Found {
            thread,
            act,
            transition,
        }
    }

    fn put(self, into: &mut Vec<KeyValue>) {
        add(into, "gen_ai.conversation.id", self.thread);
        add(into, "parley.act", self.act);
        add(into, "parley.transition", self.transition);
    }
}

/// A string value, cut to [`VALUE_MAX`] characters.
fn text(value: &Value) -> Option<String> {
    value.as_str().map(|s| s.chars().take(VALUE_MAX).collect())
}

fn add(into: &mut Vec<KeyValue>, key: &'static str, value: Option<String>) {
    if let Some(value) = value {
        into.push(KeyValue::new(key, value));
    }
}

/// Marks a REST or web JSON response with what its value says (only while export is on).
pub(crate) fn note_json(resp: &mut Response, value: &Value) {
    if on() && value.get("error").is_none() {
        resp.extensions_mut().insert(Found::of(value));
    }
}

/// One MCP message as a span tells it: read from the request before it is
/// answered, completed from its answer.
#[derive(Clone, Debug, Default)]
pub(crate) struct McpTrace {
    method: Option<String>,
    id: Option<String>,
    tool: Option<String>,
    protocol: Option<String>,
    traceparent: Option<String>,
    tracestate: Option<String>,
    arguments: Found,
    answer: Found,
    error: Option<String>,
    reason: Option<String>,
}

impl McpTrace {
    /// The trace of a message parsed already; `None` while export is off.
    pub(crate) fn of(request: Option<&Value>) -> Option<McpTrace> {
        if !on() {
            return None;
        }
        let Some(request) = request else {
            return Some(McpTrace::default());
        };
        let params = &request["params"];
        let meta = &params["_meta"];
        let method = text(&request["method"]);
        let tool = if method.as_deref() == Some("tools/call") {
            text(&params["name"])
        } else {
            None
        };
        let args = &params["arguments"];
        Some(McpTrace {
            id: match &request["id"] {
                Value::String(s) => Some(s.chars().take(VALUE_MAX).collect()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            },
            protocol: text(&meta["io.modelcontextprotocol/protocolVersion"])
                .or_else(|| text(&params["protocolVersion"])),
            traceparent: text(&meta["traceparent"]),
            tracestate: text(&meta["tracestate"]),
            arguments: Found {
                thread: text(&args["thread"]),
                act: tool
                    .as_deref()
                    .filter(|t| *t == "post")
                    .and_then(|_| text(&args["kind"])),
                transition: None,
            },
            method,
            tool,
            ..McpTrace::default()
        })
    }

    /// Completes the trace from the answer (`None` for a notification).
    pub(crate) fn answered(&mut self, reply: Option<&McpReply>) {
        let Some(reply) = reply else { return };
        if let Some(code) = reply.error_code {
            self.error = Some(code.to_string());
        }
        if let Some(reason) = reply
            .reason
            .as_deref()
            .filter(|r| !r.starts_with("jsonrpc "))
        {
            self.reason = Some(reason.to_string());
            self.error = Some(reason.to_string());
        }
        let tool_error = reply.tool.is_some_and(|t| t.is_error);
        if tool_error && self.error.is_none() {
            self.error = Some("tool_error".into());
        }
        if reply.error_code.is_none() && !tool_error && self.tool.as_deref() == Some("post") {
            // A post's answer, the hot path: only the fields a span shows are read.
            if let Ok(posted) = serde_json::from_str::<PostReply>(&reply.text) {
                self.answer = posted.found();
            }
        } else if reply.error_code.is_none() {
            // Read back only while export is on: the one parse of the answer.
            if let Ok(value) = serde_json::from_str::<Value>(&reply.text) {
                let result = &value["result"];
                let found = &result["structuredContent"];
                self.answer = Found::of(if found.is_object() { found } else { result });
            }
        }
    }

    /// Marks `resp` with the trace, for [`http_span`].
    pub(crate) fn note(self, resp: &mut Response) {
        resp.extensions_mut().insert(self);
    }

    /// The span's name, its parent and attributes.
    fn finish(
        self,
        span: &Span,
        transport: &'static str,
        into: &mut Vec<KeyValue>,
    ) -> Option<Context> {
        let method = self.method.clone().unwrap_or_else(|| "unknown".into());
        let name = match &self.tool {
            Some(tool) => format!("{method} {tool}"),
            None => method.clone(),
        };
        span.record("otel.name", name.as_str());
        into.push(KeyValue::new("mcp.method.name", method));
        into.push(KeyValue::new("network.transport", transport));
        if let Some(tool) = self.tool {
            into.push(KeyValue::new("gen_ai.tool.name", tool));
            into.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        add(into, "jsonrpc.request.id", self.id);
        add(into, "mcp.protocol.version", self.protocol);
        if self.error.is_some() {
            span.record("otel.status_code", "error");
        }
        add(into, "error.type", self.error);
        add(into, "parley.reason", self.reason);
        let found = Found {
            thread: self.arguments.thread.or(self.answer.thread),
            act: self.arguments.act.or(self.answer.act),
            transition: self.answer.transition,
        };
        found.put(into);
        let carrier = Meta {
            traceparent: self.traceparent?,
            tracestate: self.tracestate,
        };
        Some(TraceContextPropagator::new().extract(&carrier))
    }
}

/// What a span shows of a post's answer, read without building the whole answer.
#[derive(serde::Deserialize)]
struct PostReply {
    result: PostResult,
}

#[derive(serde::Deserialize)]
struct PostResult {
    #[serde(rename = "structuredContent")]
    posted: Posted,
}

#[derive(serde::Deserialize)]
struct Posted {
    thread: Option<ThreadId>,
    message: Option<PostedMessage>,
    event: Option<Event>,
    events: Option<Vec<Event>>,
}

#[derive(serde::Deserialize)]
struct ThreadId {
    id: Option<String>,
}

#[derive(serde::Deserialize)]
struct PostedMessage {
    kind: Option<String>,
}

#[derive(serde::Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: Option<String>,
    from_state: Option<String>,
    to_state: Option<String>,
}

impl PostReply {
    fn found(self) -> Found {
        let posted = self.result.posted;
        let events = posted.events.into_iter().flatten().chain(posted.event);
        // The last transition: where the thread ended up.
        let transition = events
            .rev()
            .filter(|e| e.kind.as_deref() == Some("transition"))
            .find_map(|e| Some(format!("{}->{}", e.from_state?, e.to_state?)));
        Found {
            thread: posted.thread.and_then(|t| t.id),
            act: posted.message.and_then(|m| m.kind),
            transition,
        }
    }
}

/// `params._meta`'s trace context, as a propagator reads it.
struct Meta {
    traceparent: String,
    tracestate: Option<String>,
}

impl Extractor for Meta {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(&self.traceparent),
            "tracestate" => self.tracestate.as_deref(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

/// The HTTP headers, as a propagator reads them.
struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// The span of every HTTP request (a middleware inside the request log, so that it
/// still reads the log's note of the reason).
pub(crate) async fn http_span(request: Request, next: Next) -> Response {
    if !on() {
        return next.run(request).await;
    }
    let span = server_span();
    let method = request.method().as_str().to_string();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string());
    let path: String = request.uri().path().chars().take(VALUE_MAX).collect();
    let headers = request.headers();
    let header_parent = headers
        .contains_key("traceparent")
        .then(|| TraceContextPropagator::new().extract(&Headers(headers)));
    let protocol = headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.chars().take(VALUE_MAX).collect::<String>());
    let response = next.run(request).await;
    let status = response.status().as_u16();
    let reason = response
        .extensions()
        .get::<crate::outcome::Outcome>()
        .and_then(|o| o.reason.clone());
    let mut attributes = vec![
        KeyValue::new("http.request.method", method.clone()),
        KeyValue::new("http.response.status_code", i64::from(status)),
        KeyValue::new("url.path", path),
    ];
    if let Some(route) = &route {
        attributes.push(KeyValue::new("http.route", route.clone()));
    }
    let mut parent = header_parent;
    if let Some(mut mcp) = response.extensions().get::<McpTrace>().cloned() {
        if mcp.protocol.is_none() {
            mcp.protocol = protocol;
        }
        if let Some(meta) = mcp.finish(&span, "tcp", &mut attributes) {
            parent = Some(meta);
        }
    } else {
        let name = match &route {
            Some(route) => format!("{method} {route}"),
            None => method,
        };
        span.record("otel.name", name.as_str());
        attributes.push(KeyValue::new("network.transport", "tcp"));
        if let Some(found) = response.extensions().get::<Found>() {
            found.clone().put(&mut attributes);
        }
        // HTTP's convention: a server span is an error from 500 on; a refusal's
        // reason still says why a 4xx failed.
        let error = reason
            .clone()
            .or_else(|| (status >= 500).then(|| status.to_string()));
        if status >= 400 {
            add(&mut attributes, "error.type", error);
            add(&mut attributes, "parley.reason", reason);
        }
        if status >= 500 {
            span.record("otel.status_code", "error");
        }
    }
    end(span, parent, attributes);
    response
}

/// Sets the parent and the attributes, and ends the span.
fn end(span: Span, parent: Option<Context>, attributes: Vec<KeyValue>) {
    if let Some(parent) = parent {
        let _ = span.set_parent(parent);
    }
    for attribute in attributes {
        span.set_attribute(attribute.key, attribute.value);
    }
    drop(span);
}

/// Opens the span of one stdio message; `None` while export is off.
pub fn stdio_begin() -> Option<Span> {
    on().then(server_span)
}

/// Ends the span of the stdio message `request`, answered by `reply` (`None` for a
/// notification, or when its handling failed: `failed`).
pub fn stdio_end(span: Span, request: &str, reply: Option<&McpReply>, failed: bool) {
    let parsed = serde_json::from_str::<Value>(request).ok();
    let Some(mut trace) = McpTrace::of(parsed.as_ref()) else {
        return;
    };
    trace.answered(reply);
    if failed {
        trace.error = Some(parley_forum::mcp::codes::INTERNAL_ERROR.to_string());
    }
    let mut attributes = Vec::new();
    let parent = trace.finish(&span, "pipe", &mut attributes);
    end(span, parent, attributes);
}
