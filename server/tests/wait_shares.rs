//! One token's share of the places for waiting reads and event streams: a token
//! that holds its share is refused more (503 `too_many_waits`), and every other
//! token still waits.
//!
//! The server runs in this process on a loopback port; the clients are raw sockets.

mod support;
mod web_client;

use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{http, Server, TempForum};

/// Opens an event stream of `token`; the open socket once its head says 200,
/// else the whole refusal.
fn stream(addr: SocketAddr, token: &str) -> Result<TcpStream, support::Response> {
    let auth = format!("Authorization: Bearer {token}");
    open(addr, "/v1/events/stream", &auth)
}

/// Opens the stream at `path` with one more header line; as [`stream`].
fn open(addr: SocketAddr, path: &str, header: &str) -> Result<TcpStream, support::Response> {
    support::sse_client::open_event_stream(addr, path, &[header.to_string()])
        .map(std::io::BufReader::into_inner)
}

fn assert_share_refusal(resp: &support::Response) {
    assert_eq!(
        resp.status,
        503,
        "{:?}",
        String::from_utf8_lossy(&resp.body)
    );
    assert_eq!(resp.reason(), "too_many_waits");
    assert_eq!(resp.header("retry-after"), Some("1"));
    let message = resp.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("--max-waits-per-token"), "{message}");
}

#[test]
fn one_token_holding_every_stream_it_can_leaves_the_others_room_to_wait() {
    let forum = TempForum::new();
    let hog = forum.token("hog", &["--rights", "read"]);
    let carol = forum.token("carol", &[]);
    let server = Server::start(&forum.db, None, &["--max-waits", "40"]);
    let addr = server.addr;
    // Forty streams of one read-only token: a quarter of the places are its share.
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..40 {
        match stream(addr, &hog) {
            Ok(s) => held.push(s),
            Err(resp) => {
                assert_share_refusal(&resp);
                refused += 1;
            }
        }
    }
    assert_eq!((held.len(), refused), (10, 30));
    // Its own long poll is past its share too…
    let hog_auth = format!("Bearer {hog}");
    let waited = http(
        addr,
        "GET",
        "/v1/inbox?wait_ms=1000",
        &[("Authorization", &hog_auth)],
        None,
    );
    assert_share_refusal(&waited);

    // …while another agent waits for its turn as before: a wait that runs out empty.
    let auth = format!("Bearer {carol}");
    let began = Instant::now();
    let waited = http(
        addr,
        "GET",
        "/v1/inbox?wait_ms=1000",
        &[("Authorization", &auth)],
        None,
    );
    assert_eq!(
        waited.status,
        200,
        "{:?}",
        String::from_utf8_lossy(&waited.body)
    );
    assert_eq!(waited.json()["items"], json!([]));
    assert!(
        began.elapsed() >= Duration::from_millis(900),
        "it did not wait"
    );
    // And over MCP.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "get_inbox", "arguments": {"wait_ms": 200}}})
    .to_string();
    let mcp = http(
        addr,
        "POST",
        "/mcp",
        &[("Authorization", &auth)],
        Some(body.as_bytes()),
    );
    assert_eq!(mcp.status, 200);
    assert_ne!(mcp.json()["result"]["isError"], true, "{}", mcp.json());
    assert_eq!(
        mcp.json()["result"]["structuredContent"]["items"],
        json!([])
    );

    // A stream of the hog that ends gives its place back to it.
    held.pop();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match stream(addr, &hog) {
            Ok(s) => {
                held.push(s);
                break;
            }
            Err(resp) => assert_share_refusal(&resp),
        }
        assert!(Instant::now() < deadline, "the place never came back");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(held);
}

#[test]
fn the_web_views_live_updates_count_against_the_persons_token() {
    let forum = TempForum::new();
    let ann = forum.token("ann", &["--human"]);
    let bob = forum.token("bob", &[]);
    let server = Server::start(
        &forum.db,
        None,
        &["--max-waits", "8", "--max-waits-per-token", "2"],
    );
    let addr = server.addr;
    let browser = web_client::Browser::signed_in(&server, &ann);
    let cookie = format!("Cookie: parley_session={}", browser.session().unwrap());
    // Two pages following the forum: the person's share.
    let pages: Vec<TcpStream> = (0..2)
        .map(|_| open(addr, "/live", &cookie).unwrap())
        .collect();
    let third = open(addr, "/live", &cookie).expect_err("past the share");
    assert_eq!(third.status, 503);
    assert!(
        String::from_utf8_lossy(&third.body).contains("too_many_waits"),
        "{:?}",
        String::from_utf8_lossy(&third.body)
    );
    // The same token over REST is past its share too; another token is not.
    assert_share_refusal(&stream(addr, &ann).err().unwrap());
    let other = stream(addr, &bob).unwrap();
    drop((pages, other));
}
