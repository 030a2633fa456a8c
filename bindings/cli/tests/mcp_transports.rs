//! MCP over Streamable HTTP (`POST /mcp`) and over stdio, through the built binary.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{http, rpc, Server, TempForum};
use serde_json::{json, Value};

#[test]
fn streamable_http_answers_json_and_refusals_are_tool_errors() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let server = Server::start(&forum.db, None, &[]);
    let auth = format!("Bearer {alice}");
    let post = |body: &str, headers: &[(&str, &str)]| {
        let mut all = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        all.extend_from_slice(headers);
        http(server.addr, "POST", "/mcp", &all, Some(body.as_bytes()))
    };

    let init = post(
        &rpc(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        ),
        &[],
    );
    assert_eq!(init.status, 200);
    assert_eq!(init.header("content-type"), Some("application/json"));
    assert_eq!(init.json()["id"], 1);
    assert!(
        init.header("mcp-session-id").is_none(),
        "stateless: no session"
    );

    let note = post(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        &[],
    );
    assert_eq!(note.status, 202);
    assert!(note.body.is_empty());

    let tools = post(&rpc(2, "tools/list", json!({})), &[]);
    let names: Vec<String> = tools.json()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    // Every operation of the engine, in its fixed order (the dialectic profile is on
    // by default, so `get_claim` is among them).
    assert_eq!(names, parley_forum::OPERATIONS);

    let me = post(
        &rpc(3, "tools/call", json!({"name": "whoami", "arguments": {}})),
        &[("Authorization", &auth)],
    );
    assert_eq!(
        me.json()["result"]["structuredContent"]["identity"],
        "ainotes:alice"
    );

    // No token: the refusal comes back inside a normal result.
    let anon = post(
        &rpc(4, "tools/call", json!({"name": "whoami", "arguments": {}})),
        &[],
    );
    assert_eq!(anon.status, 200);
    assert_eq!(anon.json()["result"]["isError"], true);
    assert_eq!(
        anon.json()["result"]["structuredContent"]["error"]["reason"],
        "token_missing"
    );

    let malformed = post(
        &rpc(5, "tools/list", json!({})),
        &[("Authorization", "Token abc")],
    );
    assert_eq!(malformed.status, 401);
    assert_eq!(malformed.header("www-authenticate"), Some("Bearer"));
    assert_eq!(malformed.json()["error"]["data"]["reason"], "token_invalid");

    let parse = post("{oops", &[]);
    assert_eq!(parse.status, 400);
    assert_eq!(parse.json()["error"]["code"], -32700);

    for method in ["GET", "DELETE"] {
        let resp = http(server.addr, method, "/mcp", &[], None);
        assert_eq!(resp.status, 405, "{method}");
        assert_eq!(resp.header("allow"), Some("POST"));
    }

    let evil = post(
        &rpc(6, "tools/list", json!({})),
        &[("Origin", "http://evil.example")],
    );
    assert_eq!(evil.status, 403);
    let local = post(
        &rpc(7, "tools/list", json!({})),
        &[("Origin", "http://127.0.0.1:3000")],
    );
    assert_eq!(local.status, 200);
}

#[test]
fn stdio_carries_one_message_per_line_and_exits_at_eof() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let mut child = forum
        .command(&[
            "--settings",
            r#"{"limits":{"request_max_bytes":1024}}"#,
            "serve",
            "--stdio",
        ])
        .env("PARLEY_TOKEN", &alice)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = [
        rpc(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        ),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
        String::new(),
        rpc(
            2,
            "tools/call",
            json!({"name": "post", "arguments": {"kind": "ask", "body": "Over stdio?"}}),
        ),
        rpc(3, "tools/call", json!({"name": "whoami", "arguments": {}})),
        format!(
            r#"{{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{{"pad":"{}"}}}}"#,
            "p".repeat(2000)
        ),
        rpc(
            5,
            "tools/call",
            json!({"name": "post", "arguments": {"kind": "shout", "body": "x"}}),
        ),
    ];
    for line in &lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "stdio server did not exit at EOF"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let replies: Vec<Value> = BufReader::new(out.as_bytes())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).expect("stdout carries only JSON-RPC messages"))
        .collect();
    assert_eq!(
        replies.len(),
        5,
        "no reply to the notification or the empty line: {out}"
    );
    assert_eq!(replies[0]["id"], 1);
    assert_eq!(
        replies[1]["result"]["structuredContent"]["thread"]["state"],
        "open"
    );
    assert_eq!(
        replies[2]["result"]["structuredContent"]["identity"],
        "ainotes:alice"
    );
    assert_eq!(replies[3]["error"]["data"]["reason"], "payload_too_large");
    assert_eq!(replies[4]["result"]["isError"], true);
    assert_eq!(
        replies[4]["result"]["structuredContent"]["error"]["reason"],
        "unknown_kind"
    );
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.contains("MCP over stdio"), "logs go to stderr: {err}");
}

/// Runs a stdio server for `token` on `input` until it exits at its end; returns
/// its stdout lines as JSON.
fn stdio_session(forum: &TempForum, token: &str, input: &[u8]) -> Vec<Value> {
    let mut child = forum
        .command(&["serve", "--stdio"])
        .env("PARLEY_TOKEN", token)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    drop(stdin);
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(child.wait().unwrap().success());
    out.lines()
        .map(|l| serde_json::from_str(l).expect("stdout carries only JSON-RPC messages"))
        .collect()
}

#[test]
fn stdio_refuses_lines_that_are_not_utf8_and_stores_nothing() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let mut input = Vec::new();
    // A post whose body holds a byte that is not UTF-8, then one that is fine.
    input.extend_from_slice(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"post","arguments":{"kind":"ask","body":"caf"#,
    );
    input.push(0xC3);
    input.extend_from_slice(b"\"}}}\n");
    input.extend_from_slice(
        rpc(
            2,
            "tools/call",
            json!({"name": "get_messages", "arguments": {}}),
        )
        .as_bytes(),
    );
    input.push(b'\n');
    let replies = stdio_session(&forum, &alice, &input);
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert_eq!(replies[0]["error"]["code"], -32700, "{replies:?}");
    assert!(replies[0]["id"].is_null());
    assert!(replies[0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("UTF-8"));
    assert_eq!(replies[1]["id"], 2);
    let stored = &replies[1]["result"]["structuredContent"]["items"];
    assert_eq!(
        stored.as_array().unwrap().len(),
        0,
        "nothing was posted: {stored}"
    );
}
