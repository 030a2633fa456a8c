//! Server-Sent Events (`GET /v1/{events,inbox,messages}/stream`) through the built
//! binary: each item one event whose id is the cursor after it, a resume after a
//! dropped connection that loses and repeats nothing, heartbeats, the token checked
//! at connect, the cap on waits and streams, and a shutdown that ends a hundred
//! waits and streams within its grace period without losing an acknowledged post.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::sse_client::{open, Stream};
use support::{http, rpc, Server, TempForum};

const SETTINGS: &str = r#"{"limits":{"writes_per_minute":0}}"#;

struct Cast {
    forum: TempForum,
    alice: String,
    bob: String,
}

fn cast() -> Cast {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let bob = forum.token("bob", &[]);
    Cast { forum, alice, bob }
}

fn post(server: &Server, token: &str, envelope: Value) -> Value {
    let resp = server.post("/v1/messages", Some(token), &envelope.to_string());
    assert_eq!(resp.status, 201, "{}", String::from_utf8_lossy(&resp.body));
    resp.json()
}

fn note(server: &Server, token: &str, thread: &str, body: &str) -> Value {
    post(
        server,
        token,
        json!({"kind": "note", "thread": thread, "body": body}),
    )
}

#[test]
fn a_stream_resumes_after_a_dropped_connection_losing_and_repeating_nothing() {
    let c = cast();
    let s = Server::start(&c.forum.db, Some(SETTINGS), &[]);
    let asked = post(&s, &c.alice, json!({"kind": "ask", "body": "m1"}));
    let thread = asked["thread"]["id"].as_str().unwrap().to_string();
    note(&s, &c.bob, &thread, "m2");
    note(&s, &c.bob, &thread, "m3");

    // Without Last-Event-ID or since, the stream starts at the beginning.
    let mut stream = open(s.addr, "/v1/messages/stream", Some(&c.bob), None).unwrap();
    let mut seen: Vec<(String, String)> = Vec::new();
    for _ in 0..3 {
        let e = stream.item();
        seen.push((e.json()["body"].as_str().unwrap().into(), e.id.unwrap()));
    }
    // Live items arrive as they are posted.
    note(&s, &c.bob, &thread, "m4");
    note(&s, &c.bob, &thread, "m5");
    for _ in 0..2 {
        let e = stream.item();
        seen.push((e.json()["body"].as_str().unwrap().into(), e.id.unwrap()));
    }
    let bodies: Vec<&str> = seen.iter().map(|(b, _)| b.as_str()).collect();
    assert_eq!(bodies, ["m1", "m2", "m3", "m4", "m5"]);
    // Each id is the cursor after its item: the read from there starts at the next.
    let after_m2 = s.get(&format!("/v1/messages?since={}", seen[1].1), Some(&c.bob));
    assert_eq!(after_m2.json()["items"][0]["body"], "m3");
    assert_eq!(
        s.get(&format!("/v1/messages?since={}", seen[4].1), Some(&c.bob))
            .json()["items"],
        json!([])
    );

    // The connection drops; posts go on meanwhile.
    drop(stream);
    note(&s, &c.bob, &thread, "m6");
    note(&s, &c.bob, &thread, "m7");
    // Resumed with the last id seen, and an older `since` that the header overrides.
    let path = format!("/v1/messages/stream?since={}", seen[0].1);
    let mut resumed = open(s.addr, &path, Some(&c.bob), Some(&seen[4].1)).unwrap();
    let e6 = resumed.item();
    let e7 = resumed.item();
    assert_eq!(e6.json()["body"], "m6");
    assert_eq!(e7.json()["body"], "m7");
    note(&s, &c.bob, &thread, "m8");
    let e8 = resumed.item();
    assert_eq!(e8.json()["body"], "m8", "nothing repeated, nothing lost");
    drop(resumed);

    // `since` alone resumes the same way; `thread` narrows the feed.
    let other = post(&s, &c.alice, json!({"kind": "ask", "body": "elsewhere"}));
    let path = format!(
        "/v1/messages/stream?since={}&thread={thread}",
        e7.id.unwrap()
    );
    let mut by_since = open(s.addr, &path, Some(&c.bob), None).unwrap();
    assert_eq!(by_since.item().json()["body"], "m8");
    note(
        &s,
        &c.bob,
        other["thread"]["id"].as_str().unwrap(),
        "not this thread",
    );
    note(&s, &c.bob, &thread, "m9");
    assert_eq!(by_since.item().json()["body"], "m9");
}

