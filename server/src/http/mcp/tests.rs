//! The handler's own tests; those over HTTP are in `server/tests/mcp_http.rs`.

use super::*;

#[test]
fn too_large_carries_the_refusal() {
    let v: Value = serde_json::from_str(&too_large_response(10)).unwrap();
    assert_eq!(v["error"]["data"]["reason"], "payload_too_large");
    assert_eq!(v["error"]["data"]["status"], 413);
    assert!(v["id"].is_null());
}
