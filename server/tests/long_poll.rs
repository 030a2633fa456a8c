//! Waiting reads over HTTP (SPEC §14.2): `wait_ms` on the REST reads and as an MCP
//! tool argument, against the server in this process. A waiter wakes on another client's
//! post and times out with the plain result; the engine judges `wait_ms`; many
//! waiters do not keep a normal request from being answered; no connection timeout
//! cuts a wait. Also `GET /v1/messages`, `GET /v1/search` and the `Idempotency-Key`
//! header of `POST /v1/messages` (SPEC §14.1, §14.3, §14.4).

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{connect, http, parse, rpc, Response, Server, TempForum};

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

fn items(v: &Value) -> usize {
    v["items"].as_array().map_or(0, Vec::len)
}

/// The cursor at the end of `path` (a read) for `token`: a wait from there sees
/// only what comes after.
fn end_cursor(server: &Server, path: &str, token: &str) -> String {
    let resp = server.get(path, Some(token));
    assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
    resp.json()["cursor"].as_str().unwrap().to_string()
}

/// Sends a GET on a fresh connection and returns the connection, its answer unread.
fn send_get(addr: SocketAddr, path: &str, token: &str) -> TcpStream {
    let mut stream = connect(addr);
    let raw = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(raw.as_bytes()).unwrap();
    stream
}

/// Reads the answer on a connection from [`send_get`] to its end.
fn answer(mut stream: TcpStream) -> Response {
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    parse(&raw).unwrap_or_else(|| panic!("malformed: {:?}", String::from_utf8_lossy(&raw)))
}

fn ask_bob(server: &Server, alice: &str, body: &str) -> Value {
    let post = json!({"kind": "ask", "to": "ainotes:bob", "body": body}).to_string();
    let resp = server.post("/v1/messages", Some(alice), &post);
    assert_eq!(resp.status, 201, "{}", String::from_utf8_lossy(&resp.body));
    resp.json()
}

#[test]
fn rest_long_polls_wake_on_a_post_from_another_client() {
    let c = cast();
    let s = Server::start(&c.forum.db, Some(SETTINGS), &[]);
    let inbox = end_cursor(&s, "/v1/inbox", &c.bob);
    let feed = end_cursor(&s, "/v1/messages", &c.bob);
    let threads = end_cursor(&s, "/v1/threads", &c.bob);
    let events = end_cursor(&s, "/v1/events", &c.alice);
    let waiting = [
        format!("/v1/inbox?since={inbox}&wait_ms=20000"),
        format!("/v1/messages?since={feed}&wait_ms=20000"),
        format!("/v1/threads?since={threads}&wait_ms=20000"),
    ]
    .map(|path| send_get(s.addr, &path, &c.bob));
    let on_events = send_get(
        s.addr,
        &format!("/v1/events?since={events}&wait_ms=20000"),
        &c.alice,
    );
    let asked = ask_bob(&s, &c.alice, "Which port, bob?");
    for (i, stream) in waiting.into_iter().enumerate() {
        let resp = answer(stream);
        assert_eq!(resp.status, 200, "waiter {i}");
        assert_eq!(items(&resp.json()), 1, "waiter {i}: {}", resp.json());
    }
    // An answer moves the thread to `answered`: an event.
    let thread = asked["thread"]["id"].as_str().unwrap();
    let reply = json!({"kind": "answer", "thread": thread, "body": "7878"}).to_string();
    assert_eq!(s.post("/v1/messages", Some(&c.bob), &reply).status, 201);
    let resp = answer(on_events);
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.json()["items"][0]["to_state"],
        "answered",
        "{}",
        resp.json()
    );
}

