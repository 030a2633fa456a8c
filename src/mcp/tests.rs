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

/// The reply says what its text says: a transport never reads it back.
fn agrees(reply: &super::McpReply) {
    let text: Value = serde_json::from_str(&reply.text).unwrap();
    assert_eq!(text["id"], reply.id);
    assert_eq!(text["error"]["code"].as_i64(), reply.error_code);
    match reply.tool {
        Some(tool) => {
            assert_eq!(text["result"]["isError"], tool.is_error);
            let items = &text["result"]["structuredContent"]["items"];
            assert_eq!(
                items.as_array().is_some_and(|a| !a.is_empty()),
                tool.has_items
            );
        }
        None => assert!(text["result"]["isError"].is_null()),
    }
}

#[test]
fn a_reply_carries_its_code_reason_and_tool_outcome_as_its_text_does() {
    let forum = forum();
    let alice = forum
        .create_token(&TokenSpec::llm("alice", &[Right::Read, Right::Write]))
        .unwrap();
    let call = |name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
        .to_string()
    };
    let empty = forum
        .mcp_reply(Some(&alice), &call("get_inbox", json!({})))
        .unwrap();
    agrees(&empty);
    assert_eq!(
        (
            empty.tool.map(|t| (t.is_error, t.has_items)),
            empty.reason.as_deref()
        ),
        (Some((false, false)), None)
    );
    let refused = forum
        .mcp_reply(
            Some(&alice),
            &call("post", json!({"kind": "shout", "body": "x"})),
        )
        .unwrap();
    agrees(&refused);
    assert_eq!(refused.reason.as_deref(), Some("unknown_kind"));
    assert!(refused.tool.unwrap().is_error);
    let unknown = forum
        .mcp_reply(
            Some(&alice),
            &json!({"jsonrpc": "2.0", "id": "u", "method": "nope"}).to_string(),
        )
        .unwrap();
    agrees(&unknown);
    assert_eq!(unknown.error_code, Some(-32601));
    assert_eq!(unknown.reason.as_deref(), Some("jsonrpc -32601"));
    let garbage = forum.mcp_reply(None, "{not json").unwrap();
    agrees(&garbage);
    assert!(garbage.id.is_null());
    assert_eq!(garbage.error_code, Some(-32700));
}

#[test]
fn a_parsed_message_is_answered_as_its_text_is_and_held_to_the_same_size() {
    let forum = Forum::in_memory(
        Config::from_json(&json!({"limits": {"request_max_bytes": 200}})).unwrap(),
    )
    .unwrap();
    let ping = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
    let text = ping.to_string();
    assert_eq!(
        forum.mcp_value(None, ping.clone(), text.len()),
        forum.mcp_reply(None, &text)
    );
    let big = forum.mcp_value(None, ping, 201).unwrap();
    agrees(&big);
    assert_eq!(big.id, 7);
    assert_eq!(big.reason.as_deref(), Some("payload_too_large"));
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert!(
        forum.mcp_value(None, note, 201).is_none(),
        "an oversized notification"
    );
    assert!(forum
        .mcp_value(None, json!([1, 2]), 201)
        .unwrap()
        .id
        .is_null());
}
