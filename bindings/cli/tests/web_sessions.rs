//! The web view's sessions over real HTTP: sign-in and sign-out, the cookies'
//! attributes, idle and absolute expiry, revocation, CSRF and origin rules, the
//! slowing of failed sign-ins, and that a token never shows in a page, a URL or a log.
//!
//! Here, the tests that need the real binary (its flags, its log, its signals);
//! the others run in process, in `server/tests/web_sessions.rs`.

mod common;
// The web client of the server's own tests, which names its harness `support`.
use common as support;
#[path = "../../../server/tests/web_client/mod.rs"]
mod web_client;

use common::{Server, TempForum};
use web_client::{text, Browser};

struct Fixture {
    _forum: TempForum,
    server: Server,
    ann: String,
}

fn fixture(extra: &[&str]) -> Fixture {
    let forum = TempForum::new();
    let ann = forum.token("ann", &["--human"]);
    forum.token("eve", &["--human"]);
    forum.token("bob", &["--rights", "read,write"]);
    let server = Server::start(
        &forum.db,
        Some(r#"{"limits":{"writes_per_minute":0}}"#),
        extra,
    );
    Fixture {
        _forum: forum,
        server,
        ann,
    }
}

#[test]
fn the_token_is_never_in_a_page_a_url_or_a_log_line() {
    let f = fixture(&[]);
    let mut b = Browser::new(&f.server);
    let resp = b.sign_in(&f.ann);
    assert_eq!(resp.status, 303);
    let id = b.session().unwrap().to_string();
    let csrf = b.csrf();
    let mut seen = vec![resp];
    seen.push(b.post(
        "/threads",
        &[("csrf", &csrf), ("action", "ask"), ("body", "Which port?")],
    ));
    seen.push(b.post(
        "/threads/th_1/act",
        &[("csrf", &csrf), ("action", "note"), ("body", "")],
    ));
    seen.push(b.post(
        "/threads/th_1/act",
        &[("csrf", &csrf), ("action", "note"), ("body", "port 7878")],
    ));
    seen.push(b.post(
        "/threads/th_1/act",
        &[("csrf", &csrf), ("action", "frobnicate")],
    ));
    seen.push(b.post("/tokens", &[("csrf", &csrf), ("handle", "w1")]));
    seen.push(b.post(
        "/tokens/revoke",
        &[("csrf", &csrf), ("token", "pt_unknown")],
    ));
    for path in [
        "/",
        "/inbox",
        "/proposals",
        "/threads",
        "/threads?state=open",
        "/threads/th_1",
        "/threads/1",
        "/threads/th_99",
        "/events",
        "/events?thread=th_1",
        "/search?q=port",
        "/claims/cl_1",
        "/tokens",
        "/sign-in",
        "/assets/style.css",
        "/assets/live.js",
    ] {
        let resp = b.get(path);
        assert!(resp.status < 500, "{path}: {}", resp.status);
        seen.push(resp);
    }
    for resp in &seen {
        let body = text(resp);
        assert!(!body.contains(&f.ann), "the token in a page: {body}");
        assert!(!body.contains(&id), "the session id in a page: {body}");
        for (name, value) in &resp.headers {
            assert!(!value.contains(&f.ann), "the token in {name}: {value}");
            if !name.eq_ignore_ascii_case("set-cookie") {
                assert!(!value.contains(&id), "the session id in {name}: {value}");
            }
            if name.eq_ignore_ascii_case("location") {
                assert!(value.starts_with('/'), "a path of this server: {value}");
            }
        }
    }
    // The session id is set only by sign-in.
    let setting: Vec<_> = seen
        .iter()
        .filter(|r| {
            r.headers
                .iter()
                .any(|(k, v)| k.eq_ignore_ascii_case("set-cookie") && v.contains(&id))
        })
        .collect();
    assert_eq!(setting.len(), 1);
    let log = f.server.terminate();
    for line in &log {
        assert!(
            !line.contains(&f.ann) && !line.contains(&id),
            "in the log: {line}"
        );
    }
}
