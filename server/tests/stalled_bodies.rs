//! Request bodies that never arrive: the body timeout closes them, a full cap of
//! them gives way to a prompt client, and a request refused before its body is
//! read (a bad token, a host not allowed) is answered at once.
//!
//! The server runs in this process on a loopback port; the clients are raw sockets.
//! Bounds are "does not hang" limits, except the one second the prompt client is
//! promised.

mod support;

use std::io::Write;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{closed, connect, stall, Server, TempForum};

/// Far longer than any close or answer these tests wait for takes.
const BOUND: Duration = Duration::from_secs(30);

#[test]
fn a_stalled_body_is_closed_after_the_body_timeout_and_not_before() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let server = Server::start(&forum.db, None, &["--body-timeout-ms", "1500"]);
    let host = server.addr.to_string();
    for path in ["/v1/messages", "/mcp"] {
        let began = Instant::now();
        let mut stream = stall(server.addr, path, &host, Some(&alice));
        assert!(closed(&mut stream, BOUND).is_none(), "{path}");
        let took = began.elapsed();
        assert!(
            took >= Duration::from_millis(1300),
            "{path}: cut after {took:?}"
        );
    }
    // A body that arrives in time, slowly, is served.
    let body = json!({"kind": "ask", "body": "Slow, but in time?"}).to_string();
    let (first, rest) = body.as_bytes().split_at(10);
    let mut stream = connect(server.addr);
    let head = format!(
        "POST /v1/messages HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {alice}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(first).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let resp = support::request_on(&mut stream, rest).unwrap();
    assert_eq!(
        resp.status,
        201,
        "{:?}",
        String::from_utf8_lossy(&resp.body)
    );
}

#[test]
fn a_request_refused_before_its_body_is_answered_at_once() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    // A body timeout far past the bound: only an answer that does not wait for
    // the body comes in time.
    let server = Server::start(&forum.db, None, &["--body-timeout-ms", "600000"]);
    let addr = server.addr;
    let host = addr.to_string();
    let cases: [(&str, &str, Option<&str>, u16, &str); 5] = [
        (
            "/v1/messages",
            &host,
            Some("pt_not_a_token"),
            401,
            "token_invalid",
        ),
        ("/v1/messages", &host, None, 401, "token_missing"),
        (
            "/v1/messages",
            "evil.example",
            Some(&alice),
            421,
            "host_not_allowed",
        ),
        (
            "/mcp",
            "evil.example",
            Some(&alice),
            421,
            "host_not_allowed",
        ),
        (
            "/v1/messages",
            "evil.example",
            Some("pt_not_a_token"),
            421,
            "host_not_allowed",
        ),
    ];
    for (path, host, token, status, reason) in cases {
        let mut stream = stall(addr, path, host, token);
        let resp = closed(&mut stream, Duration::from_secs(10))
            .unwrap_or_else(|| panic!("{path} {host}: closed without an answer"));
        assert_eq!(resp.status, status, "{path} {host}");
        assert_eq!(resp.header("connection"), Some("close"), "{path} {host}");
        let body = resp.json();
        let got = body["error"]["reason"]
            .as_str()
            .or(body["error"]["data"]["reason"].as_str());
        assert_eq!(got, Some(reason), "{path} {host}: {body}");
        if status == 401 {
            assert_eq!(resp.header("www-authenticate"), Some("Bearer"));
        }
    }
}
