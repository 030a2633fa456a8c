//! JSON-RPC 2.0 framing as MCP uses it: decoding one incoming message and encoding
//! one response. Nothing here knows about tools or the forum.

use serde_json::{json, Map, Value};

/// The text is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid request object (or is a batch, which MCP removed).
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The params are malformed, or name an unknown tool.
pub const INVALID_PARAMS: i64 = -32602;
/// The server failed (storage), not the request.
pub const INTERNAL_ERROR: i64 = -32603;
/// The request's protocol version is not one this server speaks (MCP 2026-07-28).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// The HTTP headers of a request disagree with its body (MCP 2026-07-28).
pub const HEADER_MISMATCH: i64 = -32020;
/// The request needs a client capability it did not declare (MCP 2026-07-28).
pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
    pub(crate) data: Option<Value>,
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub(crate) fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        RpcError::new(INVALID_PARAMS, message)
    }
}

/// One decoded message.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A request: it gets exactly one response echoing `id`.
    Request {
        id: Value,
        method: String,
        params: Map<String, Value>,
    },
    /// A notification (no `id`): it never gets a response.
    Notification,
    /// A JSON-RPC response sent to us: nothing to answer.
    Response,
}

/// Why a message could not be decoded: the error to send back, under `id`
/// (`null` when the id itself could not be read).
#[derive(Debug)]
pub(crate) struct Rejected {
    pub(crate) id: Value,
    pub(crate) error: RpcError,
}

fn reject(id: Value, code: i64, message: &str) -> Rejected {
    Rejected {
        id,
        error: RpcError::new(code, message),
    }
}

/// A request id: MCP allows a string or an integer, and forbids `null`.
pub(crate) fn is_valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// Decodes one message from its text.
///
/// Every malformed input becomes a [`Rejected`] with the JSON-RPC code of the
/// fault; nothing here can panic. serde_json bounds nesting depth, so a deeply
/// nested document is a parse error rather than a stack overflow.
pub(crate) fn decode(text: &str) -> Result<Incoming, Rejected> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| reject(Value::Null, PARSE_ERROR, &format!("Parse error: {e}")))?;
    decode_value(value)
}

/// Decodes one message already parsed as JSON.
pub(crate) fn decode_value(value: Value) -> Result<Incoming, Rejected> {
    let mut obj = match value {
        Value::Object(obj) => obj,
        Value::Array(_) => {
            return Err(reject(
                Value::Null,
                INVALID_REQUEST,
                "Invalid request: batches are not supported (MCP removed JSON-RPC batching); send one message at a time",
            ))
        }
        _ => return Err(reject(Value::Null, INVALID_REQUEST, "Invalid request: a message must be a JSON object")),
    };

    if !obj.contains_key("method") && (obj.contains_key("result") || obj.contains_key("error")) {
        return Ok(Incoming::Response);
    }

    let id = match obj.remove("id") {
        None => None,
        Some(id) if is_valid_id(&id) => Some(id),
        Some(_) => {
            return Err(reject(
                Value::Null,
                INVALID_REQUEST,
                "Invalid request: id must be a string or an integer",
            ))
        }
    };
    let echo = id.clone().unwrap_or(Value::Null);

    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(reject(
            echo,
            INVALID_REQUEST,
            "Invalid request: jsonrpc must be \"2.0\"",
        ));
    }
    let method = match obj.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => {
            return Err(reject(
                echo,
                INVALID_REQUEST,
                "Invalid request: method must be a string",
            ))
        }
        None => {
            return Err(reject(
                echo,
                INVALID_REQUEST,
                "Invalid request: method is missing",
            ))
        }
    };

    let Some(id) = id else {
        return Ok(Incoming::Notification);
    };
    let params = match obj.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => {
            return Err(reject(
                id,
                INVALID_PARAMS,
                "Invalid params: params must be a JSON object",
            ))
        }
    };
    Ok(Incoming::Request { id, method, params })
}

/// A success response. Built field by field: `json!` would deep-copy `result`.
pub(crate) fn result(id: &Value, result: Value) -> String {
    envelope(id, "result", result)
}

fn envelope(id: &Value, key: &str, body: Value) -> String {
    let mut response = Map::new();
    response.insert("jsonrpc".into(), Value::from("2.0"));
    response.insert("id".into(), id.clone());
    response.insert(key.into(), body);
    Value::Object(response).to_string()
}

