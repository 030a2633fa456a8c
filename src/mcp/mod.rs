//! MCP (JSON-RPC 2.0) handler over the engine (being written).

use crate::Forum;

impl Forum {
    /// Handles one MCP JSON-RPC message for the holder of `token`; `None` for a notification.
    pub fn mcp(&self, token: Option<&str>, request: &str) -> Option<String> {
        let _ = (token, request);
        None
    }
}
