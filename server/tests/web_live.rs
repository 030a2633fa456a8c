//! The web view's live updates (`/live`), against the server in this process: it
//! tells an open page of commits that touch it, and only those, sends heartbeats
//! and counts against the cap on waits, ends when the session is signed out, and
//! refuses a request without a session.

mod support;
mod web_scenario;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;

use support::{connect, http, Server, TempForum};
use web_scenario::*;

/// An open `/live` stream.
struct Live {
    lines: mpsc::Receiver<String>,
}

impl Live {
    /// Opens `/live…` with `cookie`: the stream, or the refused response's status and body.
    fn open(
        addr: std::net::SocketAddr,
        path: &str,
        cookie: Option<&str>,
    ) -> Result<Live, (u16, String)> {
        let mut stream = connect(addr);
        let cookie = cookie
            .map(|c| format!("Cookie: {c}\r\n"))
            .unwrap_or_default();
        let raw = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n{cookie}\r\n"
        );
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
            return Err((status, String::from_utf8_lossy(&body).into_owned()));
        }
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: text/event-stream"),
            "{head}"
        );
        // The chunked body, line by line, on a thread of its own; "<end>" when it ends.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader: BufReader<TcpStream> = reader;
            loop {
                let mut size = String::new();
                if reader.read_line(&mut size).unwrap_or(0) == 0 {
                    break;
                }
                let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
                    break;
                };
                if n == 0 {
                    break;
                }
                let mut chunk = vec![0; n + 2];
                if reader.read_exact(&mut chunk).is_err() {
                    break;
                }
                for line in String::from_utf8_lossy(&chunk[..n]).split('\n') {
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
    fn until(&self, want: &str, bound: Duration) -> Option<Vec<String>> {
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

#[test]
fn live_refuses_a_request_without_a_session() {
    let s = Scenario::new();
    let (status, body) = Live::open(s.server.addr, "/live", None)
        .err()
        .expect("refused");
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("session_missing"), "{body}");
    let forged = format!("parley_session={}", "ab".repeat(32));
    let (status, _) = Live::open(s.server.addr, "/live?thread=th_1", Some(&forged))
        .err()
        .expect("refused");
    assert_eq!(status, 401);
    // A session, but a query /live does not take.
    let ann = sign_in(&s.server, &s.ann);
    let (status, body) = Live::open(s.server.addr, "/live?limit=3", Some(&ann))
        .err()
        .expect("refused");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("invalid_argument"), "{body}");
    // A token is not a session: a bearer token does not open the stream.
    let auth = format!("Bearer {}", s.ann);
    let resp = http(
        s.server.addr,
        "GET",
        "/live",
        &[("Authorization", auth.as_str())],
        None,
    );
    assert_eq!(resp.status, 401);
}

#[test]
fn live_sends_heartbeats_and_counts_against_the_cap_on_waits() {
    let forum = TempForum::new();
    let ann = forum.token("ann", &["--human"]);
    let server = Server::start(
        &forum.db,
        Some(SETTINGS),
        &["--max-waits", "1", "--heartbeat-ms", "100"],
    );
    let cookie = sign_in(&server, &ann);
    let live = Live::open(server.addr, "/live", Some(&cookie)).unwrap();
    assert!(live.until(": heartbeat", Duration::from_secs(10)).is_some());
    let (status, body) = Live::open(server.addr, "/live", Some(&cookie))
        .err()
        .expect("past the cap");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("too_many_waits"), "{body}");
    drop(live);
}

#[test]
fn live_ends_when_the_session_is_signed_out() {
    let s = Scenario::new();
    let ann = sign_in(&s.server, &s.ann);
    let live = Live::open(s.server.addr, "/live", Some(&ann)).unwrap();
    assert!(live
        .until(": parley live", Duration::from_secs(10))
        .is_some());
    let (_, html) = page(&s.server, &ann, "/inbox");
    let csrf = attr_of(
        element(&html, r#"id="sign-out""#),
        r#"name="csrf""#,
        "value",
    )
    .unwrap();
    let form = format!("csrf={csrf}");
    let resp = http(
        s.server.addr,
        "POST",
        "/sign-out",
        &[
            ("Cookie", ann.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        Some(form.as_bytes()),
    );
    assert_eq!(resp.status, 303, "{}", body(&resp));
    // The token still works; the session does not: the next change is not told.
    s.post(&s.bob, json!({"kind": "ask", "body": "Anyone there?"}));
    let last = live
        .until("<end>", Duration::from_secs(10))
        .expect("the stream ended");
    assert!(last.iter().any(|l| l == "event: ended"), "{last:?}");
    assert!(
        last.iter()
            .any(|l| l.contains("\"reason\":\"session_ended\"")),
        "{last:?}"
    );
    assert!(!last.iter().any(|l| l == "event: changed"), "{last:?}");
}

#[test]
fn a_stream_leaves_a_refused_form_for_the_page() {
    let s = Scenario::new();
    let ann = sign_in(&s.server, &s.ann);
    let (_, html) = page(&s.server, &ann, "/threads/th_1");
    let csrf = attr_of(
        element(&html, r#"id="sign-out""#),
        r#"name="csrf""#,
        "value",
    )
    .unwrap();
    // A note with an empty body is refused; the refusal waits in the session.
    let form = format!("csrf={csrf}&action=note&body=+");
    let resp = http(
        s.server.addr,
        "POST",
        "/threads/th_1/act",
        &[
            ("Cookie", ann.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        Some(form.as_bytes()),
    );
    assert_eq!(resp.status, 303, "{}", body(&resp));
    // A stream opened before the page is shown does not take it.
    let live = Live::open(s.server.addr, "/live?thread=th_1", Some(&ann)).unwrap();
    assert!(live
        .until(": parley live", Duration::from_secs(10))
        .is_some());
    let (_, html) = page(&s.server, &ann, "/threads/th_1");
    let refusal = element(&html, r#"class="refusal""#);
    assert!(
        refusal.contains(r#"data-reason="invalid_body""#),
        "{refusal}"
    );
    // Shown once.
    let (_, html) = page(&s.server, &ann, "/threads/th_1");
    assert!(!html.contains(r#"class="refusal""#), "{html}");
}
