//! A panic inside the engine, through the server's boundaries, on the real binary:
//! REST answers 500 `internal_error`, MCP over HTTP and over stdio answer a
//! JSON-RPC internal error (-32603); none of them says the file is damaged, the
//! post is not stored, and the server goes on serving. The panic comes from the
//! engine's `fault-injection` feature, which only test builds carry (this
//! crate's dev-dependency turns it on for the binary the tests spawn).

mod common;

use std::io::{Read, Write};
use std::process::Stdio;

use common::{http, rpc, Server, TempForum};
use parley_forum::fault::FAULT_BODY;
use serde_json::{json, Value};

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

#[test]
fn mcp_over_stdio_answers_a_panic_as_an_internal_error_and_serves_on() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let mut child = forum
        .command(&["serve", "--stdio"])
        .env("PARLEY_TOKEN", &alice)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let post = |id: u64, body: &str| {
        rpc(
            id,
            "tools/call",
            json!({"name": "post", "arguments": {"kind": "ask", "body": body}}),
        )
    };
    let mut stdin = child.stdin.take().unwrap();
    for line in [post(1, FAULT_BODY), post(2, "Still there?")] {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(child.wait().unwrap().success());
    let replies: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(replies.len(), 2, "{out}");
    assert_eq!(replies[0]["id"], 1);
    assert_eq!(replies[0]["error"]["code"], -32603, "{}", replies[0]);
    let message = replies[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("panicked"), "{message}");
    assert!(!message.contains("damaged"), "{message}");
    assert_eq!(replies[1]["id"], 2);
    assert_eq!(replies[1]["result"]["isError"], false, "{}", replies[1]);
}
