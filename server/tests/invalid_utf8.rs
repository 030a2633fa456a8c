//! Bytes that are not UTF-8 are refused alike on every route, never decoded
//! lossily: `/mcp` answers a JSON-RPC parse error (-32700) with HTTP 400, REST its
//! 400 refusal, and nothing is stored.

mod support;

use serde_json::{json, Value};
use support::{http, Server, TempForum};

const MODERN: &str = "2026-07-28";

/// `{"kind":"ask","body":"caf<0xFF>?"}`: JSON except for one byte.
fn envelope() -> Vec<u8> {
    let mut bytes = br#"{"kind":"ask","body":"caf"#.to_vec();
    bytes.push(0xFF);
    bytes.extend_from_slice(br#"?"}"#);
    bytes
}

/// A `tools/call` of `post` with that envelope, optionally with the stateless
/// revision's `_meta`.
fn mcp_post(modern: bool) -> Vec<u8> {
    let meta = if modern {
        format!(
            r#","_meta":{{"io.modelcontextprotocol/protocolVersion":"{MODERN}","io.modelcontextprotocol/clientCapabilities":{{}}}}"#
        )
    } else {
        String::new()
    };
    let mut bytes =
        br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"post","arguments":"#
            .to_vec();
    bytes.extend_from_slice(&envelope());
    bytes.extend_from_slice(format!("{meta}}}}}").as_bytes());
    bytes
}

fn assert_parse_error(body: &Value) {
    assert_eq!(body["jsonrpc"], "2.0");
    assert!(body["id"].is_null(), "{body}");
    assert_eq!(body["error"]["code"], -32700, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("UTF-8")),
        "{body}"
    );
}

#[test]
fn invalid_utf8_is_refused_on_mcp_and_rest_and_nothing_is_stored() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let server = Server::start(&forum.db, None, &[]);
    let auth = format!("Bearer {alice}");

    let legacy = http(
        server.addr,
        "POST",
        "/mcp",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        Some(&mcp_post(false)),
    );
    assert_eq!(legacy.status, 400);
    assert_eq!(legacy.header("content-type"), Some("application/json"));
    assert_parse_error(&legacy.json());

    let modern = http(
        server.addr,
        "POST",
        "/mcp",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "post"),
        ],
        Some(&mcp_post(true)),
    );
    assert_eq!(modern.status, 400);
    assert_parse_error(&modern.json());

    let rest = http(
        server.addr,
        "POST",
        "/v1/messages",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        Some(&envelope()),
    );
    assert_eq!(rest.status, 400);
    assert_eq!(rest.reason(), "invalid_body");
    assert!(rest.json()["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("UTF-8")));

    // Read back through both APIs: nothing was stored.
    let threads = server.get("/v1/threads", Some(&alice));
    assert_eq!(threads.status, 200);
    assert_eq!(threads.json()["items"], json!([]));
    let list = support::rpc(
        8,
        "tools/call",
        json!({"name": "list_threads", "arguments": {}}),
    );
    let listed = server.post("/mcp", Some(&alice), &list);
    assert_eq!(listed.status, 200);
    assert_eq!(
        listed.json()["result"]["structuredContent"]["items"],
        json!([])
    );

    // The same envelope in valid UTF-8 goes through both, so the refusals above were
    // about the bytes and nothing else.
    let fine = json!({"kind": "ask", "body": "café?"}).to_string();
    let posted = server.post("/v1/messages", Some(&alice), &fine);
    assert_eq!(posted.status, 201);
    assert_eq!(posted.json()["message"]["body"], "café?");
}

#[test]
fn invalid_utf8_in_a_query_or_a_path_is_refused() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let server = Server::start(&forum.db, None, &[]);
    for path in [
        "/v1/threads?since=%FF",
        "/v1/threads?state=open&x=caf%C3",
        "/v1/inbox?extension=%FF%FE",
        "/v1/threads/%FF",
        "/v1/claims/cl_%FF",
    ] {
        let resp = server.get(path, Some(&alice));
        assert_eq!(resp.status, 400, "{path}");
        assert_eq!(
            resp.header("content-type"),
            Some("application/json"),
            "{path}"
        );
        assert_eq!(resp.reason(), "invalid_argument", "{path}");
        assert!(
            resp.json()["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("UTF-8")),
            "{path}"
        );
    }
    // Percent-encoded UTF-8 is fine.
    let ok = server.get("/v1/threads?since=caf%C3%A9", Some(&alice));
    assert_eq!(ok.reason(), "invalid_cursor");
}
