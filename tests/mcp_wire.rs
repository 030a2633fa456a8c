//! The MCP handler's failures on the wire (SPEC §11.1): refusals as tool errors,
//! every JSON-RPC error code, oversized requests, notifications and responses
//! that get no answer, and input that must never make it panic.

mod mcp_support;

use mcp_support::calls::{call, forum, forum_with, ok, refused, rpc_error};
use mcp_support::{send, Era};
use parley_forum::{Right, TokenSpec, OPERATIONS};
use proptest::prelude::*;
use serde_json::{json, Value};

#[test]
fn refusals_are_tool_errors() {
    let forum = forum();
    let alice = forum
        .create_token(&TokenSpec::llm("alice", &[Right::Read, Right::Write]))
        .unwrap();
    let reader = forum
        .create_token(&TokenSpec::llm("rita", &[Right::Read]))
        .unwrap();

    let e = refused(&forum, None, "whoami", json!({}));
    assert_eq!(
        (e["reason"].as_str(), e["status"].as_u64()),
        (Some("token_missing"), Some(401))
    );
    let e = refused(&forum, Some("pt_not_a_token"), "get_inbox", json!({}));
    assert_eq!(e["reason"], "token_invalid");

    let asked = ok(
        &forum,
        Some(&alice),
        Era::Modern,
        "post",
        json!({ "kind": "ask", "body": "Which port?" }),
    );
    let root = asked["message"]["id"].clone();
    let e = refused(
        &forum,
        Some(&alice),
        "post",
        json!({ "kind": "note", "parent": root, "body": "Still open." }),
    );
    assert_eq!(
        (e["reason"].as_str(), e["status"].as_u64()),
        (Some("self_reply"), Some(409))
    );
    let e = refused(
        &forum,
        Some(&reader),
        "post",
        json!({ "kind": "ask", "body": "May I?" }),
    );
    assert_eq!(e["reason"], "token_right_missing");
    assert_eq!(e["right"], "write");
    let e = refused(
        &forum,
        Some(&alice),
        "post",
        json!({ "kind": "ask", "body": "x", "colour": "red" }),
    );
    assert_eq!(e["reason"], "invalid_body");
    let e = refused(
        &forum,
        Some(&alice),
        "post",
        json!({ "kind": "gossip", "body": "x" }),
    );
    assert_eq!(e["reason"], "unknown_kind");
    let e = refused(
        &forum,
        Some(&alice),
        "get_thread",
        json!({ "thread": "th_999" }),
    );
    assert_eq!(
        (e["reason"].as_str(), e["status"].as_u64()),
        (Some("thread_not_found"), Some(404))
    );
    // Arguments that are not an object are judged by the engine, as on every transport.
    let e = refused(&forum, Some(&alice), "post", json!("ask"));
    assert_eq!(e["reason"], "invalid_body");
    let e = refused(&forum, Some(&alice), "list_threads", json!([1]));
    assert_eq!(e["reason"], "invalid_argument");
}