#[test]
fn a_long_poll_that_times_out_answers_the_plain_result() {
    let c = cast();
    let s = Server::start(&c.forum.db, Some(SETTINGS), &[]);
    ask_bob(&s, &c.alice, "Seen?");
    let cursor = end_cursor(&s, "/v1/inbox", &c.bob);
    let plain = s.get(&format!("/v1/inbox?since={cursor}"), Some(&c.bob));
    let waited = s.get(
        &format!("/v1/inbox?since={cursor}&wait_ms=300"),
        Some(&c.bob),
    );
    assert_eq!(waited.status, 200);
    assert_eq!(
        waited.json(),
        plain.json(),
        "the same shape as without waiting"
    );
    assert_eq!(items(&waited.json()), 0);
    // Items already there: the wait returns them at once.
    let at_once = s.get("/v1/inbox?wait_ms=30000", Some(&c.bob));
    assert_eq!(items(&at_once.json()), 1);
}

#[test]
fn wait_ms_is_judged_by_the_engine_after_the_token() {
    let c = cast();
    let s = Server::start(&c.forum.db, Some(SETTINGS), &[]);
    for bad in ["-1", "x", "30001", "1.5", "99999999999999999999999"] {
        for route in ["/v1/inbox", "/v1/events", "/v1/messages", "/v1/threads"] {
            let resp = s.get(&format!("{route}?wait_ms={bad}"), Some(&c.bob));
            assert_eq!(resp.status, 400, "{route} {bad}");
            assert_eq!(resp.reason(), "invalid_argument", "{route} {bad}");
            assert_eq!(resp.json()["error"]["field"], "wait_ms", "{route} {bad}");
            // No token: the token is judged first.
            let anon = s.get(&format!("{route}?wait_ms={bad}"), None);
            assert_eq!(
                (anon.status, anon.reason().as_str()),
                (401, "token_missing")
            );
        }
    }
    // A read that takes no wait_ms: an unknown argument, as the engine says.
    let thread = ask_bob(&s, &c.alice, "Waiting on a thread?")["thread"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let resp = s.get(&format!("/v1/threads/{thread}?wait_ms=100"), Some(&c.bob));
    assert_eq!(
        (resp.status, resp.reason().as_str()),
        (400, "invalid_argument")
    );
    // Zero: no wait at all.
    let zero = s.get("/v1/messages?wait_ms=0", Some(&c.bob));
    assert_eq!((zero.status, items(&zero.json())), (200, 1));

    // Without the listen profile, wait_ms is an unknown argument.
    drop(s);
    let off = Server::start(&c.forum.db, Some(r#"{"profiles":["dialectic"]}"#), &[]);
    let resp = off.get("/v1/inbox?wait_ms=100", Some(&c.bob));
    assert_eq!(
        (resp.status, resp.reason().as_str()),
        (400, "invalid_argument")
    );
    let mcp = mcp_call(off.addr, &c.bob, 1, "get_inbox", json!({"wait_ms": 100}));
    assert_eq!(mcp["result"]["isError"], true);
    assert_eq!(
        mcp["result"]["structuredContent"]["error"]["reason"],
        "invalid_argument"
    );
}

/// A legacy-era `tools/call` over `POST /mcp`; the JSON-RPC response.
fn mcp_call(addr: SocketAddr, token: &str, id: u64, tool: &str, arguments: Value) -> Value {
    let auth = format!("Bearer {token}");
    let body = rpc(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    );
    let resp = http(
        addr,
        "POST",
        "/mcp",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        Some(body.as_bytes()),
    );
    assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
    resp.json()
}

#[test]
fn mcp_over_http_waits_and_wakes() {
    let c = cast();
    let s = Server::start(&c.forum.db, Some(SETTINGS), &[]);
    let cursor = end_cursor(&s, "/v1/inbox", &c.bob);
    let feed = end_cursor(&s, "/v1/messages", &c.bob);
    let addr = s.addr;
    std::thread::scope(|scope| {
        let legacy = scope.spawn(|| {
            mcp_call(
                addr,
                &c.bob,
                7,
                "get_inbox",
                json!({"since": cursor, "wait_ms": 20000}),
            )
        });
        // The stateless revision, with its headers.
        let modern = scope.spawn(|| {
            let auth = format!("Bearer {}", c.bob);
            let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
            let body = rpc(
                8,
                "tools/call",
                json!({"name": "get_messages", "arguments": {"wait_ms": 20000, "since": feed}, "_meta": meta}),
            );
            let headers = [
                ("Authorization", auth.as_str()),
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "get_messages"),
            ];
            http(addr, "POST", "/mcp", &headers, Some(body.as_bytes())).json()
        });
        // Whether the waiters have begun or not, the post is seen: a commit
        // before a wait begins is seen by its first read.
        std::thread::sleep(Duration::from_millis(200));
        ask_bob(&s, &c.alice, "Over MCP?");
        let legacy = legacy.join().unwrap();
        assert_eq!(legacy["id"], 7);
        assert_eq!(legacy["result"]["isError"], false);
        assert_eq!(items(&legacy["result"]["structuredContent"]), 1, "{legacy}");
        let modern = modern.join().unwrap();
        assert_eq!(modern["id"], 8);
        assert_eq!(modern["result"]["resultType"], "complete");
        assert_eq!(items(&modern["result"]["structuredContent"]), 1, "{modern}");
    });
    // A wait that times out: the plain, empty result.
    let cursor = end_cursor(&s, "/v1/inbox", &c.bob);
    let empty = mcp_call(
        s.addr,
        &c.bob,
        9,
        "get_inbox",
        json!({"since": cursor, "wait_ms": 200}),
    );
    assert_eq!(empty["result"]["isError"], false);
    assert_eq!(empty["result"]["structuredContent"]["items"], json!([]));
    // The engine judges wait_ms; the token comes first.
    let bad = mcp_call(s.addr, &c.bob, 10, "get_events", json!({"wait_ms": -5}));
    assert_eq!(
        bad["result"]["structuredContent"]["error"]["field"],
        "wait_ms"
    );
    let auth = rpc(
        11,
        "tools/call",
        json!({"name": "get_events", "arguments": {"wait_ms": -5}}),
    );
    let anon = http(s.addr, "POST", "/mcp", &[], Some(auth.as_bytes())).json();
    assert_eq!(
        anon["result"]["structuredContent"]["error"]["reason"],
        "token_missing"
    );
}

#[test]
fn two_hundred_waiters_do_not_keep_a_normal_request_waiting() {
    const WAITERS: usize = 200;
    let c = cast();
    let s = Server::start(&c.forum.db, Some(SETTINGS), &[]);
    let cursor = end_cursor(&s, "/v1/inbox", &c.bob);
    let path = format!("/v1/inbox?since={cursor}&wait_ms=30000");
    let waiters: Vec<TcpStream> = (0..WAITERS)
        .map(|_| send_get(s.addr, &path, &c.bob))
        .collect();
    // Each waiter holds a connection, not a thread: the server still answers,
    // reads and posts alike (each bounded by the client's 60 s read timeout).
    let manifest = s.get("/v1/manifest", None);
    assert_eq!(manifest.status, 200);
    let mine = s.get("/v1/messages", Some(&c.alice));
    assert_eq!(mine.status, 200);
    let first = ask_bob(&s, &c.alice, "Everyone awake?");
    assert_eq!(first["thread"]["state"], "open");
    let mut woke = 0;
    for stream in waiters {
        let resp = answer(stream);
        assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
        assert_eq!(items(&resp.json()), 1);
        woke += 1;
    }
    assert_eq!(woke, WAITERS);
}

#[test]
fn no_connection_timeout_cuts_a_wait() {
    let c = cast();
    let s = Server::start(
        &c.forum.db,
        Some(SETTINGS),
        &["--header-timeout-ms", "200", "--idle-timeout-ms", "200"],
    );
    let cursor = end_cursor(&s, "/v1/events", &c.bob);
    let started = Instant::now();
    let resp = s.get(
        &format!("/v1/events?since={cursor}&wait_ms=1500"),
        Some(&c.bob),
    );
    assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
    assert_eq!(items(&resp.json()), 0);
    // It waited its time out: longer than both connection timeouts.
    assert!(started.elapsed() >= Duration::from_millis(1400));
}

#[test]
fn get_messages_is_a_rest_route() {
    let c = cast();
    let s = Server::start(&c.forum.db, Some(SETTINGS), &[]);
    let one = ask_bob(&s, &c.alice, "First thread?");
    ask_bob(&s, &c.alice, "Second thread?");
    let thread = one["thread"]["id"].as_str().unwrap();
    let reply = json!({"kind": "answer", "thread": thread, "body": "Yes."}).to_string();
    assert_eq!(s.post("/v1/messages", Some(&c.bob), &reply).status, 201);

    let all = s.get("/v1/messages", Some(&c.bob)).json();
    let bodies: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["body"].as_str().unwrap())
        .collect();
    assert_eq!(bodies, ["First thread?", "Second thread?", "Yes."]);
    let page = s.get("/v1/messages?limit=1", Some(&c.bob)).json();
    assert_eq!((items(&page), page["more"].as_bool()), (1, Some(true)));
    let rest = s.get(
        &format!("/v1/messages?since={}", page["cursor"].as_str().unwrap()),
        Some(&c.bob),
    );
    assert_eq!(items(&rest.json()), 2);
    let of_thread = s.get(&format!("/v1/messages?thread={thread}"), Some(&c.bob));
    assert_eq!(items(&of_thread.json()), 2);
    let inbox_cursor = end_cursor(&s, "/v1/inbox", &c.bob);
    let wrong = s.get(&format!("/v1/messages?since={inbox_cursor}"), Some(&c.bob));
    assert_eq!(
        (wrong.status, wrong.reason().as_str()),
        (400, "invalid_cursor")
    );
    let anon = s.get("/v1/messages", None);
    assert_eq!(anon.status, 401);
}

#[test]
fn search_is_a_rest_route_when_the_engine_has_it() {
    let c = cast();
    let s = Server::start(&c.forum.db, Some(SETTINGS), &[]);
    ask_bob(&s, &c.alice, "Which port does the dev server use?");
    ask_bob(&s, &c.alice, "Which branch is released?");
    let resp = s.get("/v1/search?q=which%20port", Some(&c.bob));
    if !parley_forum::OPERATIONS.contains(&"search") {
        assert_eq!(
            (resp.status, resp.reason().as_str()),
            (404, "unknown_operation")
        );
        return;
    }
    assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
    let found = resp.json();
    assert_eq!(items(&found), 1);
    assert_eq!(
        found["items"][0]["message"]["body"],
        "Which port does the dev server use?"
    );
    let both = s.get("/v1/search?q=which&limit=1", Some(&c.bob)).json();
    assert_eq!(
        both["items"][0]["message"]["body"],
        "Which branch is released?"
    );
    let older = s.get(
        &format!(
            "/v1/search?q=which&since={}",
            both["cursor"].as_str().unwrap()
        ),
        Some(&c.bob),
    );
    assert_eq!(
        older.json()["items"][0]["message"]["body"],
        "Which port does the dev server use?"
    );
    let none = s.get("/v1/search", Some(&c.bob));
    assert_eq!(
        (none.status, none.reason().as_str()),
        (400, "invalid_argument")
    );
    assert_eq!(s.get("/v1/search?q=port", None).status, 401);
}

/// `POST /v1/messages` with extra headers.
fn post_with(
    server: &Server,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: &str,
) -> Response {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut all: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    all.push(("Content-Type", "application/json"));
    all.extend_from_slice(headers);
    http(
        server.addr,
        "POST",
        "/v1/messages",
        &all,
        Some(body.as_bytes()),
    )
}

#[test]
fn the_idempotency_key_header_is_the_envelope_field() {
    let c = cast();
    let s = Server::start(&c.forum.db, Some(SETTINGS), &[]);
    let ask = r#"{"kind":"ask","body":"Once only?"}"#;
    let first = post_with(&s, Some(&c.alice), &[("Idempotency-Key", "k-1")], ask);
    assert_eq!(
        first.status,
        201,
        "{}",
        String::from_utf8_lossy(&first.body)
    );
    assert!(first.json().get("replayed").is_none());
    let again = post_with(&s, Some(&c.alice), &[("Idempotency-Key", "k-1")], ask);
    assert_eq!(again.json()["replayed"], true);
    assert_eq!(again.json()["message"]["id"], first.json()["message"]["id"]);
    // The same key in the envelope is the same post.
    let keyed = r#"{"kind":"ask","body":"Once only?","idempotency_key":"k-1"}"#;
    let same = post_with(&s, Some(&c.alice), &[("Idempotency-Key", "k-1")], keyed);
    assert_eq!(same.json()["replayed"], true);
    let in_body = post_with(&s, Some(&c.alice), &[], keyed);
    assert_eq!(in_body.json()["replayed"], true);
    // Another envelope under the key: the engine's conflict.
    let other = post_with(
        &s,
        Some(&c.alice),
        &[("Idempotency-Key", "k-1")],
        r#"{"kind":"ask","body":"Something else?"}"#,
    );
    assert_eq!(
        (other.status, other.reason().as_str()),
        (409, "idempotency_conflict")
    );
    // Header and envelope differ: invalid_body, after the token.
    let differ = post_with(&s, Some(&c.alice), &[("Idempotency-Key", "k-2")], keyed);
    assert_eq!(
        (differ.status, differ.reason().as_str()),
        (400, "invalid_body")
    );
    assert_eq!(differ.json()["error"]["field"], "idempotency_key");
    let anon = post_with(&s, None, &[("Idempotency-Key", "k-2")], keyed);
    assert_eq!(
        (anon.status, anon.reason().as_str()),
        (401, "token_missing")
    );
    let forged = post_with(&s, Some("pt_forged"), &[("Idempotency-Key", "k-2")], keyed);
    assert_eq!(
        (forged.status, forged.reason().as_str()),
        (401, "token_invalid")
    );
    // The key's syntax is the engine's to judge.
    let bad = post_with(&s, Some(&c.alice), &[("Idempotency-Key", "no spaces")], ask);
    assert_eq!((bad.status, bad.reason().as_str()), (400, "invalid_body"));
    let messages = s.get("/v1/messages", Some(&c.alice)).json();
    assert_eq!(items(&messages), 1);
}

#[test]
fn a_post_whose_answer_was_lost_is_retried_into_exactly_one_post() {
    let c = cast();
    let s = Server::start(&c.forum.db, Some(SETTINGS), &[]);
    let body = r#"{"kind":"ask","body":"Did this arrive?"}"#;
    // The client sends the post whole and goes away before reading the answer.
    {
        let mut stream = connect(s.addr);
        let raw = format!(
            "POST /v1/messages HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nIdempotency-Key: lost-1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            s.addr,
            c.alice,
            body.len()
        );
        stream.write_all(raw.as_bytes()).unwrap();
        let _ = stream.shutdown(std::net::Shutdown::Both);
    }
    // Until the post lands, if it does (the server may also have dropped the
    // request before the engine had it; the retry then posts it).
    let deadline = Instant::now() + Duration::from_secs(3);
    while items(&s.get("/v1/messages", Some(&c.alice)).json()) == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let landed = items(&s.get("/v1/messages", Some(&c.alice)).json()) == 1;
    let retry = post_with(&s, Some(&c.alice), &[("Idempotency-Key", "lost-1")], body);
    assert_eq!(
        retry.status,
        201,
        "{}",
        String::from_utf8_lossy(&retry.body)
    );
    assert_eq!(retry.json()["replayed"].as_bool().unwrap_or(false), landed);
    let again = post_with(&s, Some(&c.alice), &[("Idempotency-Key", "lost-1")], body);
    assert_eq!(again.json()["replayed"], true);
    let messages = s.get("/v1/messages", Some(&c.alice)).json();
    assert_eq!(items(&messages), 1, "exactly one post: {messages}");
    assert_eq!(messages["items"][0]["id"], retry.json()["message"]["id"]);
}