#[test]
fn inbox_and_event_streams_follow_their_reads() {
    let c = cast();
    let s = Server::start(&c.forum.db, Some(SETTINGS), &[]);
    let mut inbox = open(s.addr, "/v1/inbox/stream", Some(&c.bob), None).unwrap();
    let mut events = open(s.addr, "/v1/events/stream", Some(&c.alice), None).unwrap();
    let asked = post(
        &s,
        &c.alice,
        json!({"kind": "ask", "to": "ainotes:bob", "body": "Port?"}),
    );
    let due = inbox.item();
    assert!(due.id.as_deref().unwrap().starts_with('i'), "{due:?}");
    assert_eq!(due.json()["message"]["body"], "Port?");
    let thread = asked["thread"]["id"].as_str().unwrap();
    post(
        &s,
        &c.bob,
        json!({"kind": "answer", "thread": thread, "body": "7878"}),
    );
    let changed = events.item();
    assert_eq!(changed.json()["to_state"], "answered", "{changed:?}");
    let after = s.get(
        &format!("/v1/events?since={}", changed.id.unwrap()),
        Some(&c.alice),
    );
    assert_eq!(after.json()["items"], json!([]));
}

#[test]
fn heartbeats_keep_a_silent_stream_open_past_the_idle_timeout() {
    let c = cast();
    let s = Server::start(
        &c.forum.db,
        Some(SETTINGS),
        &["--heartbeat-ms", "100", "--idle-timeout-ms", "300"],
    );
    let mut stream = open(s.addr, "/v1/messages/stream", Some(&c.bob), None).unwrap();
    let mut beats = 0;
    while beats < 5 {
        let e = stream.next().expect("the stream stays open");
        assert!(e.data.is_none(), "nothing posted yet: {e:?}");
        if e.comment.as_deref() == Some("heartbeat") {
            beats += 1;
        }
    }
    // Five heartbeats 100 ms apart outlast the 300 ms idle timeout; the stream
    // still carries items.
    post(&s, &c.alice, json!({"kind": "ask", "body": "Still there?"}));
    assert_eq!(stream.item().json()["body"], "Still there?");
}

#[test]
fn a_stream_checks_its_token_and_arguments_before_it_starts() {
    let c = cast();
    let writer = c.forum.token("writer", &["--rights", "write"]);
    let s = Server::start(&c.forum.db, Some(SETTINGS), &[]);
    for route in [
        "/v1/events/stream",
        "/v1/inbox/stream",
        "/v1/messages/stream",
    ] {
        let anon = open(s.addr, route, None, None).err().expect("refused");
        assert_eq!(
            (anon.status, anon.reason().as_str()),
            (401, "token_missing")
        );
        assert_eq!(anon.header("www-authenticate"), Some("Bearer"));
        assert_eq!(anon.header("content-type"), Some("application/json"));
        let forged = open(s.addr, route, Some("pt_forged"), None).err().unwrap();
        assert_eq!(
            (forged.status, forged.reason().as_str()),
            (401, "token_invalid")
        );
        let no_read = open(s.addr, route, Some(&writer), None).err().unwrap();
        assert_eq!(
            (no_read.status, no_read.reason().as_str()),
            (403, "token_right_missing")
        );
        let bad_id = open(s.addr, route, Some(&c.bob), Some("m1.0000"))
            .err()
            .unwrap();
        assert_eq!(
            (bad_id.status, bad_id.reason().as_str()),
            (400, "invalid_cursor")
        );
        let limit = open(s.addr, &format!("{route}?limit=5"), Some(&c.bob), None)
            .err()
            .unwrap();
        assert_eq!(
            (limit.status, limit.reason().as_str()),
            (400, "invalid_argument")
        );
        // The token still comes first.
        let anon_limit = open(s.addr, &format!("{route}?wait_ms=5"), None, None)
            .err()
            .unwrap();
        assert_eq!(anon_limit.status, 401);
    }
    let other_cursor = s.get("/v1/inbox", Some(&c.bob)).json()["cursor"]
        .as_str()
        .unwrap()
        .to_string();
    let wrong = open(
        s.addr,
        "/v1/events/stream",
        Some(&c.bob),
        Some(&other_cursor),
    )
    .err()
    .unwrap();
    assert_eq!(wrong.reason(), "invalid_cursor");
}