#[test]
fn every_json_rpc_error_code_echoes_the_id() {
    let forum = forum();
    let cases: Vec<(String, i64, Value)> = vec![
        ("{\"jsonrpc\":\"2.0\",\"id\":1,".into(), -32700, Value::Null),
        ("not json".into(), -32700, Value::Null),
        (r#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#.into(), -32600, json!("a")),
        (r#"{"jsonrpc":"2.0","id":"b","method":7}"#.into(), -32600, json!("b")),
        (r#"{"jsonrpc":"2.0","id":"b2"}"#.into(), -32600, json!("b2")),
        (r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#.into(), -32600, Value::Null),
        (r#""just a string""#.into(), -32600, Value::Null),
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#.into(), -32600, Value::Null),
        (r#"{"jsonrpc":"2.0","id":"c","method":"resources/list"}"#.into(), -32601, json!("c")),
        (r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fly"}}"#.into(), -32602, json!(4)),
        (r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":[1]}"#.into(), -32602, json!(5)),
        (r#"{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"cursor":"page2"}}"#.into(), -32602, json!(6)),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#.into(),
            -32602,
            json!(7),
        ),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}"#.into(),
            -32022,
            json!(8),
        ),
    ];
    for (text, code, id) in cases {
        let r = rpc_error(&forum, &text);
        assert_eq!(r["error"]["code"], code, "{text}: {r}");
        assert_eq!(r["id"], id, "{text}: {r}");
        assert!(r["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
    }
    let r = rpc_error(
        &forum,
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"whoami","_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
    );
    assert_eq!(
        r["error"]["data"],
        json!({ "supported": ["2026-07-28", "2025-11-25"], "requested": "2099-01-01" })
    );
}

#[test]
fn oversized_requests_carry_payload_too_large() {
    let forum = forum_with(json!({ "limits": { "request_max_bytes": 1024 } }));
    let alice = forum
        .create_token(&TokenSpec::llm("alice", &[Right::Read, Right::Write]))
        .unwrap();
    let big = call(
        Era::Modern,
        77,
        "post",
        json!({ "kind": "ask", "body": "y".repeat(2000) }),
    );
    let r = send(&forum, Some(&alice), &big);
    assert_eq!(r["id"], 77);
    assert_eq!(r["error"]["code"], -32600);
    assert_eq!(r["error"]["data"]["reason"], "payload_too_large");
    assert_eq!(r["error"]["data"]["status"], 413);
    // Nothing was written.
    let threads = ok(&forum, Some(&alice), Era::Modern, "list_threads", json!({}));
    assert!(threads["items"].as_array().unwrap().is_empty());
}

#[test]
fn notifications_and_responses_get_no_answer() {
    let forum = forum();
    let token = forum
        .create_token(&TokenSpec::llm("alice", &[Right::Read, Right::Write]))
        .unwrap();
    for text in [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        r#"{"jsonrpc":"2.0","method":"no/such/notification"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}"#,
    ] {
        assert!(forum.mcp(Some(&token), text).is_none(), "{text}");
    }
    // A tools/call without an id is a notification: it gets no answer, so it is not run.
    let silent = json!({ "jsonrpc": "2.0", "method": "tools/call", "params": { "name": "post", "arguments": { "kind": "ask", "body": "Heard?" } } });
    assert!(forum.mcp(Some(&token), &silent.to_string()).is_none());
    let threads = forum
        .call(Some(&token), "list_threads", &json!({}))
        .unwrap();
    assert!(threads["items"].as_array().unwrap().is_empty());
}

#[test]
fn every_truncation_of_a_frame_is_a_parse_error() {
    let forum = forum();
    let frame = call(
        Era::Modern,
        1,
        "post",
        json!({ "kind": "ask", "body": "Ünïcödé — does it cut cleanly?" }),
    )
    .to_string();
    for cut in (0..frame.len()).filter(|i| frame.is_char_boundary(*i)) {
        let r = rpc_error(&forum, &frame[..cut]);
        assert_eq!(r["error"]["code"], -32700, "cut at {cut}");
        assert!(r["id"].is_null());
    }
}

#[test]
fn hostile_shapes_do_not_panic() {
    let forum = forum();
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"post","arguments":{}{}}}}}"#,
        "{\"a\":".repeat(5_000),
        "}".repeat(5_000)
    );
    assert_eq!(rpc_error(&forum, &deep)["error"]["code"], -32700);
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1{},"method":"ping"}}"#,
        "9".repeat(500)
    );
    assert!(forum.mcp(None, &huge).is_some());
    for args in [
        json!(null),
        json!(1e300),
        json!(u64::MAX),
        json!({"kind": ["ask"], "body": {"a": 1}}),
        json!({"thread": -1, "kind": "note", "body": "x"}),
    ] {
        let r = send(&forum, None, &call(Era::Modern, 2, "post", args.clone()));
        assert_eq!(r["result"]["isError"], true, "{args}");
    }
    let r = send(
        &forum,
        None,
        &json!({"jsonrpc": "2.0", "id": i64::MIN, "method": "ping"}),
    );
    assert_eq!(r["id"], i64::MIN);
    let r = send(
        &forum,
        None,
        &json!({"jsonrpc": "2.0", "id": u64::MAX, "method": "ping"}),
    );
    assert_eq!(r["id"], u64::MAX);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_gets_a_well_formed_answer_or_none(text in ".{0,200}") {
        let forum = forum();
        if let Some(response) = forum.mcp(None, &text) {
            let v: Value = serde_json::from_str(&response).unwrap();
            prop_assert_eq!(&v["jsonrpc"], "2.0");
        }
    }

    #[test]
    fn arbitrary_arguments_are_answered(
        name in prop::sample::select(OPERATIONS.to_vec()),
        key in "[a-z_]{1,12}",
        value in prop_oneof![Just(json!(null)), any::<i64>().prop_map(|n| json!(n)), ".{0,40}".prop_map(|s| json!(s)), Just(json!([])), Just(json!({}))],
    ) {
        let forum = forum();
        let token = forum.create_token(&TokenSpec::llm("alice", &[Right::Read, Right::Write])).unwrap();
        let r = send(&forum, Some(&token), &call(Era::Modern, 1, name, json!({ key: value, "kind": "ask", "body": "b" })));
        prop_assert!(r["result"]["isError"].is_boolean());
    }
}
