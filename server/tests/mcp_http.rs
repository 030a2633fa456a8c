//! MCP over Streamable HTTP against a server in this process: posts answer as
//! the engine does, REST and MCP posts share group commits, a panic is an
//! internal error.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};

use std::time::Duration;

use parley_forum::{Config, Forum, Right, TokenSpec};
use serde_json::{json, Value};
use support::{default_options, Server};

/// The server of these tests, over `forum`.
fn serve(forum: Forum) -> Server {
    Server::serve(forum, &default_options())
}

/// A forum whose answers depend only on what it is sent: a fixed clock, no
/// rate limit.
fn forum() -> Forum {
    let settings = json!({"clock": "2026-11-30T12:00:00.000Z", "limits": {"writes_per_minute": 0}});
    Forum::in_memory(Config::from_json(&settings).unwrap()).unwrap()
}

/// The tokens of alice and bob (read, write) and of a reader (read), issued in
/// this order, so that twin forums give their holders the same ids.
fn tokens(forum: &Forum) -> Vec<String> {
    let rw = [Right::Read, Right::Write];
    vec![
        forum.create_token(&TokenSpec::llm("alice", &rw)).unwrap(),
        forum.create_token(&TokenSpec::llm("bob", &rw)).unwrap(),
        forum
            .create_token(&TokenSpec::llm("reader", &[Right::Read]))
            .unwrap(),
    ]
}

/// A request over a connection of its own: the status and the body, as bytes.
fn send(addr: SocketAddr, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut raw = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        raw.push_str(&format!("{name}: {value}\r\n"));
    }
    raw.push_str("\r\n");
    raw.push_str(body);
    stream.write_all(raw.as_bytes()).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&answer[..split]).to_string();
    assert!(!head.to_ascii_lowercase().contains("chunked"), "{head}");
    let status = head[9..12].parse().unwrap();
    (status, answer[split + 4..].to_vec())
}

