//! Bounded loopback load: concurrent clients posting and reading over HTTP, then a
//! check of the forum file itself that every acknowledged post is there exactly once.
//! A second run stops the server with SIGTERM while clients are writing.

mod common;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::{http, try_http, Server, TempForum};
use parley_forum::{Config, Forum};
use serde_json::{json, Value};

const CLIENTS: usize = 16;
const POSTS_PER_CLIENT: usize = 12;
/// Most posts a client sends in the shutdown test.
const ROUNDS: usize = 5000;
const SETTINGS: &str = r#"{"limits":{"writes_per_minute":0}}"#;

/// An acknowledged post: the ids the server returned and the body sent.
#[derive(Debug, Clone)]
struct Ack {
    message: String,
    thread: String,
    body: String,
}

fn post(
    addr: std::net::SocketAddr,
    token: &str,
    body: &Value,
) -> std::io::Result<common::Response> {
    let auth = format!("Bearer {token}");
    let text = body.to_string();
    try_http(
        addr,
        "POST",
        "/v1/messages",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        Some(text.as_bytes()),
    )
}

/// Four agents, each shared by four clients told apart by their extension.
fn agents(forum: &TempForum) -> Vec<String> {
    (0..4)
        .map(|i| forum.token(&format!("agent{i}"), &[]))
        .collect()
}

#[test]
fn concurrent_clients_post_and_read_and_nothing_is_lost() {
    let forum = TempForum::new();
    let tokens = agents(&forum);
    let auditor = forum.token("auditor", &["--rights", "read"]);
    let server = Server::start(&forum.db, Some(SETTINGS), &[]);
    let addr = server.addr;
    let start = Arc::new(Barrier::new(CLIENTS));
    let handles: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let token = tokens[c % tokens.len()].clone();
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                start.wait();
                let auth = format!("Bearer {token}");
                let mut acks = Vec::new();
                for i in 0..POSTS_PER_CLIENT {
                    let body = format!("Client {c} asks question {i}?");
                    let envelope = json!({"kind": "ask", "body": body, "from": {"extension": format!("c{c}")}});
                    let resp = post(addr, &token, &envelope).expect("post");
                    assert_eq!(resp.status, 201, "{}", String::from_utf8_lossy(&resp.body));
                    let result = resp.json();
                    let ack = Ack {
                        message: result["message"]["id"].as_str().unwrap().to_string(),
                        thread: result["thread"]["id"].as_str().unwrap().to_string(),
                        body,
                    };
                    let read = http(addr, "GET", &format!("/v1/threads/{}", ack.thread), &[("Authorization", &auth)], None);
                    assert_eq!(read.status, 200);
                    assert_eq!(read.json()["messages"][0]["id"], ack.message.as_str());
                    assert_eq!(read.json()["messages"][0]["body"], ack.body.as_str());
                    if i % 4 == 0 {
                        let list = http(addr, "GET", "/v1/threads?limit=5", &[("Authorization", &auth)], None);
                        assert_eq!(list.status, 200);
                        let inbox = http(addr, "GET", "/v1/inbox?limit=5", &[("Authorization", &auth)], None);
                        assert_eq!(inbox.status, 200);
                    }
                    acks.push(ack);
                }
                acks
            })
        })
        .collect();
    let acks: Vec<Ack> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("client thread"))
        .collect();
    assert_eq!(acks.len(), CLIENTS * POSTS_PER_CLIENT);
    let log = server.terminate();
    assert!(log.iter().any(|l| l.contains("stopped")), "{log:?}");
    audit(&forum.db, &auditor, &acks, true);
}

