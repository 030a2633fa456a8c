//! MCP over Streamable HTTP (`POST /mcp`), in process: the headers a modern request
//! mirrors, oversized requests, allowed origins. A smoke test of each MCP
//! transport through the binary is `bindings/cli/tests/mcp_transports.rs`.

mod support;

use serde_json::{json, Value};
use support::{http, rpc, Server, TempForum};

const MODERN: &str = "2026-07-28";

fn modern_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}})
}

#[test]
fn modern_requests_must_mirror_their_envelope_in_headers() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let server = Server::start(&forum.db, None, &[]);
    let auth = format!("Bearer {alice}");
    let call = |headers: &[(&str, &str)], body: &str| {
        let mut all = vec![
            ("Authorization", auth.as_str()),
            ("MCP-Protocol-Version", MODERN),
        ];
        all.extend_from_slice(headers);
        http(server.addr, "POST", "/mcp", &all, Some(body.as_bytes()))
    };
    let whoami = rpc(
        1,
        "tools/call",
        json!({"name": "whoami", "arguments": {}, "_meta": modern_meta()}),
    );

    let ok = call(
        &[("Mcp-Method", "tools/call"), ("Mcp-Name", "whoami")],
        &whoami,
    );
    assert_eq!(ok.status, 200);
    assert_eq!(
        ok.json()["result"]["structuredContent"]["identity"],
        "ainotes:alice"
    );

    for headers in [
        vec![("Mcp-Method", "tools/list"), ("Mcp-Name", "whoami")],
        vec![("Mcp-Name", "whoami")],
        vec![("Mcp-Method", "tools/call"), ("Mcp-Name", "post")],
        vec![("Mcp-Method", "tools/call")],
    ] {
        let resp = call(&headers, &whoami);
        assert_eq!(resp.status, 400, "{headers:?}");
        assert_eq!(resp.json()["error"]["code"], -32020, "{headers:?}");
        assert_eq!(resp.json()["id"], 1);
    }

    let no_meta = call(
        &[("Mcp-Method", "tools/list")],
        &rpc(2, "tools/list", json!({})),
    );
    assert_eq!(no_meta.status, 400);
    assert_eq!(no_meta.json()["error"]["code"], -32602);

    let unknown = call(
        &[("Mcp-Method", "no/such")],
        &rpc(3, "no/such", json!({"_meta": modern_meta()})),
    );
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.json()["error"]["code"], -32601);
}

#[test]
fn oversized_mcp_requests_get_413_with_the_refusal() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let server = Server::start(
        &forum.db,
        Some(r#"{"limits":{"request_max_bytes":2048}}"#),
        &[],
    );
    let body = rpc(
        1,
        "tools/call",
        json!({"name": "post", "arguments": {"kind": "ask", "body": "z".repeat(3000)}}),
    );
    let auth = format!("Bearer {alice}");
    let resp = http(
        server.addr,
        "POST",
        "/mcp",
        &[("Authorization", &auth)],
        Some(body.as_bytes()),
    );
    assert_eq!(resp.status, 413);
    assert_eq!(resp.json()["error"]["data"]["reason"], "payload_too_large");
    assert_eq!(resp.json()["error"]["data"]["status"], 413);
}

#[test]
fn allow_origin_extends_the_loopback_list() {
    let forum = TempForum::new();
    forum.token("alice", &[]);
    let server = Server::start(
        &forum.db,
        None,
        &["--allow-origin", "https://app.example.org"],
    );
    let list = rpc(1, "tools/list", json!({}));
    let allowed = http(
        server.addr,
        "POST",
        "/mcp",
        &[("Origin", "https://app.example.org")],
        Some(list.as_bytes()),
    );
    assert_eq!(allowed.status, 200);
    let other = http(
        server.addr,
        "POST",
        "/mcp",
        &[("Origin", "https://other.example.org")],
        Some(list.as_bytes()),
    );
    assert_eq!(other.status, 403);
}
