//! The web view's read pages and live updates, through the built binary: a person
//! signs in through the sign-in form, and each page shows what a scenario posted
//! through REST (the proposals oldest first with who proposed them and why, threads
//! by state, a thread as its tree, a claim with its refutation chain, the event log
//! in pages, search results linking to their messages); a refused read is a page
//! with the refusal's reason and status; an agent's pages hold no action form;
//! bodies are escaped; and `/live` tells an open page of commits that touch it, and
//! only those, ends on shutdown and refuses a request without a session.
//!
//! Here, the tests that need the real binary (its flags, its log, its signals);
//! the others run in process, in `server/tests/web_pages.rs`.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{connect, http, Response, Server, TempForum};
use serde_json::{json, Value};

/// Small pages, so that paging shows with a handful of events; no rate limit.
const SETTINGS: &str = r#"{"limits":{"writes_per_minute":0,"page_default":2}}"#;

struct Scenario {
    forum: TempForum,
    server: Server,
    /// A person.
    ann: String,
    /// Agents with `read` and `write`.
    bob: String,
    carol: String,
}

impl Scenario {
    /// A forum where:
    /// - th_1: bob asks (a body with markup), carol answers (a proposal of
    ///   `answered`), bob notes under the answer;
    /// - th_2: bob asks, then proposes `deferred`;
    /// - th_3: bob asserts cl_1, carol attests it, carol refutes it (cl_2), bob
    ///   refutes the refutation (cl_3).
    fn new() -> Scenario {
        let forum = TempForum::new();
        let ann = forum.token("ann", &["--human"]);
        let bob = forum.token("bob", &[]);
        let carol = forum.token("carol", &[]);
        let server = Server::start(&forum.db, Some(SETTINGS), &["--heartbeat-ms", "60000"]);
        let s = Scenario {
            forum,
            server,
            ann,
            bob,
            carol,
        };
        s.post(
            &s.bob,
            json!({"kind": "ask", "body": "Which cache? <script>alert(1)</script> & more"}),
        );
        s.post(
            &s.carol,
            json!({"kind": "answer", "thread": "th_1", "body": "The LRU cache, it is simplest."}),
        );
        s.post(
            &s.bob,
            json!({"kind": "note", "parent": "msg_2", "body": "Noted, thanks."}),
        );
        s.post(&s.bob, json!({"kind": "ask", "body": "Second question?"}));
        s.post(
            &s.bob,
            json!({"kind": "mark", "thread": "th_2", "state": "deferred", "body": "Later, not now."}),
        );
        s.post(
            &s.bob,
            json!({"kind": "assert", "body": "The cache hit rate is 90 percent.",
                   "evidence": [{"kind": "url", "ref": "https://example.org/metrics"}]}),
        );
        s.post(
            &s.carol,
            json!({"kind": "attest", "claim": "cl_1", "body": "I measured it too.",
                   "evidence": [{"kind": "log", "ref": "run 7"}]}),
        );
        s.post(
            &s.carol,
            json!({"kind": "refute", "claim": "cl_1", "body": "It is 60 percent under load.",
                   "evidence": [{"kind": "log", "ref": "run 8"}]}),
        );
        s.post(
            &s.bob,
            json!({"kind": "refute", "claim": "cl_2", "body": "Run 8 had the cache switched off.",
                   "evidence": [{"kind": "log", "ref": "run 8 config"}]}),
        );
        s
    }

    fn post(&self, token: &str, envelope: Value) -> Value {
        let resp = self
            .server
            .post("/v1/messages", Some(token), &envelope.to_string());
        assert_eq!(resp.status, 201, "{envelope}: {}", body(&resp));
        resp.json()
    }
}

fn body(resp: &Response) -> String {
    String::from_utf8_lossy(&resp.body).into_owned()
}

/// The value of cookie `name` set by `resp`.
fn set_cookie(resp: &Response, name: &str) -> Option<String> {
    resp.headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"))
        .filter_map(|(_, v)| v.split(';').next())
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, v)| *k == name && !v.is_empty())
        .map(|(_, v)| v.to_string())
}

