//! One token's share of the places for waiting reads and event streams: a token
//! that holds its share is refused more (503 `too_many_waits`), and every other
//! token still waits.
//!
//! The server is the built binary on a loopback port; the clients are raw sockets.
//!
//! Here, the tests that need the real binary (its flags, its log, its signals);
//! the others run in process, in `server/tests/wait_shares.rs`.

mod common;
// The web client of the server's own tests, which names its harness `support`.
use common as support;
#[path = "../../../server/tests/web_client/mod.rs"]
mod web_client;

use std::net::{SocketAddr, TcpStream};

use common::{Server, TempForum};

/// Opens an event stream of `token`; the open socket once its head says 200,
/// else the whole refusal.
fn stream(addr: SocketAddr, token: &str) -> Result<TcpStream, common::Response> {
    let auth = format!("Authorization: Bearer {token}");
    open(addr, "/v1/events/stream", &auth)
}

/// Opens the stream at `path` with one more header line; as [`stream`].
fn open(addr: SocketAddr, path: &str, header: &str) -> Result<TcpStream, common::Response> {
    common::sse_client::open_event_stream(addr, path, &[header.to_string()])
        .map(std::io::BufReader::into_inner)
}

fn assert_share_refusal(resp: &common::Response) {
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
fn the_share_is_a_flag() {
    let forum = TempForum::new();
    let hog = forum.token("hog", &["--rights", "read"]);
    let server = Server::start(
        &forum.db,
        None,
        &["--max-waits", "40", "--max-waits-per-token", "3"],
    );
    let held: Vec<TcpStream> = (0..3).map(|_| stream(server.addr, &hog).unwrap()).collect();
    assert_share_refusal(&stream(server.addr, &hog).err().unwrap());
    drop(held);
    for value in ["0", "some"] {
        let out = forum.run(&[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--max-waits-per-token",
            value,
        ]);
        assert_eq!(out.status.code(), Some(2), "{value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--max-waits-per-token"), "{err}");
    }
}
