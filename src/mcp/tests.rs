//! Unit tests of the dispatcher; the wire-level tests live in `tests/mcp.rs`.

use serde_json::{json, Value};

use crate::{Config, Forum, Right, TokenSpec};

fn forum() -> Forum {
    Forum::in_memory(
        Config::from_json(&json!({"clock": "2026-11-30T12:00:00.000Z", "durable": false})).unwrap(),
    )
    .unwrap()
}

fn ask(forum: &Forum, token: Option<&str>, request: Value) -> Value {
    serde_json::from_str(&forum.mcp(token, &request.to_string()).expect("a response")).unwrap()
}

#[test]
fn oversized_messages_keep_their_id_or_stay_silent() {
    let forum = Forum::in_memory(
        Config::from_json(&json!({"limits": {"request_max_bytes": 200}})).unwrap(),
    )
    .unwrap();
    let pad = "x".repeat(300);
    let r = ask(
        &forum,
        None,
        json!({"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"pad": pad}}),
    );
    assert_eq!(r["id"], 5);
    assert_eq!(r["error"]["code"], -32600);
    assert_eq!(r["error"]["data"]["reason"], "payload_too_large");
    assert_eq!(r["error"]["data"]["status"], 413);
    assert_eq!(r["error"]["data"]["limit"], "request_max_bytes");
    let note =
        json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {"pad": pad}});
    assert!(forum.mcp(None, &note.to_string()).is_none());
    let r = ask(
        &forum,
        None,
        json!({"jsonrpc": "2.0", "id": null, "method": "ping", "params": {"pad": pad}}),
    );
    assert!(r["id"].is_null());
    assert_eq!(r["error"]["data"]["reason"], "payload_too_large");
    let garbage: String = format!("{{{}", "\"a\":[".repeat(100));
    let garbage = garbage.repeat(3);
    let r: Value = serde_json::from_str(&forum.mcp(None, &garbage).unwrap()).unwrap();
    assert!(r["id"].is_null());
    assert_eq!(r["error"]["data"]["status"], 413);
}

#[test]
fn bad_tool_names_are_invalid_params() {
    let forum = forum();
    let token = forum
        .create_token(&TokenSpec::llm("alice", &[Right::Read]))
        .unwrap();
    let r = ask(
        &forum,
        Some(&token),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "fly"}}),
    );
    assert_eq!(r["error"]["code"], -32602);
    let r = ask(
        &forum,
        Some(&token),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 3}}),
    );
    assert_eq!(r["error"]["code"], -32602);
    let r = ask(
        &forum,
        Some(&token),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}),
    );
    assert_eq!(r["error"]["code"], -32602);
}

#[test]
fn legacy_results_have_no_modern_fields() {
    let forum = forum();
    let r = ask(
        &forum,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    assert!(r["result"].get("resultType").is_none());
    assert!(r["result"].get("ttlMs").is_none());
    let r = ask(
        &forum,
        None,
        json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
    );
    assert_eq!(r["result"], json!({}));
}
