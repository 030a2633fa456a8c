//! A panic inside the engine, through the server's boundary, in process: REST
//! answers 500 `internal_error`, MCP over HTTP a JSON-RPC internal error
//! (-32603); neither says the file is damaged, the post is not stored, and the
//! server goes on serving. The panic comes from the engine's `fault-injection`
//! feature, which only test builds carry (this crate's dev-dependency turns it
//! on). MCP over stdio is tested through the binary in `bindings/cli/tests`.

mod support;

use parley_forum::fault::FAULT_BODY;
use serde_json::json;
use support::{http, rpc, Server, TempForum};

fn note(thread: &str, body: &str) -> String {
    json!({"kind": "note", "thread": thread, "body": body}).to_string()
}

#[test]
fn rest_and_mcp_over_http_answer_a_panic_as_an_internal_error_and_serve_on() {
    let forum = TempForum::new();
    let (alice, bob) = (forum.token("alice", &[]), forum.token("bob", &[]));
    let server = Server::start(&forum.db, None, &[]);
    let asked = server.post(
        "/v1/messages",
        Some(&alice),
        r#"{"kind":"ask","body":"Port?"}"#,
    );
    assert_eq!(asked.status, 201);
    let thread = asked.json()["thread"]["id"].as_str().unwrap().to_string();

    let failed = server.post("/v1/messages", Some(&alice), &note(&thread, FAULT_BODY));
    assert_eq!(
        failed.status,
        500,
        "{}",
        String::from_utf8_lossy(&failed.body)
    );
    assert_eq!(failed.reason(), "internal_error");
    assert!(!String::from_utf8_lossy(&failed.body).contains("damaged"));

    let auth = format!("Bearer {alice}");
    let call = rpc(
        7,
        "tools/call",
        json!({"name": "post", "arguments": {"kind": "note", "thread": thread, "body": FAULT_BODY}}),
    );
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Authorization", auth.as_str()),
    ];
    let mcp = http(server.addr, "POST", "/mcp", &headers, Some(call.as_bytes()));
    let reply = mcp.json();
    assert_eq!(reply["id"], 7, "{reply}");
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert!(!reply.to_string().contains("damaged"), "{reply}");

    // The server serves on, and neither post was stored.
    let answered = server.post("/v1/messages", Some(&bob), &note(&thread, "7878."));
    assert_eq!(answered.status, 201);
    let view = server.get(&format!("/v1/threads/{thread}"), Some(&alice));
    assert_eq!(view.json()["thread"]["message_count"], 2, "{}", view.json());
    assert!(!view.json().to_string().contains(FAULT_BODY));
}
