//! Server-Sent Events (`GET /v1/{events,inbox,messages}/stream`) through the built
//! binary: each item one event whose id is the cursor after it, a resume after a
//! dropped connection that loses and repeats nothing, heartbeats, the token checked
//! at connect, the cap on waits and streams, and a shutdown that ends a hundred
//! waits and streams within its grace period without losing an acknowledged post.
//!
//! Here, the tests that need the real binary (its flags, its log, its signals);
//! the others run in process, in `server/tests/sse.rs`.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::sse_client::{open, Stream};
use common::{connect, parse, Server, TempForum};
use parley_forum::{Config, Forum};
use serde_json::{json, Value};

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

#[test]
fn max_waits_must_leave_room_for_other_requests() {
    let forum = TempForum::new();
    let out = forum.run(&[
        "serve",
        "--http",
        "127.0.0.1:0",
        "--max-connections",
        "10",
        "--max-waits",
        "10",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--max-waits 10 must be below --max-connections 10"),
        "{err}"
    );
    for bad in ["0", "many"] {
        let out = forum.run(&["serve", "--http", "127.0.0.1:0", "--max-waits", bad]);
        assert_eq!(out.status.code(), Some(2), "--max-waits {bad}");
    }
    let out = forum.run(&["serve", "--http", "127.0.0.1:0", "--heartbeat-ms", "0"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Whether the server has answered (or closed) a connection.
fn answered(stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let peeked = stream.peek(&mut [0u8; 1]);
    stream.set_nonblocking(false).unwrap();
    !matches!(peeked, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

#[test]
fn shutdown_ends_a_hundred_waits_and_streams_within_grace_and_keeps_every_acknowledged_post() {
    const WAITS: usize = 50;
    const STREAMS: usize = 50;
    const WRITERS: usize = 4;
    let c = cast();
    let s = Server::start(
        &c.forum.db,
        Some(SETTINGS),
        &[
            "--shutdown-grace-ms",
            "20000",
            "--heartbeat-ms",
            "60000",
            "--max-waits",
            &(WAITS + STREAMS).to_string(),
            // Bob holds every place: his share is the whole cap.
            "--max-waits-per-token",
            &(WAITS + STREAMS).to_string(),
        ],
    );
    // Bob asks; alice's writers reply to his question (never to themselves).
    let asked = post(&s, &c.bob, json!({"kind": "ask", "body": "Hold on?"}));
    let parent = asked["message"]["id"].as_str().unwrap().to_string();
    let cursor = s.get("/v1/inbox", Some(&c.bob)).json()["cursor"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/v1/inbox?since={cursor}&wait_ms=30000");
    let send_wait = || {
        let mut stream = connect(s.addr);
        let raw = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
            s.addr, c.bob
        );
        stream.write_all(raw.as_bytes()).unwrap();
        stream
    };
    let mut streams: Vec<Stream> = (0..STREAMS)
        .map(|i| {
            let route = ["/v1/events/stream", "/v1/messages/stream"][i % 2];
            open(s.addr, route, Some(&c.bob), None).unwrap()
        })
        .collect();
    let mut waits: Vec<TcpStream> = (0..WAITS).map(|_| send_wait()).collect();
    // Every place taken means every wait is waiting: one more is refused. (A probe
    // holds a place for its millisecond; a wait refused meanwhile is sent again.)
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for wait in waits.iter_mut() {
            if answered(wait) {
                *wait = send_wait();
            }
        }
        let probe = s.get(&format!("/v1/inbox?since={cursor}&wait_ms=1"), Some(&c.bob));
        if probe.status == 503 {
            break;
        }
        assert!(Instant::now() < deadline, "the waits never all began");
        std::thread::sleep(Duration::from_millis(20));
    }
    let addr = s.addr;
    let (log, acked) = std::thread::scope(|scope| {
        // Writers post until the server stops answering.
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (parent, alice) = (&parent, &c.alice);
                scope.spawn(move || {
                    let auth = format!("Bearer {alice}");
                    let mut acked = Vec::new();
                    for n in 0.. {
                        let body =
                            json!({"kind": "note", "parent": parent, "body": format!("w{w} n{n}")})
                                .to_string();
                        let headers = [
                            ("Authorization", auth.as_str()),
                            ("Content-Type", "application/json"),
                        ];
                        match common::try_http(
                            addr,
                            "POST",
                            "/v1/messages",
                            &headers,
                            Some(body.as_bytes()),
                        ) {
                            Ok(r) if r.status == 201 => {
                                acked.push(r.json()["message"]["id"].as_str().unwrap().to_string())
                            }
                            _ => break,
                        }
                    }
                    acked
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        let log = s.terminate();
        let acked: Vec<String> = writers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        (log, acked)
    });
    // Within the grace period: nothing had to be cut.
    assert!(
        !log.iter().any(|l| l.contains("still open after")),
        "{log:?}"
    );
    // Every wait answered with its current result, every stream ended cleanly.
    for stream in waits {
        let mut stream = stream;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).unwrap();
        let resp = parse(&raw).expect("a whole answer");
        assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
        assert!(resp.json()["items"].is_array());
    }
    for stream in &mut streams {
        let (events, ended) = stream.drain(Duration::from_secs(30));
        assert!(ended, "the stream ended");
        assert!(
            events.iter().all(|e| e.event.as_deref() != Some("error")),
            "{events:?}"
        );
    }
    // Every acknowledged post is in the file.
    let forum = Forum::open(&c.forum.db, Config::default()).unwrap();
    let mut stored = std::collections::HashSet::new();
    let mut args = json!({"limit": 200});
    loop {
        let page = forum.call(Some(&c.alice), "get_messages", &args).unwrap();
        for m in page["items"].as_array().unwrap() {
            stored.insert(m["id"].as_str().unwrap().to_string());
        }
        args["since"] = page["cursor"].clone();
        if page["more"] != true {
            break;
        }
    }
    assert!(!acked.is_empty());
    for id in &acked {
        assert!(stored.contains(id), "acknowledged {id} is lost");
    }
}