/// Signs in through the sign-in form; returns the `Cookie` header of the session.
fn sign_in(server: &Server, token: &str) -> String {
    let page = http(server.addr, "GET", "/sign-in", &[], None);
    assert_eq!(page.status, 200, "{}", body(&page));
    let csrf_cookie = set_cookie(&page, "parley_csrf").expect("the sign-in CSRF cookie");
    let html = body(&page);
    let field = attr_of(&html, r#"name="csrf""#, "value").expect("the csrf field");
    let form = serde_urlencoded::to_string([("token", token), ("csrf", field.as_str())]).unwrap();
    let cookie = format!("parley_csrf={csrf_cookie}");
    let resp = http(
        server.addr,
        "POST",
        "/sign-in",
        &[
            ("Cookie", cookie.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        Some(form.as_bytes()),
    );
    assert_eq!(resp.status, 303, "{}", body(&resp));
    assert_eq!(resp.header("location"), Some("/inbox"));
    let session = set_cookie(&resp, "parley_session").expect("the session cookie");
    format!("parley_session={session}")
}

/// `GET path` with the session cookie: the status and the page.
fn page(server: &Server, cookie: &str, path: &str) -> (u16, String) {
    let resp = http(server.addr, "GET", path, &[("Cookie", cookie)], None);
    (resp.status, body(&resp))
}

/// The value of `attr` in the first start tag holding `marker`.
fn attr_of(html: &str, marker: &str, attr: &str) -> Option<String> {
    let at = html.find(marker)?;
    let start = tag_start(html, at)?;
    let end = start + html[start..].find('>')?;
    let tag = &html[start..end];
    let key = format!(" {attr}=\"");
    let from = tag.find(&key)? + key.len();
    let to = from + tag[from..].find('"')?;
    Some(tag[from..to].to_string())
}

/// Where the tag holding the text at `at` starts.
fn tag_start(html: &str, at: usize) -> Option<usize> {
    if html[at..].starts_with('<') {
        Some(at)
    } else {
        html[..at].rfind('<')
    }
}

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
fn live_tells_a_page_of_commits_that_touch_it() {
    let s = Scenario::new();
    let ann = sign_in(&s.server, &s.ann);
    let (_, html) = page(&s.server, &ann, "/threads/th_1");
    let seen = attr_of(&html, "data-live-seen", "data-live-seen").expect("the page's print");

    // A thread page: opened with the print of the page, nothing is due…
    let thread = Live::open(
        s.server.addr,
        &format!("/live?thread=th_1&seen={seen}"),
        Some(&ann),
    )
    .unwrap();
    assert!(thread
        .until(": parley live", Duration::from_secs(10))
        .is_some());
    // …nor after a commit to another thread…
    s.post(
        &s.carol,
        json!({"kind": "note", "thread": "th_2", "body": "Elsewhere."}),
    );
    assert!(
        thread
            .until("event: changed", Duration::from_millis(1500))
            .is_none(),
        "a commit to th_2 is not told to th_1"
    );
    // …but a post to it is.
    s.post(
        &s.carol,
        json!({"kind": "note", "thread": "th_1", "body": "One more thing."}),
    );
    let told = thread
        .until("event: changed", Duration::from_secs(10))
        .expect("a changed event");
    let id = told
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("id: "))
        .expect("an id");
    // The id is the print the page now has.
    let (_, html) = page(&s.server, &ann, "/threads/th_1");
    assert_eq!(
        attr_of(&html, "data-live-seen", "data-live-seen").as_deref(),
        Some(id)
    );
    assert!(html.contains("One more thing."));

    // A stale print is told at once; a list page hears of every commit.
    let stale = Live::open(s.server.addr, "/live?thread=th_1&seen=t0", Some(&ann)).unwrap();
    assert!(stale
        .until("event: changed", Duration::from_secs(10))
        .is_some());
    let (_, html) = page(&s.server, &ann, "/threads");
    let seen = attr_of(&html, "data-live-seen", "data-live-seen").unwrap();
    let list = Live::open(s.server.addr, &format!("/live?seen={seen}"), Some(&ann)).unwrap();
    assert!(list
        .until(": parley live", Duration::from_secs(10))
        .is_some());
    s.post(
        &s.carol,
        json!({"kind": "note", "thread": "th_2", "body": "Again elsewhere."}),
    );
    assert!(list
        .until("event: changed", Duration::from_secs(10))
        .is_some());

    // Shutdown ends every stream, and the server stops cleanly.
    let lines = s.server.terminate();
    for live in [&thread, &list] {
        assert!(
            live.until("<end>", Duration::from_secs(30)).is_some(),
            "{lines:?}"
        );
    }
    drop(s.forum);
}

#[test]
fn live_ends_when_the_sessions_token_is_revoked() {
    let s = Scenario::new();
    let carol = sign_in(&s.server, &s.carol);
    let live = Live::open(s.server.addr, "/live?thread=th_1", Some(&carol)).unwrap();
    assert!(live
        .until(": parley live", Duration::from_secs(10))
        .is_some());
    // Revoked through the running server's admin channel.
    let out = s.forum.run(&["token", "revoke", &s.carol]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The next run after a commit reads with the revoked token: the stream ends.
    s.post(
        &s.bob,
        json!({"kind": "ask", "body": "A commit to wake the stream?"}),
    );
    let last = live
        .until("<end>", Duration::from_secs(10))
        .expect("the stream ended");
    assert!(last.iter().any(|l| l == "event: ended"), "{last:?}");
    assert!(
        last.iter()
            .any(|l| l.contains("\"reason\":\"token_invalid\"")),
        "{last:?}"
    );
    // And the session with it: a page now sends the browser to sign in.
    let resp = http(
        s.server.addr,
        "GET",
        "/inbox",
        &[("Cookie", carol.as_str())],
        None,
    );
    assert_eq!(resp.status, 303);
}
