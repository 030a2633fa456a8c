//! The MCP handler on the wire (SPEC §11.1): both revisions' handshakes, the tool
//! list, every tool, refusals, every JSON-RPC error code, notifications, and input
//! that must never make it panic.

mod mcp_support;

use mcp_support::{output_schema, request, send, send_text, tools, validate, Era};
use parley_forum::{Config, Forum, Right, TokenSpec, OPERATIONS, VERSION};
use proptest::prelude::*;
use serde_json::{json, Value};

fn forum_with(settings: Value) -> Forum {
    let mut settings = settings;
    settings["clock"] = json!("2026-11-30T12:00:00.000Z");
    settings["durable"] = json!(false);
    Forum::in_memory(Config::from_json(&settings).unwrap()).unwrap()
}

fn forum() -> Forum {
    forum_with(json!({ "limits": { "writes_per_minute": 0 } }))
}

fn call(era: Era, id: i64, name: &str, arguments: Value) -> Value {
    request(
        era,
        json!(id),
        "tools/call",
        json!({ "name": name, "arguments": arguments }),
    )
}

/// Calls a tool that must succeed, checks the result's shape, and returns it.
fn ok(forum: &Forum, token: Option<&str>, era: Era, name: &str, arguments: Value) -> Value {
    let r = send(forum, token, &call(era, 11, name, arguments));
    assert_eq!(r["id"], 11);
    let result = &r["result"];
    assert_eq!(result["isError"], false, "{name}: {r}");
    let structured = result["structuredContent"].clone();
    assert_eq!(result["content"][0]["type"], "text");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        text, structured,
        "{name}: the text content is the result as JSON"
    );
    let problems = validate(&output_schema(forum, name), &structured);
    assert!(
        problems.is_empty(),
        "{name}: result does not fit outputSchema: {problems:?}\n{structured}"
    );
    match era {
        Era::Modern => assert_eq!(result["resultType"], "complete"),
        Era::Legacy => assert!(result.get("resultType").is_none()),
    }
    assert!(
        result.get("ttlMs").is_none(),
        "tool results are not cacheable"
    );
    structured
}

/// Calls a tool that must be refused and returns the refusal object.
fn refused(forum: &Forum, token: Option<&str>, name: &str, arguments: Value) -> Value {
    let r = send(forum, token, &call(Era::Modern, 12, name, arguments));
    assert_eq!(r["id"], 12);
    let result = &r["result"];
    assert_eq!(result["isError"], true, "{name}: {r}");
    let error = result["structuredContent"]["error"].clone();
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        text,
        format!(
            "{}: {}",
            error["reason"].as_str().unwrap(),
            error["message"].as_str().unwrap()
        )
    );
    let problems = validate(&output_schema(forum, name), &result["structuredContent"]);
    assert!(
        problems.is_empty(),
        "{name}: refusal does not fit outputSchema: {problems:?}"
    );
    error
}

fn rpc_error(forum: &Forum, text: &str) -> Value {
    let r = send_text(forum, None, text);
    assert!(r.get("result").is_none(), "{text} should fail: {r}");
    r
}

#[test]
fn legacy_handshake() {
    let forum = forum();
    let r = send(
        &forum,
        None,
        &json!({ "jsonrpc": "2.0", "id": "init-1", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } }),
    );
    assert_eq!(r["id"], "init-1");
    let result = &r["result"];
    assert_eq!(result["protocolVersion"], "2025-11-25");
    assert_eq!(
        result["capabilities"],
        json!({ "tools": { "listChanged": false } })
    );
    assert_eq!(
        result["serverInfo"],
        json!({ "name": "parley", "version": VERSION })
    );
    assert!(result["instructions"]
        .as_str()
        .unwrap()
        .contains("get_manifest"));

    // An older client is offered the version this server speaks.
    let r = send(
        &forum,
        None,
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "initialize",
        "params": { "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } }),
    );
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");

    assert!(forum
        .mcp(
            None,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        )
        .is_none());
    let r = send(
        &forum,
        None,
        &json!({ "jsonrpc": "2.0", "id": 3, "method": "ping" }),
    );
    assert_eq!(r, json!({ "jsonrpc": "2.0", "id": 3, "result": {} }));
    let r = send(
        &forum,
        None,
        &request(Era::Legacy, json!(4), "tools/list", json!({})),
    );
    assert!(r["result"]["tools"].is_array());
    assert!(r["result"].get("resultType").is_none());

    // initialize without a version is malformed.
    let r = send(
        &forum,
        None,
        &json!({ "jsonrpc": "2.0", "id": 5, "method": "initialize", "params": {} }),
    );
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["id"], 5);
}

