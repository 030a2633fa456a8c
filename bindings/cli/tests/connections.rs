//! The HTTP server's hold on connections: the header-read timeout, the idle
//! keep-alive timeout, and the cap on concurrent connections with its 503.
//!
//! Bounds here are "does not hang" limits, many times what the server needs; no
//! test measures how fast anything is.
//!
//! Here, the tests that need the real binary (its flags, its log, its signals);
//! the others run in process, in `server/tests/connections.rs`.

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{connect, parse, try_http, wait_for_close, Ending, Response, Server, TempForum};

/// Far longer than any close or answer these tests wait for takes.
const BOUND: Duration = Duration::from_secs(30);

/// Checks that `resp` is the cap's refusal: 503, `Retry-After`, a JSON error body
/// with the stable reason, and the connection closed.
fn assert_cap_refusal(resp: &Response) {
    assert_eq!(
        resp.status,
        503,
        "{:?}",
        String::from_utf8_lossy(&resp.body)
    );
    let retry: u64 = resp
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("Retry-After in seconds");
    assert!(retry >= 1);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    assert_eq!(resp.header("connection"), Some("close"));
    let body = resp.json();
    assert_eq!(body["error"]["reason"], "too_many_connections");
    assert_eq!(body["error"]["status"], 503);
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("connections")));
}

/// One request from a well-behaved client: `Ok(200)` once it is served, the
/// response when it is refused (a 503 from the cap).
fn normal_client(addr: SocketAddr) -> Result<(), Response> {
    let resp = try_http(addr, "GET", "/v1/manifest", &[], None).expect("an answer, not a hang");
    if resp.status == 200 {
        assert_eq!(resp.json()["parley"], "1");
        Ok(())
    } else {
        Err(resp)
    }
}

/// Retries a normal client until it is served, checking every refusal on the way.
fn served_eventually(addr: SocketAddr) -> usize {
    let began = Instant::now();
    let mut refusals = 0;
    loop {
        match normal_client(addr) {
            Ok(()) => return refusals,
            Err(resp) => {
                assert_cap_refusal(&resp);
                refusals += 1;
            }
        }
        assert!(began.elapsed() < BOUND, "a normal client was never served");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn slowloris_connections_are_closed_and_a_normal_client_is_still_answered() {
    let forum = TempForum::new();
    let server = Server::start(
        &forum.db,
        None,
        &["--max-connections", "32", "--header-timeout-ms", "1000"],
    );
    let addr = server.addr;
    // 64 connections, twice the cap: even ones send nothing, odd ones a request line
    // and then one header line every 100 ms, never the blank line that ends the head.
    let mut idle: Vec<TcpStream> = Vec::new();
    for i in 0..64 {
        let mut stream = connect(addr);
        if i % 2 == 1 {
            stream
                .write_all(b"GET /v1/manifest HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                .unwrap();
        }
        idle.push(stream);
    }
    let trickled: Vec<TcpStream> = idle
        .iter()
        .skip(1)
        .step_by(2)
        .map(|s| s.try_clone().unwrap())
        .collect();
    let done = Arc::new(AtomicBool::new(false));
    let trickler = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut open: Vec<TcpStream> = trickled;
            let began = Instant::now();
            while !open.is_empty() && !done.load(Ordering::SeqCst) && began.elapsed() < BOUND {
                open.retain_mut(|s| s.write_all(b"X-Slow: a\r\n").is_ok());
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };

    // While they hold on, a normal client is answered: refused clearly while the cap
    // is full, served once the header timeout has closed the slow connections.
    let refusals = served_eventually(addr);
    eprintln!("a normal client was refused {refusals} times before it was served");

    // Every slow connection is closed: the first 32 (they filled the cap) by the
    // header timeout, without a byte; any past the cap with the 503.
    let mut silent = 0;
    for (i, stream) in idle.iter_mut().enumerate() {
        match wait_for_close(stream, BOUND) {
            Ending::Open => panic!("slow connection {i} is still open"),
            Ending::Closed(data) if data.is_empty() => silent += 1,
            Ending::Closed(data) => {
                assert_cap_refusal(&parse(&data).expect("an HTTP response"));
            }
        }
    }
    done.store(true, Ordering::SeqCst);
    trickler.join().unwrap();
    assert!(silent >= 32, "only {silent} connections held the cap");
    // And the server is whole afterwards.
    assert_eq!(normal_client(addr).map_err(|r| r.status), Ok(()));
    let log = server.terminate();
    assert!(log.iter().any(|l| l.contains("stopped")), "{log:?}");
}

#[test]
fn connection_flags_are_checked() {
    let forum = TempForum::new();
    for (flag, value) in [
        ("--max-connections", "0"),
        ("--header-timeout-ms", "0"),
        ("--idle-timeout-ms", "0"),
        ("--max-connections", "many"),
    ] {
        let out = forum.run(&["serve", "--http", "127.0.0.1:0", flag, value]);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(flag), "{err}");
    }
}
