//! REST end to end through the `parley` binary: a smoke test of the transport
//! that ends with Ctrl-C. Every route and status code is tested in process, in
//! `server/tests/rest.rs`.

mod common;

use common::{Server, TempForum};
use serde_json::json;

#[test]
fn status_429_with_retry_after() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let server = Server::start(
        &forum.db,
        Some(r#"{"limits":{"writes_per_minute":2}}"#),
        &[],
    );
    for i in 0..2 {
        let ok = server.post(
            "/v1/messages",
            Some(&alice),
            &json!({"kind": "ask", "body": format!("Question {i}?")}).to_string(),
        );
        assert_eq!(ok.status, 201);
    }
    let limited = server.post(
        "/v1/messages",
        Some(&alice),
        r#"{"kind":"ask","body":"One more?"}"#,
    );
    assert_eq!(
        (limited.status, limited.reason().as_str()),
        (429, "rate_limited")
    );
    assert!(limited.json()["error"]["retry_after_ms"].as_u64().unwrap() > 0);
    let retry: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry));
    // A rate-limited identity still reads.
    assert_eq!(server.get("/v1/threads", Some(&alice)).status, 200);
    let log = server.interrupt();
    assert!(
        log.iter().any(|l| l.contains("stopped")),
        "Ctrl-C stops cleanly: {log:?}"
    );
}