#[test]
fn modern_discovery_and_statelessness() {
    let forum = forum();
    let r = send(
        &forum,
        None,
        &request(Era::Modern, json!("d"), "server/discover", json!({})),
    );
    assert_eq!(r["id"], "d");
    let result = &r["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["supportedVersions"],
        json!(["2026-07-28", "2025-11-25"])
    );
    assert_eq!(
        result["capabilities"],
        json!({ "tools": { "listChanged": false } })
    );
    assert_eq!(result["serverInfo"]["name"], "parley");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["version"],
        VERSION
    );
    assert!(result["ttlMs"].as_u64().unwrap() > 0);
    assert!(["public", "private"].contains(&result["cacheScope"].as_str().unwrap()));

    // Discovery is version-independent: it also answers a probe without metadata.
    let r = send(
        &forum,
        None,
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover" }),
    );
    assert_eq!(r["result"]["supportedVersions"][0], "2026-07-28");

    // No handshake is needed: the first request may be any request.
    let r = send(
        &forum,
        None,
        &request(Era::Modern, json!(2), "tools/list", json!({})),
    );
    let result = &r["result"];
    assert_eq!(result["resultType"], "complete");
    assert!(result["ttlMs"].is_u64());
    assert_eq!(result["cacheScope"], "public");
    assert_eq!(result["tools"].as_array().unwrap().len(), OPERATIONS.len());

    let r = send(
        &forum,
        None,
        &request(Era::Modern, json!(3), "ping", json!({})),
    );
    assert_eq!(r["error"]["code"], -32601, "2026-07-28 has no ping");
    assert_eq!(r["id"], 3);
}

#[test]
fn tool_list_shape() {
    let forum = forum();
    for era in [Era::Modern, Era::Legacy] {
        let list = tools(&forum, era);
        let names: Vec<&str> = list.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, OPERATIONS.to_vec());
        for tool in &list {
            let name = tool["name"].as_str().unwrap();
            assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
            assert_eq!(tool["outputSchema"]["type"], "object", "{name}");
            assert_eq!(
                tool["annotations"]["readOnlyHint"],
                json!(![
                    "post",
                    "set_presence",
                    "lease",
                    "release",
                    "put_artifact",
                    "import_claim"
                ]
                .contains(&name)),
                "{name}"
            );
            assert!(tool["inputSchema"]["properties"].is_object(), "{name}");
            assert!(tool["description"].as_str().unwrap().len() > 100, "{name}");
            if [
                "set_presence",
                "get_presence",
                "lease",
                "release",
                "get_leases",
                "put_artifact",
                "get_artifact",
                "export_claim",
                "import_claim",
            ]
            .contains(&name)
            {
                let text = tool["description"].as_str().unwrap();
                assert!(text.len() < 1024, "{name}: short, for a model's context");
                if name == "lease" {
                    assert!(
                        text.contains("lease_conflict"),
                        "says what to do on a conflict"
                    );
                }
            }
        }
        // import_claim takes the bundle as an object, never its text.
        let import = list.iter().find(|t| t["name"] == "import_claim").unwrap();
        assert_eq!(
            import["inputSchema"]["properties"]["bundle"]["type"],
            "object"
        );
        assert_eq!(import["inputSchema"]["required"], json!(["bundle"]));
        let post = list.iter().find(|t| t["name"] == "post").unwrap();
        let schema = &post["inputSchema"];
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["required"], json!(["kind", "body"]));
        let manifest = forum.manifest();
        let mut kinds: Vec<Value> = manifest["acts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["kind"].clone())
            .collect();
        kinds.extend(
            manifest["profiles"]["dialectic"]["acts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["kind"].clone()),
        );
        assert_eq!(schema["properties"]["kind"]["enum"], Value::Array(kinds));
        for field in [
            "parley",
            "thread",
            "parent",
            "from",
            "body",
            "provenance",
            "to",
            "state",
            "claim",
            "evidence",
            "supersedes",
            "valid_until",
        ] {
            assert!(
                schema["properties"][field].is_object(),
                "post lacks {field}"
            );
        }
    }

    let plain = forum_with(json!({ "profiles": [] }));
    let names: Vec<String> = tools(&plain, Era::Modern)
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        OPERATIONS
            .iter()
            .filter(|o| {
                ![
                    "get_claim",
                    "set_presence",
                    "get_presence",
                    "lease",
                    "release",
                    "get_leases",
                    "put_artifact",
                    "get_artifact",
                    "export_claim",
                    "import_claim",
                ]
                .contains(o)
            })
            .map(|o| o.to_string())
            .collect::<Vec<_>>(),
        "no profile: neither get_claim nor the coordination and provenance tools"
    );
    let r = send(
        &plain,
        None,
        &call(Era::Modern, 9, "get_claim", json!({ "claim": "cl_1" })),
    );
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["id"], 9);
}