/// An error response as JSON: `code` one of [`super::codes`], `data` when given.
/// The transports answer what the handler cannot see (an unreadable body, say)
/// with it, so every error response has one form.
pub fn error_response(
    id: Value,
    code: i64,
    message: impl Into<String>,
    data: Option<Value>,
) -> Value {
    let mut body = Map::new();
    body.insert("code".into(), json!(code));
    body.insert("message".into(), Value::from(message.into()));
    if let Some(data) = data {
        body.insert("data".into(), data);
    }
    json!({ "jsonrpc": "2.0", "id": id, "error": Value::Object(body) })
}

/// An error response.
pub(crate) fn error(id: &Value, error: &RpcError) -> String {
    let mut body = Map::new();
    body.insert("code".into(), json!(error.code));
    body.insert("message".into(), json!(error.message));
    if let Some(data) = &error.data {
        body.insert("data".into(), data.clone());
    }
    envelope(id, "error", Value::Object(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected(text: &str) -> Rejected {
        match decode(text) {
            Err(r) => r,
            Ok(m) => panic!("{text} decoded as {m:?}"),
        }
    }

    #[test]
    fn requests_notifications_and_responses() {
        match decode(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap() {
            Incoming::Request { id, method, params } => {
                assert_eq!(id, json!(7));
                assert_eq!(method, "ping");
                assert!(params.is_empty());
            }
            other => panic!("{other:?}"),
        }
        match decode(r#"{"jsonrpc":"2.0","id":"a","method":"x","params":{"k":1}}"#).unwrap() {
            Incoming::Request { id, params, .. } => {
                assert_eq!(id, json!("a"));
                assert_eq!(params["k"], 1);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            decode(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap(),
            Incoming::Notification
        ));
        assert!(matches!(
            decode(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#).unwrap(),
            Incoming::Response
        ));
        assert!(matches!(
            decode(r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}"#).unwrap(),
            Incoming::Response
        ));
    }

    #[test]
    fn malformed_messages_get_their_codes() {
        for (text, code, id) in [
            ("", PARSE_ERROR, Value::Null),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"pi"#,
                PARSE_ERROR,
                Value::Null,
            ),
            ("[]", INVALID_REQUEST, Value::Null),
            (
                r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                INVALID_REQUEST,
                Value::Null,
            ),
            ("42", INVALID_REQUEST, Value::Null),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
                INVALID_REQUEST,
                json!(3),
            ),
            (r#"{"id":3,"method":"ping"}"#, INVALID_REQUEST, json!(3)),
            (
                r#"{"jsonrpc":"2.0","id":"q","method":5}"#,
                INVALID_REQUEST,
                json!("q"),
            ),
            (r#"{"jsonrpc":"2.0","id":"q"}"#, INVALID_REQUEST, json!("q")),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":[1]}"#,
                INVALID_PARAMS,
                json!(4),
            ),
        ] {
            let r = rejected(text);
            assert_eq!(r.error.code, code, "{text}");
            assert_eq!(r.id, id, "{text}");
        }
    }

    #[test]
    fn deep_nesting_and_huge_numbers_do_not_panic() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(rejected(&deep).error.code, PARSE_ERROR);
        let deep_obj = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"a":{}1{}}}}}"#,
            "[".repeat(5000),
            "]".repeat(5000)
        );
        assert_eq!(rejected(&deep_obj).error.code, PARSE_ERROR);
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":1{},"method":"ping"}}"#,
            "0".repeat(400)
        );
        assert!(decode(&big).is_err());
        let r = rejected(r#"{"jsonrpc":"2.0","id":1e999,"method":"ping"}"#);
        assert_eq!(r.error.code, PARSE_ERROR);
    }

    #[test]
    fn encoding_echoes_the_id() {
        let ok: Value = serde_json::from_str(&result(&json!("x"), json!({}))).unwrap();
        assert_eq!(ok, json!({"jsonrpc": "2.0", "id": "x", "result": {}}));
        let err: Value = serde_json::from_str(&error(
            &json!(9),
            &RpcError::new(METHOD_NOT_FOUND, "nope").with_data(json!({"m": 1})),
        ))
        .unwrap();
        assert_eq!(err["id"], 9);
        assert_eq!(err["error"]["code"], -32601);
        assert_eq!(err["error"]["data"]["m"], 1);
        let bare: Value =
            serde_json::from_str(&error(&Value::Null, &RpcError::new(PARSE_ERROR, "p"))).unwrap();
        assert!(bare["id"].is_null());
        assert!(bare["error"].get("data").is_none());
    }
}
