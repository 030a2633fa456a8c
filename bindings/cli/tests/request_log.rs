//! The request log of `parley serve --http`: one line per request naming the method,
//! the path, the tool, the caller's identity (never the token), the status, the
//! reason of a refusal and the duration; `--log-format json` and `RUST_LOG`.

mod common;
// The web client of the server's own tests, which names its harness `support`.
use common as support;
#[path = "../../../server/tests/web_client/mod.rs"]
mod web_client;

use common::{Server, TempForum};
use serde_json::{json, Value};

/// The request events among the server's stderr lines, parsed.
fn requests(lines: &[String]) -> Vec<Value> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["target"] == "parley::request")
        .collect()
}

fn find<'a>(events: &'a [Value], path: &str, status: u64) -> &'a Value {
    events
        .iter()
        .find(|e| e["path"] == path && e["status"] == status)
        .unwrap_or_else(|| panic!("no {status} for {path} in {events:#?}"))
}

#[test]
fn every_request_is_logged_with_its_caller_and_outcome_never_its_token() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let ann = forum.token("ann", &["--human"]);
    let server = Server::start(&forum.db, None, &["--log-format", "json"]);

    let ok = server.post(
        "/v1/messages",
        Some(&alice),
        r#"{"kind":"ask","body":"Port?"}"#,
    );
    assert_eq!(ok.status, 201);
    let refused = server.post(
        "/v1/messages",
        Some(&alice),
        r#"{"kind":"answer","thread":"th_404","body":"?"}"#,
    );
    assert_eq!(refused.status, 404);
    assert_eq!(server.get("/v1/whoami", Some("pt_bogus")).status, 401);
    assert_eq!(server.get("/v1/whoami", None).status, 401);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "post", "arguments": {"kind": "note", "thread": "th_1", "body": "mine"}}});
    let mcp = server.post("/mcp", Some(&alice), &call.to_string());
    assert_eq!(mcp.status, 200);
    let listed = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "get_thread", "arguments": {"thread": "th_1"}}});
    assert_eq!(
        server
            .post("/mcp", Some(&alice), &listed.to_string())
            .status,
        200
    );
    assert_eq!(server.get("/no/such/route?secret=1", None).status, 404);
    // A person in the web view is named by the session's token, not by a header.
    let mut browser = web_client::Browser::signed_in(&server, &ann);
    assert_eq!(browser.get("/threads/th_1").status, 200);
    assert_eq!(browser.get("/threads/th_999").status, 404);
    // A refused form goes back to its page (303); the log keeps why.
    let csrf = browser.csrf();
    let confirm = browser.post(
        "/threads/th_1/act",
        &[("csrf", &csrf), ("action", "confirm")],
    );
    assert_eq!(confirm.status, 303);
    let session = browser.session().map(str::to_string);
    drop(browser);
    let lines = server.terminate();
    let events = requests(&lines);

    let posted = find(&events, "/v1/messages", 201);
    assert_eq!(posted["method"], "POST");
    assert_eq!(posted["identity"], "ainotes:alice");
    assert_eq!(posted["reason"], "-");
    assert!(posted["ms"].as_f64().unwrap() >= 0.0, "{posted}");
    assert_eq!(posted["level"], "INFO");
    let refused = find(&events, "/v1/messages", 404);
    assert_eq!(refused["reason"], "thread_not_found");
    assert_eq!(refused["identity"], "ainotes:alice");
    let bogus = find(&events, "/v1/whoami", 401);
    assert_eq!(bogus["identity"], "-");
    assert_eq!(bogus["reason"], "token_invalid");
    assert!(events
        .iter()
        .any(|e| e["path"] == "/v1/whoami" && e["reason"] == "token_missing"));
    // MCP: the tool is named, and a refused call's reason is found inside its result.
    let tools: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["path"] == "/mcp")
        .map(|e| (e["tool"].as_str().unwrap(), e["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(tools, [("post", "self_reply"), ("get_thread", "-")]);
    // The path is logged without its query.
    assert_eq!(find(&events, "/no/such/route", 404)["reason"], "not_found");
    let page = find(&events, "/threads/th_1", 200);
    assert_eq!(page["identity"], "human:ann");
    assert_eq!(
        find(&events, "/threads/th_999", 404)["reason"],
        "thread_not_found"
    );
    let confirm = find(&events, "/threads/th_1/act", 303);
    assert_eq!(confirm["reason"], "invalid_transition");
    assert_eq!(confirm["identity"], "human:ann");

    let all = lines.join("\n");
    for secret in [&alice, &ann] {
        assert!(!all.contains(secret.as_str()), "a token is in the log");
    }
    assert!(!all.contains("secret=1"), "a query string is in the log");
    let session = session.expect("a session cookie");
    assert!(!all.contains(&session), "a session id is in the log");
}

#[test]
fn rust_log_sets_the_level_and_text_is_the_default_format() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let server = Server::start(&forum.db, None, &[]);
    assert_eq!(server.get("/v1/whoami", Some(&alice)).status, 200);
    let lines = server.terminate();
    let line = lines
        .iter()
        .find(|l| l.contains("parley::request"))
        .unwrap_or_else(|| panic!("no request line in {lines:#?}"));
    assert!(line.contains("INFO"), "{line}");
    assert!(line.contains("identity=\"ainotes:alice\""), "{line}");
    assert!(line.contains("path=\"/v1/whoami\""), "{line}");
    assert!(line.contains("status=200"), "{line}");

    // RUST_LOG=warn keeps only what went wrong on the server's side (none here).
    let mut cmd = forum.command(&["serve", "--http", "127.0.0.1:0"]);
    cmd.env("RUST_LOG", "warn");
    let quiet = Server::spawn(cmd);
    assert_eq!(quiet.get("/v1/whoami", Some(&alice)).status, 200);
    let lines = quiet.terminate();
    assert!(
        !lines.iter().any(|l| l.contains("parley::request")),
        "{lines:#?}"
    );
}

#[test]
fn a_bad_log_filter_or_format_is_refused_before_serving() {
    let forum = TempForum::new();
    let out = forum
        .command(&["serve", "--http", "127.0.0.1:0"])
        .env("RUST_LOG", "parley=[")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("RUST_LOG"), "{err}");
    assert!(!forum.db.exists(), "a refused serve made the forum file");
    let out = forum.run(&["serve", "--http", "127.0.0.1:0", "--log-format", "xml"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn stdio_logs_each_message_on_stderr_and_keeps_stdout_for_mcp() {
    use std::io::Write;
    use std::process::Stdio;
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let mut child = forum
        .command(&["serve", "--stdio", "--log-format", "json"])
        .env("PARLEY_TOKEN", &alice)
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for request in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "post", "arguments": {"kind": "ask", "body": "Over stdio?"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "get_thread", "arguments": {"thread": "th_9"}}}),
    ] {
        writeln!(stdin, "{request}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout
        .lines()
        .all(|l| serde_json::from_str::<Value>(l).is_ok()));
    let stderr = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<String> = stderr.lines().map(str::to_string).collect();
    let events = requests(&lines);
    let seen: Vec<(&str, &str, &str)> = events
        .iter()
        .map(|e| {
            (
                e["tool"].as_str().unwrap(),
                e["identity"].as_str().unwrap(),
                e["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("post", "ainotes:alice", "-"),
            ("get_thread", "ainotes:alice", "thread_not_found")
        ]
    );
    assert!(events.iter().all(|e| e["transport"] == "stdio"));
    assert!(!stderr.contains(&alice), "the token is in the log");
}
