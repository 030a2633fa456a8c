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
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::connection_cap::{assert_cap_refusal, normal_client, served_eventually};
use common::{connect, parse, wait_for_close, Ending, Server, TempForum};

/// Far longer than any close or answer these tests wait for takes.
const BOUND: Duration = Duration::from_secs(30);

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
