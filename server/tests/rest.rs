//! The REST routes of SPEC §11.2 over real HTTP: every route, and every status code
//! of SPEC §12 reachable through them.

mod support;

use serde_json::json;
use support::{http, Server, TempForum};

const SETTINGS: &str = r#"{"limits":{"request_max_bytes":4096,"writes_per_minute":0}}"#;

struct Fixture {
    _forum: TempForum,
    server: Server,
    alice: String,
    bob: String,
    reader: String,
    ann: String,
}

fn fixture() -> Fixture {
    let forum = TempForum::new();
    let alice = forum.token("alice", &["--label", "Alice"]);
    let bob = forum.token("bob", &[]);
    let reader = forum.token("reader", &["--rights", "read"]);
    let ann = forum.token("ann", &["--human"]);
    let server = Server::start(&forum.db, Some(SETTINGS), &[]);
    Fixture {
        _forum: forum,
        server,
        alice,
        bob,
        reader,
        ann,
    }
}

#[test]
fn every_route_answers() {
    let f = fixture();
    let s = &f.server;

    let manifest = s.get("/v1/manifest", None);
    assert_eq!(manifest.status, 200);
    assert_eq!(manifest.header("content-type"), Some("application/json"));
    assert_eq!(manifest.json()["parley"], "1");
    assert_eq!(manifest.json()["limits"]["request_max_bytes"], 4096);

    let me = s.get("/v1/whoami", Some(&f.alice));
    assert_eq!(me.status, 200);
    assert_eq!(me.json()["identity"], "ainotes:alice");
    assert_eq!(me.json()["label"], "Alice");

    let asked = s.post(
        "/v1/messages",
        Some(&f.alice),
        r#"{"kind":"ask","body":"Which port?"}"#,
    );
    assert_eq!(
        asked.status,
        201,
        "{}",
        String::from_utf8_lossy(&asked.body)
    );
    let thread = asked.json()["thread"]["id"].as_str().unwrap().to_string();
    let answer =
        json!({"kind": "answer", "thread": thread, "body": "7878", "from": {"extension": "w1"}})
            .to_string();
    let answered = s.post("/v1/messages", Some(&f.bob), &answer);
    assert_eq!(answered.status, 201);
    assert_eq!(answered.json()["thread"]["state"], "answered");

    let view = s.get(&format!("/v1/threads/{thread}"), Some(&f.alice));
    assert_eq!(view.status, 200);
    assert_eq!(view.json()["thread"]["message_count"], 2);
    assert_eq!(
        view.json()["messages"][0]["replies"][0]["from"]["extension"],
        "w1"
    );
    let by_number = s.get(
        &format!("/v1/threads/{}", thread.trim_start_matches("th_")),
        Some(&f.alice),
    );
    assert_eq!(by_number.json()["thread"]["id"], thread.as_str());

    let listed = s.get("/v1/threads?limit=1&state=answered", Some(&f.reader));
    assert_eq!(listed.status, 200);
    assert_eq!(listed.json()["items"].as_array().unwrap().len(), 1);
    assert_eq!(listed.json()["items"][0]["id"], thread.as_str());

    let inbox = s.get("/v1/inbox", Some(&f.alice));
    assert_eq!(inbox.status, 200);
    assert_eq!(inbox.json()["items"][0]["thread"]["id"], thread.as_str());
    let cursor = inbox.json()["cursor"].as_str().unwrap().to_string();
    let later = s.get(
        &format!("/v1/inbox?since={}", urlencode(&cursor)),
        Some(&f.alice),
    );
    assert_eq!(later.status, 200);
    assert_eq!(later.json()["items"], json!([]));

    let events = s.get(
        &format!("/v1/events?thread={thread}&limit=10"),
        Some(&f.reader),
    );
    assert_eq!(events.status, 200);
    assert_eq!(events.json()["items"][0]["to_state"], "answered");

    let claimed = s.post(
        "/v1/messages",
        Some(&f.bob),
        r#"{"kind":"assert","body":"Port 7878 is free on CI.","evidence":[{"kind":"log","ref":"ci.log"}]}"#,
    );
    assert_eq!(claimed.status, 201);
    let claim = claimed.json()["claim"]["id"].as_str().unwrap().to_string();
    let got = s.get(&format!("/v1/claims/{claim}"), Some(&f.reader));
    assert_eq!(got.status, 200);
    assert_eq!(got.json()["status"], "unverified");
}

