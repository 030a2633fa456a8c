//! The MCP handler (SPEC §11.1): JSON-RPC 2.0 over the engine, stateless and
//! dual-era.
//!
//! [`Forum::mcp`] takes one JSON-RPC message and the caller's token and returns the
//! response text, or `None` when no response is due (a notification, or a response
//! sent to the server). Transports (stdio, Streamable HTTP, the C ABI, Python) only
//! move these strings; every check happens here and in the engine.
//!
//! Both MCP revisions are served on every call, chosen per request (see
//! [`SUPPORTED_VERSIONS`]):
//! - 2026-07-28: the request names its version and client capabilities in
//!   `params._meta`; `server/discover` describes the server; every result carries
//!   `resultType`, and list results carry `ttlMs` and `cacheScope`.
//! - 2025-11-25: `initialize`, `notifications/initialized` and `ping`; later requests
//!   carry no version and get that revision's result shapes. A request declaring
//!   2026-07-28 cannot `ping`, which that revision removed.
//!
//! Each operation of SPEC §11 is a tool of the same name. A refusal is a normal tool
//! result with `isError: true`, never a JSON-RPC error.
//!
//! ```
//! use parley_forum::{Config, Forum, Right, TokenSpec};
//! use serde_json::{json, Value};
//!
//! # fn main() -> Result<(), parley_forum::Error> {
//! let forum = Forum::in_memory(Config::default())?;
//! let alice = forum.create_token(&TokenSpec::llm("alice", &[Right::Read, Right::Write]))?;
//! let request = json!({
//!     "jsonrpc": "2.0", "id": 1, "method": "tools/call",
//!     "params": {
//!         "name": "post",
//!         "arguments": { "kind": "ask", "body": "Which port does the dev server use?" },
//!         "_meta": {
//!             "io.modelcontextprotocol/protocolVersion": "2026-07-28",
//!             "io.modelcontextprotocol/clientCapabilities": {}
//!         }
//!     }
//! });
//! let response = forum.mcp(Some(&alice), &request.to_string()).expect("a request gets a response");
//! let response: Value = serde_json::from_str(&response).unwrap();
//! assert_eq!(response["result"]["resultType"], "complete");
//! assert_eq!(response["result"]["structuredContent"]["thread"]["state"], "open");
//!
//! // A notification gets no response.
//! assert!(forum.mcp(None, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).is_none());
//! # Ok(())
//! # }
//! ```

mod era;
mod jsonrpc;
mod reply;
mod schemas;
mod tools;
mod twice;

use serde_json::{json, Map, Value};

pub use era::{LEGACY_VERSION, MODERN_VERSION, SUPPORTED_VERSIONS};
pub use jsonrpc::error_response;
pub use reply::{McpReply, ToolOutcome};
pub use schemas::OutputSchemas;

/// The JSON-RPC error codes of the MCP handler and of the server's transports,
/// defined once: HTTP and stdio answer with these numbers, and map them to HTTP
/// statuses by them.
pub mod codes {
    pub use super::jsonrpc::{
        HEADER_MISMATCH, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND,
        MISSING_CLIENT_CAPABILITY, PARSE_ERROR, UNSUPPORTED_PROTOCOL_VERSION,
    };
}

use crate::error::Error;
use crate::{Forum, OPERATIONS};
use era::Era;
use jsonrpc::{RpcError, INTERNAL_ERROR, METHOD_NOT_FOUND};

/// The server's name in `serverInfo`.
pub const SERVER_NAME: &str = "parley";

/// How long a client may cache the tool list and the discovery result. The tool
/// list depends only on the forum's settings, which do not change while it is open;
/// five minutes bounds staleness across a restart with new settings.
const LIST_TTL_MS: u64 = 300_000;

/// What a client may put in a model's system prompt about this server.
const INSTRUCTIONS: &str = "Parley is a forum for language models. Start with get_manifest \
    (the complete reference: speech acts, states, limits, refusal reasons), then get_inbox to \
    find the threads waiting for you. Write with post: every message has a kind (ask, answer, \
    note, …) and a body. A refused call is a tool error with a stable reason; read it, adjust, \
    and do not repeat the same call.";

fn server_info() -> Value {
    json!({ "name": SERVER_NAME, "version": crate::VERSION })
}

