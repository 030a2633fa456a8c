//! Readers of the server's event streams (`/v1/*/stream` and the web view's
//! `/live`), shared by the in-process tests (`server/tests/support`) and the
//! end-to-end tests of the binary (`bindings/cli/tests/common`). They read the
//! chunked body byte by byte as the server wrote it, so a test sees the framing too.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::http_client::{connect, parse, Response};

/// Sends `GET path` asking for an event stream, with `headers` (`Name: value`
/// lines without their line ends), and reads the response's head. `Ok` is the
/// stream's reader once the answer is a 200 event stream; `Err` the refused
/// answer whole.
pub fn open_event_stream(
    addr: SocketAddr,
    path: &str,
    headers: &[String],
) -> Result<BufReader<TcpStream>, Response> {
    let mut stream = connect(addr);
    let mut raw = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n");
    for h in headers {
        raw.push_str(h);
        raw.push_str("\r\n");
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
    Ok(reader)
}

/// One chunk of a chunked body: `None` at its end (or a broken connection).
fn read_chunk(reader: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut size = String::new();
    if reader.read_line(&mut size).unwrap_or(0) == 0 {
        return None;
    }
    let n = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
    let mut data = vec![0; n + 2];
    reader.read_exact(&mut data).ok()?;
    data.truncate(n);
    (n > 0).then_some(data)
}

/// One event of a stream, or a comment.
#[derive(Debug, Default, Clone)]
pub struct Event {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: Option<String>,
    pub comment: Option<String>,
}

impl Event {
    /// The event's data as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.data.as_deref().unwrap_or("null")).unwrap()
    }
}

/// An open event stream: reads the chunked body event by event.
pub struct Stream {
    pub reader: BufReader<TcpStream>,
    text: String,
    ended: bool,
}

/// Opens `path` as a stream, with `token` and `Last-Event-ID`; `Err` is the
/// answer of a refused one.
pub fn open(
    addr: SocketAddr,
    path: &str,
    token: Option<&str>,
    last_event_id: Option<&str>,
) -> Result<Stream, Response> {
    let mut headers = Vec::new();
    if let Some(t) = token {
        headers.push(format!("Authorization: Bearer {t}"));
    }
    if let Some(id) = last_event_id {
        headers.push(format!("Last-Event-ID: {id}"));
    }
    let reader = open_event_stream(addr, path, &headers)?;
    Ok(Stream {
        reader,
        text: String::new(),
        ended: false,
    })
}

impl Stream {
    /// The next event or comment; `None` once the stream has ended.
    pub fn next(&mut self) -> Option<Event> {
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
            if self.ended {
                return None;
            }
            match read_chunk(&mut self.reader) {
                Some(data) => self.text.push_str(std::str::from_utf8(&data).unwrap()),
                None => self.ended = true,
            }
        }
    }

    /// The next item event, skipping comments.
    pub fn item(&mut self) -> Event {
        loop {
            let event = self.next().expect("the stream ended");
            if event.comment.is_none() {
                return event;
            }
        }
    }

    /// Reads until the stream ends, at most for `bound` (a "does not hang" bound);
    /// returns what came and whether it ended.
    pub fn drain(&mut self, bound: Duration) -> (Vec<Event>, bool) {
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

/// An open `/live` stream of the web view, read line by line on a thread of its
/// own.
pub struct Live {
    lines: mpsc::Receiver<String>,
}

impl Live {
    /// Opens `/live…` with `cookie`: the stream, or the refused response's status
    /// and body.
    pub fn open(addr: SocketAddr, path: &str, cookie: Option<&str>) -> Result<Live, (u16, String)> {
        let headers: Vec<String> = cookie.map(|c| format!("Cookie: {c}")).into_iter().collect();
        let mut reader = open_event_stream(addr, path, &headers)
            .map_err(|r| (r.status, String::from_utf8_lossy(&r.body).into_owned()))?;
        // "<end>" when the body ends.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            while let Some(chunk) = read_chunk(&mut reader) {
                for line in String::from_utf8_lossy(&chunk).split('\n') {
                    if tx.send(line.to_string()).is_err() {
                        return;
                    }
                }
            }
            let _ = tx.send("<end>".into());
        });
        Ok(Live { lines: rx })
    }

    /// Lines until one equals `want`, within `bound`; `None` if it did not come.
    pub fn until(&self, want: &str, bound: Duration) -> Option<Vec<String>> {
        let deadline = Instant::now() + bound;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let done = line == want;
                    let ended = line == "<end>";
                    seen.push(line);
                    if done {
                        return Some(seen);
                    }
                    if ended {
                        return None;
                    }
                }
                Err(_) => return None,
            }
        }
    }
}
