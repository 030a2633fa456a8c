//! The HTTP side of MCP's two eras.
//!
//! Over Streamable HTTP the `MCP-Protocol-Version` header routes a request: absent
//! or naming a handshake revision (2025-11-25 and before), it is a legacy request;
//! naming anything else, it claims the stateless revision (2026-07-28), whose
//! requests carry their envelope in `params._meta` and mirror it in headers
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) that intermediaries route on.
//! The engine's handler never sees headers, so the transport checks that the
//! headers agree with the body (HeaderMismatch, -32020) and maps JSON-RPC error
//! codes to the HTTP statuses that revision assigns.

use axum::http::{HeaderMap, StatusCode};
use serde_json::Value;

use parley_forum::mcp::codes::{
    HEADER_MISMATCH, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR, UNSUPPORTED_PROTOCOL_VERSION as UNSUPPORTED_VERSION,
};

const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";

/// Revisions negotiated by `initialize`; a request naming one of them is legacy.
const HANDSHAKE_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The era a request was routed to by its headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    Legacy,
    Modern,
}

pub(crate) fn route(headers: &HeaderMap) -> Route {
    match header(headers, PROTOCOL_VERSION_HEADER) {
        None => Route::Legacy,
        Some(v) if HANDSHAKE_VERSIONS.contains(&v.as_str()) => Route::Legacy,
        Some(_) => Route::Modern,
    }
}

/// For a modern request, the JSON-RPC error answering a body whose envelope is
/// missing or whose routing headers disagree with it; `None` when the request may
/// go on to the engine. Notifications and unparseable bodies are the engine's to answer.
pub(crate) fn reject(headers: &HeaderMap, body: &Value) -> Option<Value> {
    let Value::Object(request) = body else {
        return None;
    };
    let (Some(method), Some(id)) = (request.get("method"), request.get("id")) else {
        return None;
    };
    let error = |code: i64, message: String| {
        Some(parley_forum::mcp::error_response(
            id.clone(),
            code,
            message,
            None,
        ))
    };
    for name in [PROTOCOL_VERSION_HEADER, METHOD_HEADER, NAME_HEADER] {
        if headers.get_all(name).iter().count() > 1 {
            return error(
                HEADER_MISMATCH,
                format!("the {name} header appears more than once"),
            );
        }
    }
    let meta = request
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object);
    let Some(meta) = meta.filter(|m| {
        m.contains_key(META_PROTOCOL_VERSION) && m.contains_key(META_CLIENT_CAPABILITIES)
    }) else {
        return error(
            INVALID_PARAMS,
            format!(
                "Invalid params: a request under MCP-Protocol-Version {} must carry params._meta with \"{META_PROTOCOL_VERSION}\" and \"{META_CLIENT_CAPABILITIES}\"",
                header(headers, PROTOCOL_VERSION_HEADER).unwrap_or_default()
            ),
        );
    };
    if header(headers, PROTOCOL_VERSION_HEADER).as_deref() != meta[META_PROTOCOL_VERSION].as_str() {
        return error(
            HEADER_MISMATCH,
            "the MCP-Protocol-Version header does not match params._meta's protocol version".into(),
        );
    }
    if header(headers, METHOD_HEADER).as_deref() != method.as_str() {
        return error(
            HEADER_MISMATCH,
            "the Mcp-Method header does not match the request's method".into(),
        );
    }
    let name_key = match method.as_str() {
        Some("tools/call" | "prompts/get") => Some("name"),
        Some("resources/read") => Some("uri"),
        _ => None,
    };
    if let Some(key) = name_key {
        let value = request
            .get("params")
            .and_then(|p| p.get(key))
            .filter(|v| !v.is_null());
        if let Some(value) = value {
            let named = header(headers, NAME_HEADER).and_then(|h| decode_header_value(&h));
            if named.as_deref() != value.as_str() {
                return error(
                    HEADER_MISMATCH,
                    format!("the Mcp-Name header does not match params.{key}"),
                );
            }
        }
    }
    None
}

/// The HTTP status of an answer: in the modern era, errors the revision assigns a
/// status to (400 for malformed or mismatched requests and unsupported versions,
/// 404 for an unknown method); in the legacy era, 400 only for a message that could
/// not be read at all. Everything else, errors included, rides on 200.
pub(crate) fn status(route: Route, reply: &Value) -> StatusCode {
    status_of(
        route,
        reply["error"]["code"].as_i64(),
        reply["id"].is_null(),
    )
}

/// [`status`] of an answer known by its error code and whether its id is `null`.
pub(crate) fn status_of(route: Route, code: Option<i64>, id_null: bool) -> StatusCode {
    let Some(code) = code else {
        return StatusCode::OK;
    };
    match route {
        Route::Modern => match code {
            PARSE_ERROR
            | INVALID_REQUEST
            | INVALID_PARAMS
            | HEADER_MISMATCH
            | MISSING_CLIENT_CAPABILITY
            | UNSUPPORTED_VERSION => StatusCode::BAD_REQUEST,
            METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
            _ => StatusCode::OK,
        },
        Route::Legacy if code == PARSE_ERROR || (code == INVALID_REQUEST && id_null) => {
            StatusCode::BAD_REQUEST
        }
        Route::Legacy => StatusCode::OK,
    }
}

/// A header's value with surrounding whitespace removed (RFC 9110 §5.5).
fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string())
}

