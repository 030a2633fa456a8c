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

/// A `tools/call` of `post` in two steps ([`Forum::mcp_post_call`], a post, then
/// [`super::McpAnswer::reply`]) gets the reply [`Forum::mcp_value`] gives, on a twin
/// forum in the same state, whether it is posted, answered without posting, or
/// handed back for `mcp_value`.
#[test]
fn a_post_call_in_two_steps_is_answered_as_mcp_value_answers_it() {
    use super::{McpCall, McpPost};

    let twin = || {
        let settings = json!({"clock": "2026-11-30T12:00:00.000Z", "durable": false,
                              "limits": {"request_max_bytes": 400, "writes_per_minute": 0}});
        let forum = Forum::in_memory(Config::from_json(&settings).unwrap()).unwrap();
        let alice = forum
            .create_token(&TokenSpec::llm("alice", &[Right::Read, Right::Write]))
            .unwrap();
        (forum, alice)
    };
    let ((direct, alice_d), (split, alice_s)) = (twin(), twin());
    let post = |id: Value, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let ask = |body: &str| json!({"name": "post", "arguments": {"kind": "ask", "body": body}});
    let modern = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {}});
    let mut modern_ask = ask("Modern?");
    modern_ask["_meta"] = modern;
    let mut future = ask("Future?");
    future["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01"});
    let pad = "x".repeat(500);
    #[rustfmt::skip]
    let cases: Vec<(&str, Value, &str)> = vec![
        ("a post", post(json!(1), ask("Which port?")), "post"),
        ("a modern post", post(json!(2), modern_ask), "post"),
        ("a refusal", post(json!(3), json!({"name": "post", "arguments": {"kind": "ask"}})), "post"),
        ("no arguments", post(json!(4), json!({"name": "post"})), "post"),
        ("too large", post(json!(5), ask(&pad)), "answered"),
        ("too large, no id", post(Value::Null, ask(&pad)), "answered"),
        ("an id that is null", post(Value::Null, ask("Null?")), "answered"),
        ("not JSON-RPC 2.0", json!({"jsonrpc": "1.0", "id": 6, "method": "tools/call", "params": ask("Old?")}), "answered"),
        ("an unsupported version", post(json!(7), future), "answered"),
        ("a notification", json!({"jsonrpc": "2.0", "method": "tools/call", "params": ask("Unheard?")}), "answered"),
        ("too large, a notification", json!({"jsonrpc": "2.0", "method": "tools/call", "params": ask(&pad)}), "answered"),
        ("another tool", post(json!(8), json!({"name": "whoami"})), "other"),
        ("a name that is not a string", post(json!(9), json!({"name": 5})), "other"),
        ("params that are not an object", json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": [1]}), "other"),
        ("a batch", json!([post(json!(11), ask("Batched?"))]), "other"),
    ];
    for (what, request, kind) in cases {
        let size = request.to_string().len();
        let expected = direct.mcp_value(Some(&alice_d), request.clone(), size);
        let (took, got) = match split.mcp_post_call(request.clone(), size) {
            McpCall::Post(McpPost { envelope, answer }) => {
                let outcome = split.call(Some(&alice_s), "post", &envelope);
                ("post", Some(answer.reply(outcome)))
            }
            McpCall::Answered(reply) => ("answered", reply),
            McpCall::Other(back) => {
                assert_eq!(back, request, "{what}: handed back as it came");
                ("other", split.mcp_value(Some(&alice_s), back, size))
            }
        };
        assert_eq!(took, kind, "{what}");
        assert_eq!(got, expected, "{what}");
        if let Some(reply) = &got {
            agrees(reply);
        }
    }
    let threads = |forum: &Forum, token: &str| {
        forum.call(Some(token), "list_threads", &json!({})).unwrap()["items"].take()
    };
    let posted = threads(&split, &alice_s);
    assert_eq!(posted, threads(&direct, &alice_d));
    assert_eq!(posted.as_array().unwrap().len(), 2, "{posted}");
}

/// A post's failure other than a refusal is a JSON-RPC internal error, as the
/// handler answers a failed generic call.
#[test]
fn a_post_call_that_failed_is_an_internal_error() {
    use super::{McpCall, McpPost};

    let forum = forum();
    let request = json!({"jsonrpc": "2.0", "id": "f", "method": "tools/call",
                         "params": {"name": "post", "arguments": {"kind": "ask", "body": "Lost?"}}});
    let McpCall::Post(McpPost { answer, .. }) = forum.mcp_post_call(request, 100) else {
        panic!("a post call");
    };
    let reply = answer.reply(Err(crate::Error::storage("the disk went away".into())));
    agrees(&reply);
    assert_eq!(reply.error_code, Some(-32603));
    assert_eq!(reply.reason.as_deref(), Some("jsonrpc -32603"));
    let text: Value = serde_json::from_str(&reply.text).unwrap();
    assert_eq!(
        text["error"]["message"],
        "Internal error: storage error: the disk went away"
    );
}
