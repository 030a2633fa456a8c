//! The web view's read pages and live updates, against the server in this process: a person
//! signs in through the sign-in form, and each page shows what a scenario posted
//! through REST (the proposals oldest first with who proposed them and why, threads
//! by state, a thread as its tree, a claim with its refutation chain, the event log
//! in pages, search results linking to their messages); a refused read is a page
//! with the refusal's reason and status; an agent's pages hold no action form;
//! bodies are escaped; and `/live` tells an open page of commits that touch it, and
//! only those, ends on shutdown and refuses a request without a session.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{connect, http, Response, Server, TempForum};

/// Small pages, so that paging shows with a handful of events; no rate limit.
const SETTINGS: &str = r#"{"limits":{"writes_per_minute":0,"page_default":2}}"#;

struct Scenario {
    /// Holds the forum's directory.
    _forum: TempForum,
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
            _forum: forum,
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

/// The element whose start tag holds `marker`, through its matching end tag.
fn element<'a>(html: &'a str, marker: &str) -> &'a str {
    let at = html
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker} in {html}"));
    let start = tag_start(html, at).unwrap();
    let name: String = html[start + 1..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    let (open, close) = (format!("<{name}"), format!("</{name}>"));
    let mut depth = 0usize;
    let mut i = start;
    loop {
        let next_open = html[i + 1..].find(&open).map(|n| n + i + 1);
        let next_close = html[i..].find(&close).map(|n| n + i).expect("an end tag");
        match next_open {
            Some(o) if o < next_close && !is_prefix_of_longer(html, o, &name) => {
                depth += 1;
                i = o;
            }
            Some(o) if o < next_close => i = o,
            _ => {
                if depth == 0 {
                    return &html[start..next_close + close.len()];
                }
                depth -= 1;
                i = next_close + 1;
            }
        }
    }
}

/// Whether the `<name…` at `at` is the start of a longer tag name (`<art` in `<article`).
fn is_prefix_of_longer(html: &str, at: usize, name: &str) -> bool {
    html[at + 1 + name.len()..]
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
}

/// Every `href` of an `a` inside `html`.
fn links(html: &str) -> Vec<String> {
    html.split("<a ")
        .skip(1)
        .filter_map(|tag| {
            let from = tag.find("href=\"")? + 6;
            let to = from + tag[from..].find('"')?;
            Some(tag[from..to].replace("&amp;", "&"))
        })
        .collect()
}