fn call(id: Value, arguments: Option<Value>) -> Value {
    let mut params = json!({"name": "post"});
    if let Some(arguments) = arguments {
        params["arguments"] = arguments;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

fn modern(mut request: Value) -> Value {
    request["params"]["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    request
}

/// Who sends a request.
#[derive(Clone, Copy)]
enum Caller {
    Token(usize),
    Literal(&'static str),
    Nobody,
}

/// Every `tools/call` of `post` over HTTP gets,
/// byte for byte, what `Forum::mcp` answers in process: a twin forum, in the
/// same state, is sent each request too. The outcomes cover a post in both
/// eras, refusals (a missing field, a bad, absent or read-only token, arguments
/// absent, null or not an object), an idempotent replay and an idempotency
/// conflict, and the calls the engine answers without posting.
#[test]
fn mcp_posts_over_http_answer_as_the_engine_does() {
    let served = forum();
    let served_tokens = tokens(&served);
    let local = forum();
    let local_tokens = tokens(&local);
    let server = serve(served);
    let ask = |body: &str| json!({"kind": "ask", "body": body});
    let keyed = |body: &str| json!({"kind": "ask", "body": body, "idempotency_key": "k-1"});
    let modern_headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "post"),
    ];
    let a = Caller::Token(0);
    #[rustfmt::skip]
    let cases: Vec<(&str, Caller, Value, bool, u16)> = vec![
        ("a post", a, call(json!(1), Some(ask("Which port does the dev server use?"))), false, 200),
        ("a modern post", a, modern(call(json!("m-2"), Some(ask("And the test server?")))), true, 200),
        ("a missing field", a, call(json!(3), Some(json!({"kind": "ask"}))), false, 200),
        ("a keyed post", a, call(json!(4), Some(keyed("Keyed?"))), false, 200),
        ("its replay", a, call(json!(5), Some(keyed("Keyed?"))), false, 200),
        ("a modern replay", a, modern(call(json!(6), Some(keyed("Keyed?")))), true, 200),
        ("an idempotency conflict", a, call(json!(7), Some(keyed("Another body?"))), false, 200),
        ("a bad token", Caller::Literal("pt_not_a_token"), call(json!(8), Some(ask("Anyone?"))), false, 200),
        ("no token", Caller::Nobody, call(json!(9), Some(ask("Anyone?"))), false, 200),
        ("a read-only token", Caller::Token(2), call(json!(10), Some(ask("May I?"))), false, 200),
        ("no arguments", a, call(json!(11), None), false, 200),
        ("null arguments", a, call(json!(12), Some(Value::Null)), false, 200),
        ("arguments not an object", a, call(json!(13), Some(json!([1, 2]))), false, 200),
        ("another writer", Caller::Token(1), call(json!(14), Some(ask("Which port?"))), false, 200),
        (
            "not JSON-RPC 2.0", a,
            json!({"jsonrpc": "1.0", "id": 15, "method": "tools/call", "params": {"name": "post", "arguments": ask("Old?")}}),
            false, 200,
        ),
        (
            "an unsupported version", a,
            json!({"jsonrpc": "2.0", "id": 16, "method": "tools/call", "params": {"name": "post", "arguments": ask("Future?"),
                   "_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}}),
            false, 200,
        ),
        (
            "_meta not an object", a,
            json!({"jsonrpc": "2.0", "id": 17, "method": "tools/call", "params": {"name": "post", "arguments": ask("Meta?"), "_meta": 1}}),
            false, 200,
        ),
        (
            "a modern call without capabilities", a,
            json!({"jsonrpc": "2.0", "id": 18, "method": "tools/call", "params": {"name": "post", "arguments": ask("Caps?"),
                   "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}),
            false, 200,
        ),
        (
            "a notification", a,
            json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "post", "arguments": ask("Unheard?")}}),
            false, 202,
        ),
    ];
    let mut reasons = Vec::new();
    for (what, caller, request, modern_route, status) in cases {
        let text = request.to_string();
        let (local_token, served_token) = match caller {
            Caller::Token(i) => (
                Some(local_tokens[i].clone()),
                Some(served_tokens[i].clone()),
            ),
            Caller::Literal(t) => (Some(t.to_string()), Some(t.to_string())),
            Caller::Nobody => (None, None),
        };
        let auth = served_token.map(|t| format!("Bearer {t}"));
        let mut headers: Vec<(&str, &str)> = Vec::new();
        if let Some(auth) = &auth {
            headers.push(("Authorization", auth));
        }
        if modern_route {
            headers.extend_from_slice(&modern_headers);
        }
        let (got_status, got) = send(server.addr, "/mcp", &headers, &text);
        let expected = local.mcp(local_token.as_deref(), &text);
        assert_eq!(
            got_status,
            status,
            "{what}: {}",
            String::from_utf8_lossy(&got)
        );
        match expected {
            Some(expected) => {
                assert_eq!(String::from_utf8(got).unwrap(), expected, "{what}");
                let v: Value = serde_json::from_str(&expected).unwrap();
                let reason = &v["result"]["structuredContent"]["error"]["reason"];
                reasons.push(
                    reason
                        .as_str()
                        .map(str::to_string)
                        .or_else(|| v["error"]["code"].as_i64().map(|c| format!("jsonrpc {c}"))),
                );
            }
            None => assert!(got.is_empty(), "{what}"),
        }
    }
    // The cases are what they say.
    let reasons: Vec<Option<&str>> = reasons.iter().map(Option::as_deref).collect();
    assert_eq!(
        reasons,
        [
            None,
            None,
            Some("invalid_body"),
            None,
            None,
            None,
            Some("idempotency_conflict"),
            Some("token_invalid"),
            Some("token_missing"),
            Some("token_right_missing"),
            Some("invalid_body"),
            Some("invalid_body"),
            Some("invalid_body"),
            None,
            Some("jsonrpc -32600"),
            Some("jsonrpc -32022"),
            Some("jsonrpc -32602"),
            Some("jsonrpc -32602"),
        ]
    );
    // Both forums hold the same posts: nothing was posted twice, nor for a call
    // answered without posting.
    // (A cursor is signed with a key of each forum's own: the items are compared.)
    let list = |forum: &Forum, token: &str| {
        forum
            .call(Some(token), "list_threads", &json!({"limit": 50}))
            .unwrap()["items"]
            .take()
    };
    let threads = list(&server.forum, &served_tokens[0]);
    assert_eq!(threads, list(&local, &local_tokens[0]));
    assert_eq!(threads.as_array().unwrap().len(), 4, "{threads}");
}

/// MCP posts over HTTP and REST posts reach the engine the same way, one engine
/// call each on the blocking pool: sent at once, every one is stored once, and
/// the engine's group commit may join them (never more commits than posts).
/// That it does join concurrent posts is the engine's own test
/// (`tests/concurrency.rs`).
#[test]
fn mcp_and_rest_posts_reach_the_engine_alike() {
    let forum = forum();
    let tokens = tokens(&forum);
    let server = serve(forum);
    let addr = server.addr;
    let rest = |token: &str, body: String| {
        let auth = format!("Bearer {token}");
        let envelope = json!({"kind": "ask", "body": body}).to_string();
        let (status, answer) = send(addr, "/v1/messages", &[("Authorization", &auth)], &envelope);
        assert_eq!(status, 201, "{}", String::from_utf8_lossy(&answer));
    };
    let mcp = |token: &str, id: usize, body: String| {
        let auth = format!("Bearer {token}");
        let request = call(json!(id), Some(json!({"kind": "ask", "body": body}))).to_string();
        let (status, answer) = send(addr, "/mcp", &[("Authorization", &auth)], &request);
        assert_eq!(status, 200);
        let answer: Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    };
    let before = server.forum.subscribe().seen();
    std::thread::scope(|s| {
        for n in 0..4 {
            let (alice, bob) = (tokens[0].clone(), tokens[1].clone());
            s.spawn(move || mcp(&alice, n, format!("MCP question {n}?")));
            s.spawn(move || rest(&bob, format!("REST question {n}?")));
        }
    });
    let commits = server.forum.subscribe().seen() - before;
    assert!(
        (1..=8).contains(&commits),
        "four MCP and four REST posts, {commits} commits"
    );
    let threads = server
        .forum
        .call(Some(&tokens[0]), "list_threads", &json!({"limit": 50}))
        .unwrap();
    assert_eq!(threads["items"].as_array().unwrap().len(), 8);
}

/// A post whose engine call panics (here in a commit hook) is answered with a
/// JSON-RPC internal error under its id, as REST answers 500; the server lives
/// on, and the next post is stored.
#[test]
fn an_mcp_post_whose_engine_call_panics_gets_an_internal_error() {
    let forum = forum();
    let tokens = tokens(&forum);
    let server = serve(forum);
    let first = AtomicBool::new(true);
    let _hook = server.forum.on_commit(move || {
        if first.swap(false, Ordering::SeqCst) {
            panic!("a commit hook fails (on purpose)");
        }
    });
    let auth = format!("Bearer {}", tokens[0]);
    let post = |id: u64, body: &str| {
        let request = call(json!(id), Some(json!({"kind": "ask", "body": body}))).to_string();
        let (status, answer) = send(server.addr, "/mcp", &[("Authorization", &auth)], &request);
        (status, serde_json::from_slice::<Value>(&answer).unwrap())
    };
    let (status, failed) = post(1, "Does this reach the disk?");
    assert_eq!(status, 200, "{failed}");
    assert_eq!(failed["id"], 1);
    assert_eq!(
        failed["error"]["code"],
        parley_forum::mcp::codes::INTERNAL_ERROR
    );
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Internal error: internal error: "),
        "{message}"
    );
    assert!(!message.contains("damaged"), "{message}");
    let (status, next) = post(2, "And this one?");
    assert_eq!(status, 200);
    assert_eq!(next["result"]["isError"], false, "{next}");
}
