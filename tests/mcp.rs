//! The MCP handler on the wire (SPEC §11.1): both revisions' handshakes and
//! discovery, the tool list, and every tool. Refusals, JSON-RPC errors and
//! hostile input are in `mcp_wire.rs`.

mod mcp_support;

use mcp_support::calls::{call, forum, forum_with, ok};
use mcp_support::{request, send, tools, Era};
use parley_forum::{Right, TokenSpec, OPERATIONS, VERSION};
use serde_json::{json, Value};

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