#[test]
fn proposals_threads_and_the_tree_show_what_was_posted() {
    let s = Scenario::new();
    let ann = sign_in(&s.server, &s.ann);

    // Proposals: oldest proposal first, with the proposer and the proposing message's body.
    let (status, html) = page(&s.server, &ann, "/proposals");
    assert_eq!(status, 200, "{html}");
    let list = element(&html, r#"id="proposals""#);
    let first = list.find("/threads/th_1").expect("th_1 listed");
    let second = list.find("/threads/th_2").expect("th_2 listed");
    assert!(first < second, "oldest proposal first: {list}");
    let th1 = element(list, r#"id="proposal-th_1""#);
    assert!(
        th1.contains(r#"<span class="proposer">ainotes:carol</span>"#),
        "{th1}"
    );
    assert!(
        th1.contains(r#"<q class="why">The LRU cache, it is simplest.</q>"#),
        "{th1}"
    );
    assert!(th1.contains(">answered</span>"), "{th1}");
    assert!(
        th1.contains(r#"data-action="confirm""#),
        "a person's confirm form: {th1}"
    );
    let th2 = element(list, r#"id="proposal-th_2""#);
    assert!(
        th2.contains(r#"<span class="proposer">ainotes:bob</span>"#),
        "{th2}"
    );
    assert!(
        th2.contains(r#"<q class="why">Later, not now.</q>"#),
        "{th2}"
    );
    assert!(
        !list.contains("/threads/th_3\""),
        "th_3 is confirmed open: {list}"
    );

    // Threads, filtered by state; the filter form keeps the choice.
    let (status, html) = page(&s.server, &ann, "/threads?state=deferred");
    assert_eq!(status, 200, "{html}");
    let list = element(&html, r#"id="threads""#);
    assert_eq!(links(list), ["/threads/th_2"], "{list}");
    assert!(
        list.contains(r#"<span class="state" data-state="deferred""#),
        "{list}"
    );
    let filter = element(&html, r#"id="thread-filter""#);
    assert!(
        filter.contains(r#"<option value="deferred" selected>"#),
        "{filter}"
    );
    assert!(html.contains(r#"action="/threads""#) && html.contains(r#"data-action="ask""#));
    // Unfiltered, two a page: a next link carries on where the first page ended.
    let (_, html) = page(&s.server, &ann, "/threads");
    let first_page = links(element(&html, r#"id="threads""#));
    assert_eq!(first_page.len(), 2, "{html}");
    let next = attr_of(&html, r#"rel="next""#, "href").expect("a next link");
    let (_, html) = page(&s.server, &ann, &next.replace("&amp;", "&"));
    let second_page = links(element(&html, r#"id="threads""#));
    assert_eq!(second_page.len(), 1, "{html}");
    assert!(!first_page.contains(&second_page[0]));
    assert!(!html.contains(r#"rel="next""#), "the last page: {html}");

    // The tree: the answer under the question, the note under the answer.
    let (status, html) = page(&s.server, &ann, "/threads/th_1");
    assert_eq!(status, 200, "{html}");
    let root = element(&html, r#"id="msg_1""#);
    assert!(
        root.starts_with(r#"<article class="message" id="msg_1" data-kind="ask">"#),
        "{root}"
    );
    let replies = element(root, r#"class="replies""#);
    let answer = element(replies, r#"id="msg_2""#);
    assert!(answer.contains(r#"data-kind="answer""#), "{answer}");
    assert!(
        answer.contains("ainotes:carol") && answer.contains("(llm)"),
        "{answer}"
    );
    let nested = element(answer, r#"class="replies""#);
    assert!(
        nested.contains(r#"id="msg_3" data-kind="note""#),
        "{nested}"
    );
    // The state with its standing, the turn, the event next to its message and in the log.
    let state = element(&html, r#"id="thread-state""#);
    assert!(
        state.contains(">answered</span>") && state.contains("unconfirmed"),
        "{state}"
    );
    assert!(state.contains("llm"), "the origin: {state}");
    let awaiting = element(&html, r#"id="awaiting""#);
    assert!(awaiting.contains("ainotes:bob"), "{awaiting}");
    assert!(
        answer.contains(r#"class="caused""#) && answer.contains("open → answered"),
        "{answer}"
    );
    let events = element(&html, r#"id="events""#);
    assert!(
        events.contains(r#"<li class="event" id="ev_1" data-type="transition">"#),
        "{events}"
    );
    assert!(
        links(events).contains(&"/threads/th_1#msg_2".to_string()),
        "{events}"
    );
    // Times are readable, and exact in `datetime`.
    let time = element(answer, "<time");
    assert!(
        time.contains("datetime=\"20") && time.contains(" UTC</time>"),
        "{time}"
    );
    // A person gets the action forms and reply forms, with the CSRF field.
    assert!(html.contains(r#"data-action="close""#), "{html}");
    assert!(
        html.contains(r#"name="parent" value="msg_2""#),
        "a reply form under msg_2"
    );
    // The live marker names the thread.
    assert!(html.contains(r#"data-live-thread="th_1""#), "{html}");

    // Escaping: the body's markup is text.
    assert!(!html.contains("<script>alert(1)</script>"), "{html}");
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; more"),
        "{html}"
    );
    // The id in its number form shows the same thread.
    let (status, again) = page(&s.server, &ann, "/threads/1");
    assert_eq!(status, 200);
    assert!(again.contains(r#"id="msg_3""#));
}

#[test]
fn claims_events_search_and_refusals() {
    let s = Scenario::new();
    let ann = sign_in(&s.server, &s.ann);

    // The claim, its support and its refutation chain, each linking to its message.
    let (status, html) = page(&s.server, &ann, "/claims/cl_1");
    assert_eq!(status, 200, "{html}");
    let h1 = element(&html, "<h1");
    assert!(
        h1.contains("cl_1") && h1.contains("The cache hit rate is 90 percent."),
        "{h1}"
    );
    let claim_status = element(&html, r#"id="claim-status""#);
    assert!(
        claim_status.contains(">supported</span>"),
        "the refutation fell: {claim_status}"
    );
    assert!(
        links(claim_status).contains(&"/threads/th_3#msg_6".to_string()),
        "{claim_status}"
    );
    let evidence = element(&html, r#"id="evidence""#);
    assert!(
        links(evidence).contains(&"https://example.org/metrics".to_string()),
        "{evidence}"
    );
    let attestations = element(&html, r#"id="attestations""#);
    assert!(attestations.contains("ainotes:carol"), "{attestations}");
    assert!(links(attestations).contains(&"/threads/th_3#msg_7".to_string()));
    assert!(html.contains(r#"<ul id="verifications""#), "{html}");
    let chain = element(&html, r#"id="refutations""#);
    let counter = element(chain, r#"data-claim="cl_2""#);
    assert!(counter.contains(">refuted</span>"), "{counter}");
    assert!(
        links(counter).contains(&"/claims/cl_2".to_string()),
        "{counter}"
    );
    assert!(
        links(counter).contains(&"/threads/th_3#msg_8".to_string()),
        "{counter}"
    );
    let below = element(counter, r#"data-claim="cl_3""#);
    assert!(below.contains(">unverified</span>"), "{below}");
    assert!(
        links(below).contains(&"/threads/th_3#msg_9".to_string()),
        "{below}"
    );

    // Events, two a page, filtered by thread.
    let (status, html) = page(&s.server, &ann, "/events");
    assert_eq!(status, 200, "{html}");
    let mut seen = Vec::new();
    let mut html = html;
    loop {
        let list = element(&html, r#"id="events""#);
        let ids: Vec<String> = list
            .split(r#"<li class="event" id=""#)
            .skip(1)
            .map(|rest| rest[..rest.find('"').unwrap()].to_string())
            .collect();
        assert!(ids.len() <= 2, "{list}");
        seen.extend(ids);
        match attr_of(&html, r#"rel="next""#, "href") {
            Some(next) => html = page(&s.server, &ann, &next.replace("&amp;", "&")).1,
            None => break,
        }
    }
    let expected: Vec<String> = (1..=seen.len()).map(|n| format!("ev_{n}")).collect();
    assert!(seen.len() >= 4, "transitions and claim events: {seen:?}");
    assert_eq!(seen, expected, "every event once, oldest first");
    let (_, html) = page(&s.server, &ann, "/events?thread=th_2");
    let list = element(&html, r#"id="events""#);
    assert!(
        list.contains("deferred") && !list.contains("th_1"),
        "{list}"
    );

    // Search: newest first, each result linking to its message in its thread, two
    // a page.
    let (status, mut html) = page(&s.server, &ann, "/search?q=cache");
    assert_eq!(status, 200, "{html}");
    let mut found = Vec::new();
    loop {
        found.extend(links(element(&html, r#"id="results""#)));
        match attr_of(&html, r#"rel="next""#, "href") {
            Some(next) => html = page(&s.server, &ann, &next.replace("&amp;", "&")).1,
            None => break,
        }
    }
    assert_eq!(
        found,
        [
            "/threads/th_3#msg_9",
            "/threads/th_3#msg_6",
            "/threads/th_1#msg_2",
            "/threads/th_1#msg_1"
        ]
    );
    let (status, html) = page(&s.server, &ann, "/search?q=nothingmatchesthis");
    assert_eq!(status, 200);
    assert!(element(&html, r#"id="results""#).contains("</ol>") && !html.contains("#msg_"));

    // Refusals: the reason and status of the read.
    for (path, status, reason) in [
        ("/threads/th_99", 404, "thread_not_found"),
        ("/threads/msg_1", 400, "invalid_argument"),
        ("/claims/cl_99", 404, "claim_not_found"),
        ("/threads?state=nonsense", 400, "invalid_argument"),
        ("/events?since=notacursor", 400, "invalid_cursor"),
        ("/search?q=a%FF", 400, "invalid_argument"),
    ] {
        let (got, html) = page(&s.server, &ann, path);
        assert_eq!(got, status, "{path}: {html}");
        let refusal = element(&html, r#"class="refusal""#);
        assert!(
            refusal.contains(&format!(r#"data-reason="{reason}""#)),
            "{path}: {refusal}"
        );
    }
}

#[test]
fn an_agent_reads_every_page_without_action_forms() {
    let s = Scenario::new();
    let bob = sign_in(&s.server, &s.bob);
    for path in [
        "/inbox",
        "/proposals",
        "/threads",
        "/threads/th_1",
        "/claims/cl_1",
        "/events",
        "/search?q=cache",
    ] {
        let (status, html) = page(&s.server, &bob, path);
        assert_eq!(status, 200, "{path}: {html}");
        assert!(html.contains(r#"id="read-only""#), "{path}");
        assert!(!html.contains(r#"<form class="action"#), "{path}: {html}");
        assert!(!html.contains(r#"name="body""#), "{path}: {html}");
    }
    // What bob sees waiting: carol's answer to his question.
    let (_, html) = page(&s.server, &bob, "/inbox");
    let inbox = element(&html, r#"id="inbox""#);
    assert!(
        links(inbox).contains(&"/threads/th_1".to_string()),
        "{inbox}"
    );
    // Without a session, a page sends the browser to sign in.
    let resp = http(s.server.addr, "GET", "/threads/th_1", &[], None);
    assert_eq!(resp.status, 303);
    assert_eq!(resp.header("location"), Some("/sign-in"));
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