#[test]
fn sigterm_finishes_requests_in_flight_and_loses_no_acknowledged_write() {
    let forum = TempForum::new();
    let tokens = agents(&forum);
    let auditor = forum.token("auditor", &["--rights", "read"]);
    let server = Server::start(&forum.db, Some(SETTINGS), &[]);
    let addr = server.addr;
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let token = tokens[c % tokens.len()].clone();
            let (stop, acked) = (Arc::clone(&stop), Arc::clone(&acked));
            std::thread::spawn(move || {
                let mut acks = Vec::new();
                // Bounded, and far more than are posted before the shutdown below.
                for i in 0..ROUNDS {
                    let body = format!("Client {c} keeps asking, round {i}?");
                    let envelope = json!({"kind": "ask", "body": body, "from": {"extension": format!("c{c}")}});
                    match post(addr, &token, &envelope) {
                        Ok(resp) => {
                            assert_eq!(resp.status, 201, "{}", String::from_utf8_lossy(&resp.body));
                            let result = resp.json();
                            acks.push(Ack {
                                message: result["message"]["id"].as_str().unwrap().to_string(),
                                thread: result["thread"]["id"].as_str().unwrap().to_string(),
                                body,
                            });
                            acked.fetch_add(1, Ordering::SeqCst);
                        }
                        // After shutdown began: refused connections, or one accepted by the
                        // kernel but never by the server. Neither was acknowledged.
                        Err(_) if stop.load(Ordering::SeqCst) => break,
                        Err(e) => panic!("request failed before shutdown: {e}"),
                    }
                }
                acks
            })
        })
        .collect();
    // The shutdown comes once the clients are well under way: after a count of
    // acknowledgements, not a time, so a faster server cannot finish first.
    let began = Instant::now();
    while acked.load(Ordering::SeqCst) < CLIENTS * 10 {
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "the clients made no progress"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    stop.store(true, Ordering::SeqCst);
    server.terminate();
    let acks: Vec<Ack> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("client thread"))
        .collect();
    assert!(!acks.is_empty(), "no post was acknowledged before shutdown");
    assert!(
        acks.len() < CLIENTS * ROUNDS,
        "the shutdown came only after every client was done"
    );
    eprintln!("{} posts acknowledged before the shutdown", acks.len());
    audit(&forum.db, &auditor, &acks, false);
}

/// Opens the forum file (the server has exited) and checks that every acknowledged
/// post is stored exactly once with its body. With `exact`, no other post exists.
fn audit(db: &Path, auditor: &str, acks: &[Ack], exact: bool) {
    let forum = Forum::open(db, Config::default()).expect("reopen the forum");
    let mut threads: HashMap<String, usize> = HashMap::new();
    let mut since: Option<String> = None;
    for _ in 0..1000 {
        let mut args = json!({"limit": 200});
        if let Some(cursor) = &since {
            args["since"] = json!(cursor);
        }
        let page = forum.call(Some(auditor), "list_threads", &args).unwrap();
        for item in page["items"].as_array().unwrap() {
            *threads
                .entry(item["id"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
        if page["more"] != true {
            break;
        }
        since = Some(page["cursor"].as_str().unwrap().to_string());
    }
    assert!(threads.values().all(|&n| n == 1), "a thread listed twice");
    let mut seen_messages = HashSet::new();
    for ack in acks {
        assert_eq!(
            threads.get(&ack.thread),
            Some(&1),
            "acknowledged {} missing",
            ack.thread
        );
        let view = forum
            .call(Some(auditor), "get_thread", &json!({"thread": ack.thread}))
            .unwrap();
        assert_eq!(view["thread"]["message_count"], 1);
        assert_eq!(view["messages"][0]["id"], ack.message.as_str());
        assert_eq!(view["messages"][0]["body"], ack.body.as_str());
        assert!(
            seen_messages.insert(ack.message.clone()),
            "{} acknowledged twice",
            ack.message
        );
    }
    if exact {
        assert_eq!(threads.len(), acks.len());
    } else {
        assert!(threads.len() >= acks.len());
    }
}

#[test]
fn a_stalled_client_cannot_hold_the_shutdown_forever() {
    use std::io::Write;
    use std::time::Instant;

    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let server = Server::start(&forum.db, None, &["--shutdown-grace-ms", "300"]);
    let done = post(
        server.addr,
        &alice,
        &json!({"kind": "ask", "body": "Before the stall?"}),
    )
    .unwrap();
    assert_eq!(done.status, 201);
    // Headers announce 100 bytes of body; only 10 arrive, and the client goes quiet.
    let mut stalled = std::net::TcpStream::connect(server.addr).unwrap();
    // An allowed Host and a good token: a refused one would be answered (421,
    // 401) at once, not stall.
    let head = format!(
        "POST /v1/messages HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {alice}\r\nContent-Length: 100\r\n\r\n0123456789",
        server.addr
    );
    stalled.write_all(head.as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    let log = server.terminate();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert!(log.iter().any(|l| l.contains("closing them")), "{log:?}");
    drop(stalled);
    let reopened = Forum::open(&forum.db, Config::default()).unwrap();
    let threads = reopened
        .call(Some(&alice), "list_threads", &json!({}))
        .unwrap();
    assert_eq!(threads["items"].as_array().unwrap().len(), 1);
}
