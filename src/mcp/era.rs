//! The two MCP revisions the handler speaks, and how a request picks one.
//!
//! The modern revision (2026-07-28) is stateless: every request names its protocol
//! version and the client's capabilities in `params._meta`. The legacy revision
//! (2025-11-25) negotiates once, with `initialize`, and its later requests carry no
//! version. The handler keeps no state between requests, so each request is served
//! in the era its own `_meta` declares: with modern metadata it is modern, without
//! it legacy.

use serde_json::{json, Map, Value};

use super::jsonrpc::{RpcError, UNSUPPORTED_PROTOCOL_VERSION};

/// The current, stateless MCP revision.
pub const MODERN_VERSION: &str = "2026-07-28";
/// The previous, handshake-based MCP revision.
pub const LEGACY_VERSION: &str = "2025-11-25";
/// Every protocol version the handler accepts, newest first.
pub const SUPPORTED_VERSIONS: [&str; 2] = [MODERN_VERSION, LEGACY_VERSION];

pub(crate) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The revision a request is served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// 2026-07-28: results carry `resultType` (and cache hints on lists).
    Modern,
    /// 2025-11-25: results have the shapes of that revision.
    Legacy,
}

/// The error a request gets for a protocol version the handler does not speak.
pub(crate) fn unsupported_version(requested: &str) -> RpcError {
    RpcError::new(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
        .with_data(json!({ "supported": SUPPORTED_VERSIONS, "requested": requested }))
}

/// Reads the era from a request's params.
///
/// No `_meta`, or a `_meta` without the protocol keys (a legacy client may still
/// send `progressToken`), is a legacy request. A request naming a protocol version
/// must name a supported one (-32022); a modern one must also declare its client
/// capabilities, as an object (-32602 otherwise).
pub(crate) fn of_request(params: &Map<String, Value>) -> Result<Era, RpcError> {
    let meta = match params.get("_meta") {
        None => return Ok(Era::Legacy),
        Some(Value::Object(meta)) => meta,
        Some(_) => {
            return Err(RpcError::invalid_params(
                "Invalid params: _meta must be a JSON object",
            ))
        }
    };
    let version = meta.get(META_PROTOCOL_VERSION);
    let capabilities = meta.get(META_CLIENT_CAPABILITIES);
    if version.is_none() && capabilities.is_none() {
        return Ok(Era::Legacy);
    }
    let version = match version {
        Some(Value::String(v)) => v.as_str(),
        Some(_) => {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: _meta[\"{META_PROTOCOL_VERSION}\"] must be a string"
            )))
        }
        None => {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: _meta[\"{META_PROTOCOL_VERSION}\"] is required"
            )))
        }
    };
    match version {
        MODERN_VERSION => match capabilities {
            Some(Value::Object(_)) => Ok(Era::Modern),
            Some(_) => Err(RpcError::invalid_params(format!(
                "Invalid params: _meta[\"{META_CLIENT_CAPABILITIES}\"] must be a JSON object"
            ))),
            None => Err(RpcError::invalid_params(format!(
                "Invalid params: _meta[\"{META_CLIENT_CAPABILITIES}\"] is required"
            ))),
        },
        LEGACY_VERSION => Ok(Era::Legacy),
        other => Err(unsupported_version(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::jsonrpc::INVALID_PARAMS;
    use super::*;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_request_metadata_picks_the_era() {
        assert_eq!(of_request(&Map::new()).unwrap(), Era::Legacy);
        assert_eq!(
            of_request(&params(json!({"_meta": {"progressToken": 1}}))).unwrap(),
            Era::Legacy
        );
        let modern =
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}});
        assert_eq!(of_request(&params(modern)).unwrap(), Era::Modern);
        let legacy = json!({"_meta": {META_PROTOCOL_VERSION: "2025-11-25"}});
        assert_eq!(of_request(&params(legacy)).unwrap(), Era::Legacy);
    }

    #[test]
    fn bad_metadata_is_refused() {
        let e = of_request(&params(
            json!({"_meta": {META_PROTOCOL_VERSION: "1900-01-01", META_CLIENT_CAPABILITIES: {}}}),
        ))
        .unwrap_err();
        assert_eq!(e.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(
            e.data.unwrap(),
            json!({"supported": ["2026-07-28", "2025-11-25"], "requested": "1900-01-01"})
        );
        for bad in [
            json!({"_meta": 3}),
            json!({"_meta": {META_PROTOCOL_VERSION: 2026}}),
            json!({"_meta": {META_CLIENT_CAPABILITIES: {}}}),
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}),
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: []}}),
        ] {
            assert_eq!(
                of_request(&params(bad.clone())).unwrap_err().code,
                INVALID_PARAMS,
                "{bad}"
            );
        }
    }
}
