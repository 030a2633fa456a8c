//! Request bodies that never arrive: the body timeout closes them, a full cap of
//! them gives way to a prompt client, and a request refused before its body is
//! read (a bad token, a host not allowed) is answered at once.
//!
//! The server is the built binary on a loopback port; the clients are raw sockets.
//! Bounds are "does not hang" limits, except the one second the prompt client is
//! promised.
//!
//! Here, the tests that need the real binary (its flags, its log, its signals);
//! the others run in process, in `server/tests/stalled_bodies.rs`.

mod common;

use std::io::Write;

use std::time::{Duration, Instant};

use common::{closed, stall, try_http, Server, TempForum};
use serde_json::json;

/// Far longer than any close or answer these tests wait for takes.
const BOUND: Duration = Duration::from_secs(30);

#[test]
fn a_full_cap_of_stalled_bodies_gives_way_to_a_prompt_client_and_times_out() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let timeout_ms = 3000;
    let server = Server::start(
        &forum.db,
        None,
        &[
            "--max-connections",
            "8",
            "--body-timeout-ms",
            &timeout_ms.to_string(),
        ],
    );
    let addr = server.addr;
    let host = addr.to_string();
    // Eight connections, the whole cap: posts and MCP calls with a good token,
    // each declaring 1000 bytes and sending one; half of them then trickle a byte
    // every 100 ms.
    let began = Instant::now();
    let stalled: Vec<std::thread::JoinHandle<(Duration, Option<common::Response>)>> = (0..8)
        .map(|i| {
            let path = if i % 2 == 0 { "/v1/messages" } else { "/mcp" };
            let mut stream = stall(addr, path, &host, Some(&alice));
            if i >= 4 {
                let mut trickle = stream.try_clone().unwrap();
                std::thread::spawn(move || {
                    while began.elapsed() < BOUND && trickle.write_all(b" ").is_ok() {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                });
            }
            std::thread::spawn(move || {
                let resp = closed(&mut stream, BOUND);
                (began.elapsed(), resp)
            })
        })
        .collect();
    // They have stalled for a moment.
    std::thread::sleep(Duration::from_millis(400));

    // A prompt client is served within a second, every time.
    for _ in 0..3 {
        let asked = Instant::now();
        let resp = try_http(addr, "GET", "/v1/manifest", &[], None).expect("an answer");
        let took = asked.elapsed();
        assert_eq!(
            resp.status,
            200,
            "{:?}",
            String::from_utf8_lossy(&resp.body)
        );
        assert_eq!(resp.json()["parley"], "1");
        assert!(took < Duration::from_secs(1), "served after {took:?}");
    }

    // Every stalled connection is closed without an answer: one gave way to the
    // prompt client, the rest lasted until their body timeout ran out.
    let mut by_timeout = 0;
    for waiter in stalled {
        let (at, resp) = waiter.join().unwrap();
        assert!(resp.is_none(), "a stalled request was answered: {resp:?}");
        if at >= Duration::from_millis(timeout_ms * 9 / 10) {
            by_timeout += 1;
        }
        assert!(
            at < Duration::from_millis(timeout_ms) + Duration::from_secs(10),
            "closed only after {at:?}"
        );
    }
    assert!(
        by_timeout >= 5,
        "only {by_timeout} lasted until the timeout"
    );
    // Nothing was posted, and the server is whole.
    let threads = try_http(
        addr,
        "GET",
        "/v1/threads",
        &[("Authorization", &format!("Bearer {alice}"))],
        None,
    )
    .unwrap();
    assert_eq!(threads.status, 200);
    assert_eq!(threads.json()["items"], json!([]));
    let log = server.terminate();
    assert!(log.iter().any(|l| l.contains("stopped")), "{log:?}");
}

#[test]
fn the_body_timeout_flag_is_checked() {
    let forum = TempForum::new();
    for value in ["0", "soon"] {
        let out = forum.run(&["serve", "--http", "127.0.0.1:0", "--body-timeout-ms", value]);
        assert_eq!(out.status.code(), Some(2), "{value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--body-timeout-ms"), "{err}");
    }
}
