//! `get_digest` (SPEC §17) over REST, against the server in this process:
//! `GET /v1/threads/{id}/digest` with its refusals. `parley digest` is tested
//! through the binary in `bindings/cli/tests/digest.rs`.

mod support;

use serde_json::{json, Value};
use support::{Server, TempForum};

const SETTINGS: &str = r#"{"limits":{"writes_per_minute":0}}"#;

/// A thread of 8 messages: a root ask answered two levels down, an open nested
/// ask, a decision, a claim. Returns the ids in posting order.
fn thread(forum: &TempForum, alice: &str, bob: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    let mut post = |token: &str, envelope: Value| {
        let result = forum.post(token, &envelope);
        ids.push(result["message"]["id"].as_str().unwrap().to_string());
    };
    for (who, envelope) in support::digest_thread::envelopes() {
        post([alice, bob][who], envelope);
    }
    ids
}

#[test]
fn the_rest_route_serves_the_digest_and_its_refusals() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let bob = forum.token("bob", &[]);
    let writer = forum.token("wo", &["--rights", "write"]);
    thread(&forum, &alice, &bob);
    let s = Server::start(&forum.db, Some(SETTINGS), &[]);

    let got = s.get("/v1/threads/th_1/digest", Some(&bob));
    assert_eq!(got.status, 200, "{}", String::from_utf8_lossy(&got.body));
    assert_eq!(got.header("content-type"), Some("application/json"));
    let d = got.json();
    assert_eq!(d["thread"]["message_count"], 8);
    assert_eq!(d["root"]["id"], "msg_1");
    assert_eq!(d["decision"]["id"], "msg_6");
    assert_eq!(d["open_questions"], json!([d["recent"][1]]), "{d}");
    assert_eq!(d["open_questions"][0]["id"], "msg_5");
    assert_eq!(
        d["claims"],
        json!([{"id": "cl_1", "status": "unverified", "text": "8080 is free on CI."}])
    );
    let recent: Vec<&str> = d["recent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(recent, ["msg_4", "msg_5", "msg_6", "msg_7", "msg_8"]);
    // Shown: msg_1, msg_4-msg_8; left: msg_2, msg_3.
    assert_eq!(d["omitted"], 2);
    // The number form, and the same body as the generic call over MCP.
    assert_eq!(s.get("/v1/threads/1/digest", Some(&bob)).json(), d);

    for (path, token, status, reason) in [
        (
            "/v1/threads/th_9/digest",
            Some(bob.as_str()),
            404,
            "thread_not_found",
        ),
        (
            "/v1/threads/msg_1/digest",
            Some(&bob),
            400,
            "invalid_argument",
        ),
        (
            "/v1/threads/th_1/digest?limit=2",
            Some(&bob),
            400,
            "invalid_argument",
        ),
        (
            "/v1/threads/%FF/digest",
            Some(&bob),
            400,
            "invalid_argument",
        ),
        (
            "/v1/threads/th_1/digest",
            Some(&writer),
            403,
            "token_right_missing",
        ),
        (
            "/v1/threads/th_1/digest",
            Some("pt_nope"),
            401,
            "token_invalid",
        ),
        ("/v1/threads/th_1/digest", None, 401, "token_missing"),
    ] {
        let r = s.get(path, token);
        assert_eq!(
            (r.status, r.reason()),
            (status, reason.to_string()),
            "{path}"
        );
    }
}