/// Undoes the `=?base64?…?=` wrapping that carries values unsafe in a header;
/// `None` for a malformed wrapping, so that it never matches by accident.
fn decode_header_value(value: &str) -> Option<String> {
    let Some(payload) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Some(value.to_string());
    };
    let bytes = base64_decode(payload)?;
    String::from_utf8(bytes).ok()
}

/// Strict standard base64 (with padding); `None` on any malformed input.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    if !bytes.chunks_exact(4).remainder().is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for (n, chunk) in bytes.chunks(4).enumerate() {
        let last = n + 1 == bytes.len() / 4;
        let pad = chunk.iter().rev().take_while(|&&b| b == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut acc: u32 = 0;
        for &b in &chunk[..4 - pad] {
            let v = ALPHABET.iter().position(|&a| a == b)? as u32;
            acc = (acc << 6) | v;
        }
        acc <<= 6 * pad as u32;
        let decoded = [(acc >> 16) as u8, (acc >> 8) as u8, acc as u8];
        // Non-zero bits beyond the last byte mean a non-canonical encoding.
        if (pad == 1 && decoded[2] != 0) || (pad == 2 && decoded[1] != 0) {
            return None;
        }
        out.extend_from_slice(&decoded[..3 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use serde_json::json;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn modern(method: &str, extra: Value) -> Value {
        let mut params =
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}});
        if let (Value::Object(p), Value::Object(e)) = (&mut params, extra) {
            p.extend(e);
        }
        json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
    }

    #[test]
    fn routing_follows_the_version_header() {
        assert_eq!(route(&HeaderMap::new()), Route::Legacy);
        assert_eq!(
            route(&headers(&[("mcp-protocol-version", "2025-06-18")])),
            Route::Legacy
        );
        assert_eq!(
            route(&headers(&[("MCP-Protocol-Version", "2026-07-28")])),
            Route::Modern
        );
        assert_eq!(
            route(&headers(&[("mcp-protocol-version", "not-a-version")])),
            Route::Modern
        );
    }

    #[test]
    fn matching_headers_pass() {
        let h = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "  whoami "),
        ]);
        assert_eq!(
            reject(&h, &modern("tools/call", json!({"name": "whoami"}))),
            None
        );
        let h = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?d2hvYW1p?="),
        ]);
        assert_eq!(
            reject(&h, &modern("tools/call", json!({"name": "whoami"}))),
            None
        );
        let notification = json!({"jsonrpc": "2.0", "method": "notifications/cancelled"});
        assert_eq!(reject(&HeaderMap::new(), &notification), None);
    }

    #[test]
    fn disagreeing_headers_are_header_mismatch() {
        let body = modern("tools/call", json!({"name": "whoami"}));
        for h in [
            headers(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/list"),
                ("mcp-name", "whoami"),
            ]),
            headers(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-name", "whoami"),
            ]),
            headers(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
            ]),
            headers(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "post"),
            ]),
            headers(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "=?base64?!!!!?="),
            ]),
            headers(&[
                ("mcp-protocol-version", "v9"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "whoami"),
            ]),
            headers(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-method", "tools/call"),
            ]),
        ] {
            let error = reject(&h, &body).expect("rejected");
            assert_eq!(error["error"]["code"], HEADER_MISMATCH, "{h:?}");
            assert_eq!(error["id"], 7);
        }
    }

    #[test]
    fn a_missing_envelope_is_invalid_params() {
        let h = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "server/discover"),
        ]);
        let body = json!({"jsonrpc": "2.0", "id": "a", "method": "server/discover", "params": {}});
        let error = reject(&h, &body).unwrap();
        assert_eq!(error["error"]["code"], INVALID_PARAMS);
        assert_eq!(error["id"], "a");
    }

    #[test]
    fn statuses_follow_the_era() {
        let err =
            |code: i64| json!({"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "x"}});
        assert_eq!(
            status(Route::Modern, &err(METHOD_NOT_FOUND)),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            status(Route::Modern, &err(UNSUPPORTED_VERSION)),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(status(Route::Modern, &err(-32603)), StatusCode::OK);
        assert_eq!(
            status(Route::Legacy, &err(METHOD_NOT_FOUND)),
            StatusCode::OK
        );
        assert_eq!(status(Route::Legacy, &err(INVALID_PARAMS)), StatusCode::OK);
        let unreadable =
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": PARSE_ERROR, "message": "x"}});
        assert_eq!(status(Route::Legacy, &unreadable), StatusCode::BAD_REQUEST);
        assert_eq!(
            status(
                Route::Modern,
                &json!({"jsonrpc": "2.0", "id": 1, "result": {}})
            ),
            StatusCode::OK
        );
    }

    fn base64_encode(bytes: &[u8]) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn base64_round_trips(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            proptest::prop_assert_eq!(base64_decode(&base64_encode(&bytes)), Some(bytes));
        }

        #[test]
        fn header_values_decode_to_what_was_wrapped(text in "\\PC{0,30}") {
            let wrapped = format!("=?base64?{}?=", base64_encode(text.as_bytes()));
            proptest::prop_assert_eq!(decode_header_value(&wrapped), Some(text));
        }
    }

    #[test]
    fn base64_is_strict() {
        assert_eq!(base64_decode("aGk=").unwrap(), b"hi");
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("").unwrap(), b"");
        assert!(base64_decode("aGk").is_none());
        assert!(base64_decode("aGl=").is_none());
        assert!(base64_decode("a=Gk").is_none());
    }
}
