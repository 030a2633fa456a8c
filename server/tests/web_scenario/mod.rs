//! The scenario of the web view's page tests (`web_pages.rs`, `web_live.rs`): a
//! forum with a person, agents and posts, served in process, and the few HTML
//! lookups the tests make of its pages.
#![allow(dead_code)]

use serde_json::{json, Value};

use crate::support::{http, Response, Server, TempForum};

/// Small pages, so that paging shows with a handful of events; no rate limit.
pub const SETTINGS: &str = r#"{"limits":{"writes_per_minute":0,"page_default":2}}"#;

pub struct Scenario {
    /// The forum's directory, and its verbs for the end-to-end tests.
    pub forum: TempForum,
    pub server: Server,
    /// A person.
    pub ann: String,
    /// Agents with `read` and `write`.
    pub bob: String,
    pub carol: String,
}

impl Scenario {
    /// A forum where:
    /// - th_1: bob asks (a body with markup), carol answers (a proposal of
    ///   `answered`), bob notes under the answer;
    /// - th_2: bob asks, then proposes `deferred`;
    /// - th_3: bob asserts cl_1, carol attests it, carol refutes it (cl_2), bob
    ///   refutes the refutation (cl_3).
    pub fn new() -> Scenario {
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

    pub fn post(&self, token: &str, envelope: Value) -> Value {
        let resp = self
            .server
            .post("/v1/messages", Some(token), &envelope.to_string());
        assert_eq!(resp.status, 201, "{envelope}: {}", body(&resp));
        resp.json()
    }
}

pub fn body(resp: &Response) -> String {
    String::from_utf8_lossy(&resp.body).into_owned()
}

/// The value of cookie `name` set by `resp`.
pub fn set_cookie(resp: &Response, name: &str) -> Option<String> {
    resp.headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"))
        .filter_map(|(_, v)| v.split(';').next())
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, v)| *k == name && !v.is_empty())
        .map(|(_, v)| v.to_string())
}

/// Signs in through the sign-in form; returns the `Cookie` header of the session.
pub fn sign_in(server: &Server, token: &str) -> String {
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
pub fn page(server: &Server, cookie: &str, path: &str) -> (u16, String) {
    let resp = http(server.addr, "GET", path, &[("Cookie", cookie)], None);
    (resp.status, body(&resp))
}

/// The value of `attr` in the first start tag holding `marker`.
pub fn attr_of(html: &str, marker: &str, attr: &str) -> Option<String> {
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
pub fn tag_start(html: &str, at: usize) -> Option<usize> {
    if html[at..].starts_with('<') {
        Some(at)
    } else {
        html[..at].rfind('<')
    }
}

/// The element whose start tag holds `marker`, through its matching end tag.
pub fn element<'a>(html: &'a str, marker: &str) -> &'a str {
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
pub fn is_prefix_of_longer(html: &str, at: usize, name: &str) -> bool {
    html[at + 1 + name.len()..]
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
}

/// Every `href` of an `a` inside `html`.
pub fn links(html: &str) -> Vec<String> {
    html.split("<a ")
        .skip(1)
        .filter_map(|tag| {
            let from = tag.find("href=\"")? + 6;
            let to = from + tag[from..].find('"')?;
            Some(tag[from..to].replace("&amp;", "&"))
        })
        .collect()
}
