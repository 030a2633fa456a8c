//! Event streams and waits against a server in this process, while the test acts
//! on the forum it serves (revoking a token, which the command line cannot do
//! while the file is held).

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use parley_forum::{Config, Forum, Right, TokenSpec};

use support::{default_options, Server};

/// Reads from `stream` until `want` has come, or the connection ends.
fn read_until(stream: &mut TcpStream, want: &str) -> String {
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains(want) {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.extend_from_slice(&chunk[..n]),
        }
    }
    String::from_utf8_lossy(&seen).into_owned()
}

fn get(server: &Server, path: &str, token: &str) -> TcpStream {
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let raw = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\r\n",
        server.addr
    );
    stream.write_all(raw.as_bytes()).unwrap();
    stream
}

#[test]
fn a_revoked_token_ends_its_stream_and_its_wait() {
    let forum = Forum::in_memory(Config::default()).unwrap();
    let rights = [Right::Read, Right::Write];
    let bob = forum.create_token(&TokenSpec::llm("bob", &rights)).unwrap();
    let server = Server::serve(forum, &default_options());
    let mut stream = get(&server, "/v1/messages/stream", &bob);
    let opened = read_until(&mut stream, "stream\n\n");
    assert!(opened.starts_with("HTTP/1.1 200"), "{opened}");
    let cursor = server
        .forum
        .call(Some(&bob), "get_inbox", &serde_json::Value::Null)
        .unwrap()["cursor"]
        .as_str()
        .unwrap()
        .to_string();
    let mut waiting = get(
        &server,
        &format!("/v1/inbox?since={cursor}&wait_ms=20000"),
        &bob,
    );
    // Whether the wait has begun or not, its next read is refused.
    std::thread::sleep(Duration::from_millis(100));
    assert!(server.forum.revoke_token(&bob).unwrap());

    // The stream: an error event with the refusal, then the end of the body.
    let ended = read_until(&mut stream, "0\r\n\r\n");
    assert!(ended.contains("event: error\ndata: "), "{ended}");
    assert!(ended.contains("\"reason\":\"token_invalid\""), "{ended}");
    assert!(ended.ends_with("0\r\n\r\n"), "{ended}");
    // The wait: the refusal, as a plain read would have it.
    let refused = read_until(&mut waiting, "token_invalid");
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
}
