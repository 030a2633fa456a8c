//! The HTTP server's hold on connections: the header-read timeout, the idle
//! keep-alive timeout, and the cap on concurrent connections with its 503.
//!
//! Bounds here are "does not hang" limits, many times what the server needs; no
//! test measures how fast anything is.

mod support;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use support::connection_cap::{assert_cap_refusal, normal_client, served_eventually};
use support::{connect, request_on, try_http, wait_for_close, Ending, Server, TempForum};

/// Far longer than any close or answer these tests wait for takes.
const BOUND: Duration = Duration::from_secs(30);

fn keep_alive_get(addr: SocketAddr) -> Vec<u8> {
    format!("GET /v1/manifest HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes()
}

#[test]
fn past_the_cap_a_connection_is_refused_with_503_and_a_reason() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let auth = format!("Bearer {alice}");
    let server = Server::start(
        &forum.db,
        None,
        &["--max-connections", "2", "--header-timeout-ms", "60000"],
    );
    let addr = server.addr;
    // Two clients keep their connections busy, a request every few milliseconds:
    // never idle nor stalled long enough for a newcomer to take their place.
    let stop = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = (0..2)
        .map(|_| {
            let stop = Arc::clone(&stop);
            let mut stream = connect(addr);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let resp = request_on(&mut stream, &keep_alive_get(addr)).unwrap();
                    assert_eq!(resp.status, 200);
                    std::thread::sleep(Duration::from_millis(10));
                }
                stream
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let refused = try_http(addr, "GET", "/v1/manifest", &[], None).expect("an answer");
    assert_cap_refusal(&refused);
    // A post past the cap is refused the same way, before it is read.
    let envelope = json!({"kind": "ask", "body": "Past the cap?"}).to_string();
    let posted = try_http(
        addr,
        "POST",
        "/v1/messages",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        Some(envelope.as_bytes()),
    )
    .expect("an answer");
    assert_cap_refusal(&posted);
    // The clients pause: their connections, kept alive and idle now, give way to
    // the next client, and the refused post was never stored.
    stop.store(true, Ordering::Relaxed);
    let _held: Vec<TcpStream> = busy.into_iter().map(|t| t.join().unwrap()).collect();
    served_eventually(addr);
    let threads = try_http(
        addr,
        "GET",
        "/v1/threads",
        &[("Authorization", &auth)],
        None,
    )
    .expect("an answer");
    assert_eq!(threads.status, 200);
    assert_eq!(threads.json()["items"], json!([]));
}

#[test]
fn idle_kept_alive_connections_give_way_to_a_new_client() {
    let forum = TempForum::new();
    let server = Server::start(
        &forum.db,
        None,
        &["--max-connections", "2", "--idle-timeout-ms", "60000"],
    );
    let addr = server.addr;
    // Two kept-alive connections, idle after one request each, fill the cap.
    let mut held: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut stream = connect(addr);
            let resp = request_on(&mut stream, &keep_alive_get(addr)).unwrap();
            assert_eq!(resp.status, 200);
            stream
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // A newcomer is served at once (within the half-second a place is waited for),
    // not refused until the idle timeout: the longest idle connection is closed.
    let began = Instant::now();
    assert_eq!(normal_client(addr).map_err(|r| r.status), Ok(()));
    assert!(
        began.elapsed() < Duration::from_secs(1),
        "{:?}",
        began.elapsed()
    );
    let closed = held
        .iter_mut()
        .map(|s| wait_for_close(s, Duration::from_secs(2)))
        .filter(|e| matches!(e, Ending::Closed(_)))
        .count();
    assert!(closed >= 1, "no idle connection gave way");
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let forum = TempForum::new();
    // The header timeout is far longer than the bound: only the idle timeout can
    // close this connection in time.
    let server = Server::start(
        &forum.db,
        None,
        &["--idle-timeout-ms", "300", "--header-timeout-ms", "120000"],
    );
    let mut stream = connect(server.addr);
    assert_eq!(
        request_on(&mut stream, &keep_alive_get(server.addr))
            .unwrap()
            .status,
        200
    );
    match wait_for_close(&mut stream, BOUND) {
        Ending::Closed(data) => assert!(data.is_empty(), "{data:?}"),
        Ending::Open => panic!("the idle connection was not closed"),
    }
}

#[test]
fn a_kept_alive_connection_outlives_the_header_timeout() {
    let forum = TempForum::new();
    // The header timeout counts from a request's first byte, not from the end of
    // the previous response: an idle connection waits for the idle timeout.
    let server = Server::start(&forum.db, None, &["--header-timeout-ms", "200"]);
    let mut stream = connect(server.addr);
    for _ in 0..2 {
        assert_eq!(
            request_on(&mut stream, &keep_alive_get(server.addr))
                .unwrap()
                .status,
            200
        );
        std::thread::sleep(Duration::from_millis(1000));
    }
    assert_eq!(
        request_on(&mut stream, &keep_alive_get(server.addr))
            .unwrap()
            .status,
        200
    );
}

#[test]
fn a_partial_head_on_a_kept_alive_connection_is_closed_by_the_header_timeout() {
    let forum = TempForum::new();
    // The idle timeout is far longer than the bound: once the next request has
    // begun, only the header timeout can close this connection in time.
    let server = Server::start(
        &forum.db,
        None,
        &["--header-timeout-ms", "300", "--idle-timeout-ms", "120000"],
    );
    let mut stream = connect(server.addr);
    let resp = request_on(&mut stream, &keep_alive_get(server.addr)).unwrap();
    assert_eq!(resp.status, 200);
    stream
        .write_all(b"GET /v1/manifest HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    match wait_for_close(&mut stream, BOUND) {
        Ending::Closed(data) => assert!(data.is_empty(), "{data:?}"),
        Ending::Open => panic!("the half-sent request was not cut"),
    }
}

#[test]
fn the_header_timeout_does_not_cut_a_slow_body() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let server = Server::start(&forum.db, None, &["--header-timeout-ms", "200"]);
    let body = json!({"kind": "ask", "body": "Slow, but whole?"}).to_string();
    let (first, rest) = body.as_bytes().split_at(10);
    let mut stream = connect(server.addr);
    let head = format!(
        "POST /v1/messages HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {alice}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        server.addr,
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(first).unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let resp = request_on(&mut stream, rest).unwrap();
    assert_eq!(
        resp.status,
        201,
        "{:?}",
        String::from_utf8_lossy(&resp.body)
    );
}