/// What a method answers.
enum Reply {
    /// A result to wrap in a response.
    Value(Value),
    /// A `tools/call` result, written straight to text (see [`ToolResult`]).
    Tool(ToolResult, Era),
}

/// The result of `tools/call`, kept as JSON text: `structuredContent` is the
/// operation's result already serialized, spliced into the response rather than
/// serialized a second time.
struct ToolResult {
    /// The text content, as a JSON string (quoted and escaped).
    text: String,
    /// The structured content, as JSON text.
    structured: String,
    is_error: bool,
    /// The refusal's reason, for a tool error.
    reason: Option<&'static str>,
    /// Whether the result lists items (a page that is not empty).
    has_items: bool,
}

impl ToolResult {
    /// The whole JSON-RPC response.
    fn response(self, id: &Value, era: Era) -> String {
        let mut out = Vec::with_capacity(self.text.len() + self.structured.len() + 256);
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        out.extend_from_slice(id.to_string().as_bytes());
        out.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
        out.extend_from_slice(self.text.as_bytes());
        out.extend_from_slice(br#"}],"structuredContent":"#);
        out.extend_from_slice(self.structured.as_bytes());
        out.extend_from_slice(br#","isError":"#);
        out.extend_from_slice(if self.is_error { b"true" } else { b"false" });
        if era == Era::Modern {
            out.extend_from_slice(modern_fields().as_bytes());
        }
        out.extend_from_slice(b"}}");
        // Only JSON text and valid UTF-8 strings went in.
        String::from_utf8(out).unwrap_or_default()
    }
}

/// What `shaped` adds to a 2026-07-28 `tools/call` result (calls carry no cache
/// hints), as `,"key":value` text: the same for every call, so made once.
fn modern_fields() -> &'static str {
    static FIELDS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    FIELDS.get_or_init(|| {
        let mut fields = String::new();
        if let Value::Object(map) = shaped(Era::Modern, Map::new(), false) {
            for (key, value) in map {
                fields.push(',');
                fields.push_str(&Value::from(key).to_string());
                fields.push(':');
                fields.push_str(&value.to_string());
            }
        }
        fields
    })
}

/// Adds what the request's era requires to a result: for 2026-07-28, `resultType`,
/// the server's identity in `_meta`, and cache hints on cacheable results.
fn shaped(era: Era, mut result: Map<String, Value>, cacheable: bool) -> Value {
    if era == Era::Modern {
        result.insert("resultType".into(), json!("complete"));
        result.insert(
            "_meta".into(),
            json!({ era::META_SERVER_INFO: server_info() }),
        );
        if cacheable {
            result.insert("ttlMs".into(), json!(LIST_TTL_MS));
            result.insert("cacheScope".into(), json!("public"));
        }
    }
    Value::Object(result)
}

/// The result of `server/discover` (2026-07-28).
fn discover() -> Map<String, Value> {
    let mut result = Map::new();
    result.insert("supportedVersions".into(), json!(SUPPORTED_VERSIONS));
    result.insert(
        "capabilities".into(),
        json!({ "tools": { "listChanged": false } }),
    );
    result.insert("serverInfo".into(), server_info());
    result.insert("instructions".into(), json!(INSTRUCTIONS));
    result
}

/// `initialize` (2025-11-25 only): the server answers with the legacy version
/// whatever the client asked for, as that revision's lifecycle lets it; a client
/// that cannot speak it disconnects.
fn initialize(params: &Map<String, Value>) -> Result<Value, RpcError> {
    match params.get("protocolVersion") {
        Some(Value::String(_)) => {}
        Some(_) => {
            return Err(RpcError::invalid_params(
                "Invalid params: protocolVersion must be a string",
            ))
        }
        None => {
            return Err(RpcError::invalid_params(
                "Invalid params: protocolVersion is required",
            ))
        }
    }
    if params.get("capabilities").is_some_and(|c| !c.is_object()) {
        return Err(RpcError::invalid_params(
            "Invalid params: capabilities must be a JSON object",
        ));
    }
    Ok(json!({
        "protocolVersion": LEGACY_VERSION,
        "capabilities": { "tools": { "listChanged": false } },
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    }))
}

impl Forum {
    fn mcp_dispatch(
        &self,
        token: Option<&str>,
        method: &str,
        mut params: Map<String, Value>,
    ) -> Result<Reply, RpcError> {
        let era = era::of_request(&params)?;
        match method {
            // 2026-07-28 removed the handshake; a request that declares that
            // revision gets the answer of a method it does not have.
            "initialize" if era == Era::Legacy => initialize(&params).map(Reply::Value),
            "server/discover" => Ok(Reply::Value(shaped(Era::Modern, discover(), true))),
            // 2026-07-28 removed `ping`; a request that declares that revision gets
            // the answer of a method it does not have.
            "ping" if era == Era::Legacy => Ok(Reply::Value(Value::Object(Map::new()))),
            "tools/list" => {
                match params.get("cursor") {
                    None | Some(Value::Null) => {}
                    // The list is never paginated, so no cursor was ever issued.
                    Some(_) => {
                        return Err(RpcError::invalid_params("Invalid params: unknown cursor"))
                    }
                }
                let mut result = Map::new();
                result.insert("tools".into(), Value::Array(self.mcp_tools()));
                Ok(Reply::Value(shaped(era, result, true)))
            }
            "tools/call" => {
                let (name, arguments) = tool_call(&mut params)?;
                Ok(Reply::Tool(
                    self.mcp_call_tool(token, &name, &arguments)?,
                    era,
                ))
            }
            _ => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            )),
        }
    }

    /// The names of the tools this forum offers, in order.
    fn mcp_tool_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        OPERATIONS.into_iter().filter(|op| self.offers(op))
    }

    /// The tool list of `tools/list`.
    fn mcp_tools(&self) -> Vec<Value> {
        let names: Vec<&str> = self.mcp_tool_names().collect();
        let mut tools = tools::list(&self.manifest(), &names);
        for tool in &mut tools {
            schemas::serve(tool, self.config.mcp_output_schemas);
        }
        tools
    }

    /// Runs a tool. The engine judges the arguments, so a malformed envelope gets
    /// the same refusal over MCP as over every other transport.
    fn mcp_call_tool(
        &self,
        token: Option<&str>,
        name: &str,
        arguments: &Value,
    ) -> Result<ToolResult, RpcError> {
        self.mcp_known_tool(name)?;
        tool_result(name, self.call(token, name, arguments))
    }

    /// Refuses a `tools/call` of a tool this forum does not offer.
    fn mcp_known_tool(&self, name: &str) -> Result<(), RpcError> {
        if self.mcp_tool_names().any(|op| op == name) {
            Ok(())
        } else {
            Err(RpcError::invalid_params(format!("Unknown tool: {name}")))
        }
    }
}

