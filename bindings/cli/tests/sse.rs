//! Server-Sent Events (`GET /v1/{events,inbox,messages}/stream`) through the built
//! binary: each item one event whose id is the cursor after it, a resume after a
//! dropped connection that loses and repeats nothing, heartbeats, the token checked
//! at connect, the cap on waits and streams, and a shutdown that ends a hundred
//! waits and streams within its grace period without losing an acknowledged post.
//!
//! Here, the tests that need the real binary (its flags, its log, its signals);
//! the others run in process, in `server/tests/sse.rs`.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::{connect, parse, Response, Server, TempForum};
use parley_forum::{Config, Forum};
use serde_json::{json, Value};

const SETTINGS: &str = r#"{"limits":{"writes_per_minute":0}}"#;

/// One event of a stream, or a comment.
#[derive(Debug, Default, Clone)]
struct Event {
    id: Option<String>,
    event: Option<String>,
    data: Option<String>,
    comment: Option<String>,
}

/// An open event stream: reads the chunked body event by event.
struct Stream {
    reader: BufReader<TcpStream>,
    text: String,
    ended: bool,
}

/// Opens `path` as a stream; `Err` is the answer of a refused one.
fn open(
    addr: SocketAddr,
    path: &str,
    token: Option<&str>,
    last_event_id: Option<&str>,
) -> Result<Stream, Response> {
    let mut stream = connect(addr);
    let mut raw = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n");
    if let Some(t) = token {
        raw.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    if let Some(id) = last_event_id {
        raw.push_str(&format!("Last-Event-ID: {id}\r\n"));
    }
    raw.push_str("\r\n");
    stream.write_all(raw.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "closed in the head: {head}"
        );
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let status: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    if status != 200 {
        let length: usize = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .map(|(_, v)| v.trim().parse().unwrap())
            .unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let mut raw = head.into_bytes();
        raw.extend_from_slice(&body);
        return Err(parse(&raw).unwrap());
    }
    let lower = head.to_ascii_lowercase();
    assert!(lower.contains("content-type: text/event-stream"), "{head}");
    assert!(lower.contains("transfer-encoding: chunked"), "{head}");
    Ok(Stream {
        reader,
        text: String::new(),
        ended: false,
    })
}

impl Stream {
    /// The next event or comment; `None` once the stream has ended.
    fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.text.find("\n\n") {
                let block: String = self.text.drain(..end + 2).collect();
                let mut event = Event::default();
                for line in block.lines() {
                    if let Some(c) = line.strip_prefix(':') {
                        event.comment = Some(c.trim().to_string());
                    } else if let Some((field, value)) = line.split_once(": ") {
                        match field {
                            "id" => event.id = Some(value.to_string()),
                            "event" => event.event = Some(value.to_string()),
                            "data" => event.data = Some(value.to_string()),
                            other => panic!("unexpected field {other}"),
                        }
                    }
                }
                return Some(event);
            }
            if self.ended || !self.chunk() {
                self.ended = true;
                return None;
            }
        }
    }

    /// Reads one chunk into the text; `false` at the end of the body.
    fn chunk(&mut self) -> bool {
        let mut size = String::new();
        if self.reader.read_line(&mut size).unwrap_or(0) == 0 {
            return false;
        }
        let n = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
        let mut data = vec![0; n + 2];
        if self.reader.read_exact(&mut data).is_err() {
            return false;
        }
        if n == 0 {
            return false;
        }
        self.text.push_str(std::str::from_utf8(&data[..n]).unwrap());
        true
    }

    /// Reads until the stream ends, at most for `bound` (a "does not hang" bound);
    /// returns what came and whether it ended.
    fn drain(&mut self, bound: Duration) -> (Vec<Event>, bool) {
        let deadline = Instant::now() + bound;
        self.reader.get_ref().set_read_timeout(Some(bound)).unwrap();
        let mut events = Vec::new();
        while Instant::now() < deadline {
            match self.next() {
                Some(e) => events.push(e),
                None => return (events, true),
            }
        }
        (events, false)
    }
}

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
