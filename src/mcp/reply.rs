//! The entry points of the MCP handler, and what they answer: the response text
//! with what a transport needs to know of it (the HTTP status, the request log,
//! whether a waiting read is done), so that no transport parses its own answer.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::jsonrpc::{self, Incoming, RpcError, INVALID_REQUEST};
use super::{Reply, ToolResult};
use crate::error::{Reason, Refusal};
use crate::Forum;

/// One MCP response.
#[derive(Debug, Clone, PartialEq)]
pub struct McpReply {
    /// The JSON-RPC response, as text.
    pub text: String,
    /// The id it answers: `null` when the message could not be read.
    pub id: Value,
    /// The JSON-RPC error code, for an error response.
    pub error_code: Option<i64>,
    /// Why the request failed, for the request log: the refusal's reason of a tool
    /// error or of an error's data, else `jsonrpc <code>` for an error response.
    pub reason: Option<String>,
    /// For a `tools/call` answered with a result.
    pub tool: Option<ToolOutcome>,
}

/// What a `tools/call` result says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolOutcome {
    /// A tool error (a refusal).
    pub is_error: bool,
    /// The result lists items: a waiting read has something to show.
    pub has_items: bool,
}

impl McpReply {
    fn error(id: &Value, error: &RpcError) -> McpReply {
        let reason = error
            .data
            .as_ref()
            .and_then(|d| d["reason"].as_str())
            .map(str::to_string)
            .unwrap_or_else(|| format!("jsonrpc {}", error.code));
        McpReply {
            text: jsonrpc::error(id, error),
            id: id.clone(),
            error_code: Some(error.code),
            reason: Some(reason),
            tool: None,
        }
    }

    fn result(id: Value, text: String, tool: Option<ToolOutcome>, reason: Option<String>) -> Self {
        McpReply {
            text,
            id,
            error_code: None,
            reason,
            tool,
        }
    }
}

impl Forum {
    /// Handles one MCP JSON-RPC message for the holder of `token` and returns the
    /// response text, or `None` for a notification (or a response sent to us).
    ///
    /// Never panics: malformed input of any kind is a JSON-RPC error response.
    pub fn mcp(&self, token: Option<&str>, request: &str) -> Option<String> {
        self.mcp_reply(token, request).map(|reply| reply.text)
    }

    /// [`Forum::mcp`], with what a transport needs to know of the answer.
    pub fn mcp_reply(&self, token: Option<&str>, request: &str) -> Option<McpReply> {
        if request.len() > self.config.limits.request_max_bytes {
            let probe = serde_json::from_str::<Probe>(request).ok();
            return too_large(probe, request.len(), self.config.limits.request_max_bytes);
        }
        self.mcp_incoming(token, jsonrpc::decode(request))
    }

    /// [`Forum::mcp_reply`] of a message the transport has parsed already (to route
    /// it, say); `size` is its length in bytes as received, held to
    /// `request_max_bytes` as the text would be.
    pub fn mcp_value(&self, token: Option<&str>, request: Value, size: usize) -> Option<McpReply> {
        if size > self.config.limits.request_max_bytes {
            return too_large(
                Probe::of(&request),
                size,
                self.config.limits.request_max_bytes,
            );
        }
        self.mcp_incoming(token, jsonrpc::decode_value(request))
    }

    fn mcp_incoming(
        &self,
        token: Option<&str>,
        incoming: Result<Incoming, jsonrpc::Rejected>,
    ) -> Option<McpReply> {
        let (id, method, params) = match request_of(incoming) {
            Ok(request) => request,
            Err(reply) => return reply,
        };
        Some(answer(id, self.mcp_dispatch(token, &method, params)))
    }
}

/// A request's id, method and params; else what the message gets: a JSON-RPC
/// error, or nothing (a notification, a response).
fn request_of(
    incoming: Result<Incoming, jsonrpc::Rejected>,
) -> Result<(Value, String, Map<String, Value>), Option<McpReply>> {
    match incoming {
        Ok(Incoming::Request { id, method, params }) => Ok((id, method, params)),
        Ok(Incoming::Notification | Incoming::Response) => Err(None),
        Err(rejected) => Err(Some(McpReply::error(&rejected.id, &rejected.error))),
    }
}

/// The response to the request `id`, for what its method answered.
fn answer(id: Value, reply: Result<Reply, RpcError>) -> McpReply {
    match reply {
        Ok(Reply::Value(result)) => {
            let text = jsonrpc::result(&id, result);
            McpReply::result(id, text, None, None)
        }
        Ok(Reply::Tool(tool, era)) => {
            let ToolResult {
                is_error,
                has_items,
                reason,
                ..
            } = tool;
            let outcome = ToolOutcome {
                is_error,
                has_items,
            };
            let text = tool.response(&id, era);
            McpReply::result(id, text, Some(outcome), reason.map(str::to_string))
        }
        Err(error) => McpReply::error(&id, &error),
    }
}

/// The answer to an oversized message: `payload_too_large` with its id, or
/// nothing for a notification or a response.
fn too_large(probe: Option<Probe>, size: usize, limit: usize) -> Option<McpReply> {
    let id = match probe {
        // A notification, or a response (to a request the server never sent):
        // nothing answers either, whatever its size.
        Some(Probe {
            id: None,
            method: Some(_),
            ..
        }) => return None,
        Some(Probe {
            method: None,
            result,
            error,
            ..
        }) if result.is_some() || error.is_some() => return None,
        Some(Probe { id: Some(id), .. }) if jsonrpc::is_valid_id(&id) => id,
        _ => Value::Null,
    };
    let refusal = Refusal::new(
        Reason::PayloadTooLarge,
        format!("the request has {size} bytes; at most {limit} are accepted"),
    )
    .with_limit(crate::Limit::RequestMaxBytes);
    let error = RpcError::new(INVALID_REQUEST, format!("Request too large: {refusal}"))
        .with_data(refusal.to_json());
    Some(McpReply::error(&id, &error))
}

/// Just enough of an oversized message to answer it: its id, and whether it is a
/// notification. Everything else is skipped without being kept.
#[derive(Deserialize)]
struct Probe {
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default)]
    method: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    result: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

impl Probe {
    /// The probe of a message parsed already; `None` for one that is not an object.
    fn of(message: &Value) -> Option<Probe> {
        let obj = message.as_object()?;
        let seen = |key: &str| obj.contains_key(key).then_some(serde::de::IgnoredAny);
        Some(Probe {
            id: obj.get("id").cloned(),
            method: seen("method"),
            result: seen("result"),
            error: seen("error"),
        })
    }
}

/// Keeps a present `null` apart from an absent key.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}