#[test]
fn every_tool_works_through_mcp() {
    let forum = forum();
    let alice = forum
        .create_token(&TokenSpec::llm("alice", &[Right::Read, Right::Write]))
        .unwrap();
    let bob = forum
        .create_token(&TokenSpec::llm(
            "bob",
            &[Right::Read, Right::Write, Right::Verify],
        ))
        .unwrap();

    for era in [Era::Modern, Era::Legacy] {
        let manifest = ok(&forum, None, era, "get_manifest", json!({}));
        assert_eq!(manifest, forum.manifest());
    }
    let me = ok(&forum, Some(&alice), Era::Modern, "whoami", json!({}));
    assert_eq!(me["identity"], "ainotes:alice");

    let asked = ok(
        &forum,
        Some(&alice),
        Era::Modern,
        "post",
        json!({ "kind": "ask", "body": "Which port?" }),
    );
    let thread = asked["thread"]["id"].as_str().unwrap().to_string();
    let answered = ok(
        &forum,
        Some(&bob),
        Era::Legacy,
        "post",
        json!({ "kind": "answer", "thread": thread, "body": "7878" }),
    );
    assert_eq!(answered["thread"]["state"], "answered");
    assert!(answered.get("event").is_some() || answered.get("events").is_some());

    let claimed = ok(
        &forum,
        Some(&alice),
        Era::Modern,
        "post",
        json!({
        "kind": "assert", "body": "The dev server listens on 7878.",
        "evidence": [{ "kind": "url", "ref": "https://example.com/config" }] }),
    );
    let claim = claimed["claim"]["id"].as_str().unwrap().to_string();
    ok(
        &forum,
        Some(&bob),
        Era::Modern,
        "post",
        json!({
        "kind": "attest", "claim": claim, "body": "Confirmed in the config.",
        "evidence": [{ "kind": "commit", "ref": "abcdef1" }] }),
    );

    let view = ok(
        &forum,
        Some(&alice),
        Era::Modern,
        "get_thread",
        json!({ "thread": thread }),
    );
    assert_eq!(view["messages"][0]["replies"].as_array().unwrap().len(), 1);
    let threads = ok(&forum, Some(&alice), Era::Modern, "list_threads", json!({}));
    assert_eq!(threads["items"].as_array().unwrap().len(), 2);
    let inbox = ok(&forum, Some(&alice), Era::Modern, "get_inbox", json!({}));
    assert_eq!(inbox["items"][0]["thread"]["id"], json!(thread));
    let events = ok(
        &forum,
        Some(&alice),
        Era::Legacy,
        "get_events",
        json!({ "limit": 10 }),
    );
    assert!(!events["items"].as_array().unwrap().is_empty());
    let got = ok(
        &forum,
        Some(&bob),
        Era::Modern,
        "get_claim",
        json!({ "claim": claim }),
    );
    assert_eq!(got["status"], "supported");

    // The same operations through the generic call give the same results.
    assert_eq!(
        forum
            .call(Some(&alice), "get_thread", &json!({ "thread": thread }))
            .unwrap(),
        view
    );
    assert_eq!(
        forum
            .call(Some(&bob), "get_claim", &json!({ "claim": claim }))
            .unwrap(),
        got
    );

    // Arguments may be omitted for operations without required ones.
    let r = send(
        &forum,
        Some(&alice),
        &request(
            Era::Modern,
            json!(1),
            "tools/call",
            json!({ "name": "whoami" }),
        ),
    );
    assert_eq!(
        r["result"]["structuredContent"]["identity"],
        "ainotes:alice"
    );
}

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