#[test]
fn past_the_cap_waits_and_streams_are_refused_with_503_and_an_mcp_tool_error() {
    let c = cast();
    // Heartbeats often, so that a stream whose client is gone notices soon.
    let s = Server::start(
        &c.forum.db,
        Some(SETTINGS),
        // One token holds them all here: its share is the whole cap.
        &[
            "--max-waits",
            "3",
            "--max-waits-per-token",
            "3",
            "--heartbeat-ms",
            "100",
        ],
    );
    post(
        &s,
        &c.alice,
        json!({"kind": "ask", "to": "ainotes:bob", "body": "Due?"}),
    );
    // A stream holds its place once its head is sent: three fill the cap.
    let mut streams: Vec<Stream> = (0..3)
        .map(|_| open(s.addr, "/v1/events/stream", Some(&c.bob), None).unwrap())
        .collect();
    let cursor = s.get("/v1/inbox", Some(&c.bob)).json()["cursor"]
        .as_str()
        .unwrap()
        .to_string();
    let waiting = format!("/v1/inbox?since={cursor}&wait_ms=20000");
    let refused = s.get(&waiting, Some(&c.bob));
    assert_eq!(refused.status, 503);
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert_eq!(refused.reason(), "too_many_waits");
    assert_eq!(refused.json()["error"]["retry_after_ms"], 1000);
    assert!(refused.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("--max-waits"));
    let fourth = open(s.addr, "/v1/messages/stream", Some(&c.bob), None)
        .err()
        .unwrap();
    assert_eq!(
        (fourth.status, fourth.reason().as_str()),
        (503, "too_many_waits")
    );
    // MCP: a tool error carrying the same refusal.
    let auth = format!("Bearer {}", c.bob);
    let body = rpc(
        5,
        "tools/call",
        json!({"name": "get_inbox", "arguments": {"since": cursor, "wait_ms": 20000}}),
    );
    let mcp = http(
        s.addr,
        "POST",
        "/mcp",
        &[("Authorization", &auth)],
        Some(body.as_bytes()),
    );
    assert_eq!(mcp.status, 200);
    let result = &mcp.json()["result"];
    assert_eq!(mcp.json()["id"], 5);
    assert_eq!(result["isError"], true);
    assert_eq!(
        result["structuredContent"]["error"]["reason"],
        "too_many_waits"
    );
    assert_eq!(result["structuredContent"]["error"]["status"], 503);
    assert!(result["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("too_many_waits: "));
    // What does not wait is still served: a plain read, a wait that finds items at once.
    assert_eq!(s.get("/v1/inbox", Some(&c.bob)).status, 200);
    let at_once = s.get("/v1/inbox?wait_ms=20000", Some(&c.bob));
    assert_eq!(at_once.status, 200);
    assert_eq!(at_once.json()["items"].as_array().unwrap().len(), 1);
    // A token that would be refused is refused for itself, cap or not.
    let anon = s.get(&waiting, None);
    assert_eq!(anon.status, 401);

    // A stream that goes away gives its place back.
    streams.pop();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let resp = s.get(
            &format!("/v1/inbox?since={cursor}&wait_ms=50"),
            Some(&c.bob),
        );
        if resp.status == 200 {
            assert_eq!(resp.json()["items"], json!([]));
            break;
        }
        assert_eq!(resp.status, 503);
        assert!(Instant::now() < deadline, "the place never came back");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(streams);
}