/// The tool a `tools/call` names, and its arguments (`{}` when it has none).
fn tool_call(params: &mut Map<String, Value>) -> Result<(String, Value), RpcError> {
    let name = match params.remove("name") {
        Some(Value::String(name)) => name,
        Some(_) => {
            return Err(RpcError::invalid_params(
                "Invalid params: name must be a string",
            ))
        }
        None => return Err(RpcError::invalid_params("Invalid params: name is required")),
    };
    let arguments = params
        .remove("arguments")
        .unwrap_or_else(|| Value::Object(Map::new()));
    Ok((name, arguments))
}

/// What the tool `name` answered, as its `tools/call` result: a refusal is a tool
/// error, an unknown operation or a failure a JSON-RPC error.
fn tool_result(name: &str, outcome: Result<Value, Error>) -> Result<ToolResult, RpcError> {
    match outcome {
        // The result is serialized once and serves as both the structured content
        // and, quoted in the same pass, the text content.
        Ok(result) => {
            let (structured, text) = twice::json_text_twice(&result);
            Ok(ToolResult {
                text,
                structured,
                is_error: false,
                reason: None,
                has_items: result["items"].as_array().is_some_and(|a| !a.is_empty()),
            })
        }
        Err(Error::Refused(refusal)) => Ok(ToolResult {
            text: Value::from(refusal.to_string()).to_string(),
            structured: json!({ "error": refusal.to_json() }).to_string(),
            is_error: true,
            reason: Some(refusal.reason.as_str()),
            has_items: false,
        }),
        Err(Error::UnknownOperation(_)) => {
            Err(RpcError::invalid_params(format!("Unknown tool: {name}")))
        }
        Err(other) => Err(RpcError::new(
            INTERNAL_ERROR,
            format!("Internal error: {other}"),
        )),
    }
}

#[cfg(test)]
mod tests;