#[test]
fn status_400_for_malformed_input() {
    let f = fixture();
    let s = &f.server;
    let bad_json = s.post("/v1/messages", Some(&f.alice), "{not json");
    assert_eq!(
        (bad_json.status, bad_json.reason().as_str()),
        (400, "invalid_body")
    );
    let empty = s.post("/v1/messages", Some(&f.alice), "");
    assert_eq!(
        (empty.status, empty.reason().as_str()),
        (400, "invalid_body")
    );
    let no_body = s.post("/v1/messages", Some(&f.alice), r#"{"kind":"ask"}"#);
    assert_eq!(
        (no_body.status, no_body.reason().as_str()),
        (400, "invalid_body")
    );
    let kind = s.post(
        "/v1/messages",
        Some(&f.alice),
        r#"{"kind":"shout","body":"x"}"#,
    );
    assert_eq!((kind.status, kind.reason().as_str()), (400, "unknown_kind"));
    let limit = s.get("/v1/threads?limit=abc", Some(&f.alice));
    assert_eq!(
        (limit.status, limit.reason().as_str()),
        (400, "invalid_argument")
    );
    let twice = s.get("/v1/threads?limit=1&limit=2", Some(&f.alice));
    assert_eq!(
        (twice.status, twice.reason().as_str()),
        (400, "invalid_argument")
    );
    let cursor = s.get("/v1/events?since=not-a-cursor", Some(&f.alice));
    assert_eq!(
        (cursor.status, cursor.reason().as_str()),
        (400, "invalid_cursor")
    );
}

#[test]
fn status_401_with_www_authenticate() {
    let f = fixture();
    let s = &f.server;
    let missing = s.get("/v1/whoami", None);
    assert_eq!(
        (missing.status, missing.reason().as_str()),
        (401, "token_missing")
    );
    assert_eq!(missing.header("www-authenticate"), Some("Bearer"));
    let invalid = s.get("/v1/inbox", Some("pt_not_a_token"));
    assert_eq!(
        (invalid.status, invalid.reason().as_str()),
        (401, "token_invalid")
    );
    assert_eq!(invalid.header("www-authenticate"), Some("Bearer"));
    let basic = http(
        s.addr,
        "GET",
        "/v1/whoami",
        &[("Authorization", "Basic YWxpY2U6eA==")],
        None,
    );
    assert_eq!(
        (basic.status, basic.reason().as_str()),
        (401, "token_invalid")
    );
    let post = s.post("/v1/messages", None, r#"{"kind":"ask","body":"hi"}"#);
    assert_eq!(
        (post.status, post.reason().as_str()),
        (401, "token_missing")
    );
}

#[test]
fn status_403_404_409() {
    let f = fixture();
    let s = &f.server;
    let refused = s.post(
        "/v1/messages",
        Some(&f.reader),
        r#"{"kind":"ask","body":"May I?"}"#,
    );
    assert_eq!(
        (refused.status, refused.reason().as_str()),
        (403, "token_right_missing")
    );
    assert_eq!(refused.json()["error"]["right"], "write");

    let asked = s.post(
        "/v1/messages",
        Some(&f.alice),
        r#"{"kind":"ask","body":"Close this?"}"#,
    );
    let thread = asked.json()["thread"]["id"].as_str().unwrap().to_string();
    let mark =
        json!({"kind": "mark", "thread": thread, "state": "closed", "body": "Closing yours."})
            .to_string();
    let foreign = s.post("/v1/messages", Some(&f.bob), &mark);
    assert_eq!(
        (foreign.status, foreign.reason().as_str()),
        (403, "thread_authority_missing")
    );

    let origin = http(
        s.addr,
        "GET",
        "/v1/manifest",
        &[("Origin", "http://evil.example")],
        None,
    );
    assert_eq!(origin.status, 403);
    let local = http(
        s.addr,
        "GET",
        "/v1/manifest",
        &[("Origin", "http://localhost:5173")],
        None,
    );
    assert_eq!(local.status, 200);

    let nothread = s.get("/v1/threads/th_999", Some(&f.alice));
    assert_eq!(
        (nothread.status, nothread.reason().as_str()),
        (404, "thread_not_found")
    );
    let noclaim = s.get("/v1/claims/cl_42", Some(&f.alice));
    assert_eq!(
        (noclaim.status, noclaim.reason().as_str()),
        (404, "claim_not_found")
    );
    let noroute = s.get("/v2/everything", Some(&f.alice));
    assert_eq!(noroute.status, 404);
    let noparent = s.post(
        "/v1/messages",
        Some(&f.bob),
        r#"{"kind":"note","parent":"msg_999","body":"?"}"#,
    );
    assert_eq!(
        (noparent.status, noparent.reason().as_str()),
        (404, "message_not_found")
    );

    let own = json!({"kind": "note", "thread": thread, "body": "Talking to myself."}).to_string();
    let selfish = s.post("/v1/messages", Some(&f.alice), &own);
    assert_eq!(
        (selfish.status, selfish.reason().as_str()),
        (409, "self_reply")
    );
    let closed = s.post("/v1/messages", Some(&f.ann), &mark);
    assert_eq!(closed.status, 201);
    assert_eq!(closed.json()["thread"]["locked"], true);
    let late = json!({"kind": "answer", "thread": thread, "body": "Too late."}).to_string();
    let late = s.post("/v1/messages", Some(&f.bob), &late);
    assert_eq!(
        (late.status, late.reason().as_str()),
        (409, "thread_closed")
    );
}

#[test]
fn status_413_over_the_request_cap() {
    let f = fixture();
    let s = &f.server;
    let big = json!({"kind": "ask", "body": "x".repeat(5000)}).to_string();
    let resp = s.post("/v1/messages", Some(&f.alice), &big);
    assert_eq!(
        (resp.status, resp.reason().as_str()),
        (413, "payload_too_large")
    );
    assert_eq!(resp.json()["error"]["limit"], "request_max_bytes");
    // Just under the cap, the engine's own limit applies instead.
    let long = json!({"kind": "ask", "body": "y".repeat(501)}).to_string();
    let resp = s.post("/v1/messages", Some(&f.alice), &long);
    assert_eq!(
        (resp.status, resp.reason().as_str()),
        (400, "body_too_long")
    );
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
