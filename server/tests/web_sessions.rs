//! The web view's sessions over real HTTP: sign-in and sign-out, the cookies'
//! attributes, idle and absolute expiry, revocation, CSRF and origin rules, the
//! slowing of failed sign-ins, and that a token never shows in a page, a URL or a log.

mod support;
mod web_client;

use std::time::{Duration, Instant};

use support::{http, Server, TempForum};
use web_client::{csrf_of, reason_of, text, Browser};

struct Fixture {
    _forum: TempForum,
    server: Server,
    ann: String,
    eve: String,
    bob: String,
}

fn fixture(extra: &[&str]) -> Fixture {
    let forum = TempForum::new();
    let ann = forum.token("ann", &["--human"]);
    let eve = forum.token("eve", &["--human"]);
    let bob = forum.token("bob", &["--rights", "read,write"]);
    let server = Server::start(
        &forum.db,
        Some(r#"{"limits":{"writes_per_minute":0}}"#),
        extra,
    );
    Fixture {
        _forum: forum,
        server,
        ann,
        eve,
        bob,
    }
}

fn set_cookie<'r>(resp: &'r support::Response, name: &str) -> &'r str {
    resp.headers
        .iter()
        .find(|(k, v)| k.eq_ignore_ascii_case("set-cookie") && v.starts_with(&format!("{name}=")))
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no Set-Cookie {name} in {:?}", resp.headers))
}

fn attributes(cookie: &str) -> Vec<String> {
    cookie
        .split(';')
        .skip(1)
        .map(|a| a.trim().to_string())
        .collect()
}

/// Where `GET /` sends this browser: `/inbox` when signed in, `/sign-in` when not.
fn home(b: &mut Browser) -> String {
    let resp = b.get("/");
    assert_eq!(resp.status, 303);
    resp.header("location").unwrap().to_string()
}

#[test]
fn cookies_are_http_only_strict_and_secure_only_behind_tls() {
    let f = fixture(&[]);
    let mut b = Browser::new(&f.server);
    let page = b.get("/sign-in");
    assert_eq!(page.status, 200);
    let csrf_cookie = attributes(set_cookie(&page, "parley_csrf"));
    let resp = b.sign_in(&f.ann);
    assert_eq!(resp.status, 303);
    let session = set_cookie(&resp, "parley_session");
    let id = session
        .split(';')
        .next()
        .unwrap()
        .trim_start_matches("parley_session=");
    assert_eq!(id.len(), 64, "a 256-bit id in hex: {id}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    for attrs in [attributes(session), csrf_cookie] {
        for want in ["HttpOnly", "SameSite=Strict", "Path=/"] {
            assert!(attrs.iter().any(|a| a == want), "{want} in {attrs:?}");
        }
        assert!(
            !attrs.iter().any(|a| a == "Secure"),
            "no Secure over plain HTTP: {attrs:?}"
        );
    }
    // A proxy on this machine that terminates TLS says so; the cookie turns Secure,
    // and the page's own origin is the https one.
    let mut proxied = Browser::new(&f.server);
    proxied
        .extra
        .push(("X-Forwarded-Proto".into(), "https".into()));
    let page = proxied.get("/sign-in");
    assert!(attributes(set_cookie(&page, "parley_csrf"))
        .iter()
        .any(|a| a == "Secure"));
    let csrf = csrf_of(&text(&page));
    let https = format!("https://{}", f.server.addr);
    let resp = proxied.post_with(
        "/sign-in",
        &[("token", &f.ann), ("csrf", &csrf)],
        &[("Origin", &https)],
    );
    assert_eq!(resp.status, 303, "{}", text(&resp));
    assert!(attributes(set_cookie(&resp, "parley_session"))
        .iter()
        .any(|a| a == "Secure"));
    drop(f);

    let flagged = fixture(&["--web-secure-cookie"]);
    let mut b = Browser::new(&flagged.server);
    let page = b.get("/sign-in");
    assert!(attributes(set_cookie(&page, "parley_csrf"))
        .iter()
        .any(|a| a == "Secure"));
}

#[test]
fn a_bad_token_is_refused_and_never_echoed() {
    let f = fixture(&[]);
    let mut b = Browser::new(&f.server);
    let wrong = "pt_0123456789abcdef0123456789abcdef0123456789abcdef";
    let resp = b.sign_in(wrong);
    assert_eq!(resp.status, 401);
    let page = text(&resp);
    assert_eq!(reason_of(&page).as_deref(), Some("token_invalid"));
    assert!(!page.contains(wrong), "the token is not echoed");
    let field = page
        .split(r#"<input id="token""#)
        .nth(1)
        .expect("the token field");
    let field = &field[..field.find('>').unwrap()];
    assert!(!field.contains("value="), "the field is empty: {field}");
    assert!(b.session().is_none(), "no session cookie");
    assert_eq!(home(&mut b), "/sign-in");
    // An empty token is the engine's `token_missing`.
    let resp = b.sign_in("");
    assert_eq!(resp.status, 401);
    assert_eq!(reason_of(&text(&resp)).as_deref(), Some("token_missing"));
}

#[test]
fn signing_out_ends_the_session_on_the_server() {
    let f = fixture(&[]);
    let mut b = Browser::signed_in(&f.server, &f.ann);
    assert_eq!(home(&mut b), "/inbox");
    let old = b.cookies.clone();
    let csrf = b.csrf();
    let resp = b.post("/sign-out", &[("csrf", &csrf)]);
    assert_eq!(resp.status, 303);
    assert_eq!(resp.header("location"), Some("/sign-in"));
    assert!(b.session().is_none(), "the cookie is deleted");
    // The old cookie, replayed, opens nothing: the session is gone server-side.
    let mut replay = Browser::new(&f.server);
    replay.cookies = old;
    assert_eq!(home(&mut replay), "/sign-in");
    let tokens = replay.get("/tokens");
    assert_eq!(tokens.status, 303);
    assert_eq!(tokens.header("location"), Some("/sign-in"));
}

#[test]
fn a_session_ends_when_idle() {
    let f = fixture(&["--web-session-idle-s", "1"]);
    let mut b = Browser::signed_in(&f.server, &f.ann);
    assert_eq!(home(&mut b), "/inbox");
    std::thread::sleep(Duration::from_millis(1300));
    let resp = b.get("/");
    assert_eq!(resp.header("location"), Some("/sign-in"));
    assert!(
        b.session().is_none(),
        "the dead session's cookie is deleted"
    );
    // Signing in again works.
    let mut again = Browser::signed_in(&f.server, &f.ann);
    assert_eq!(home(&mut again), "/inbox");
}

#[test]
fn a_session_ends_at_its_maximum_however_busy() {
    let f = fixture(&["--web-session-idle-s", "60", "--web-session-max-s", "2"]);
    let mut b = Browser::signed_in(&f.server, &f.ann);
    let opened = Instant::now();
    let mut ended = None;
    while opened.elapsed() < Duration::from_secs(10) {
        if home(&mut b) == "/sign-in" {
            ended = Some(opened.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let ended = ended.expect("the session ended");
    assert!(
        ended >= Duration::from_millis(1800),
        "not before its maximum: {ended:?}"
    );
}

#[test]
fn revoking_a_token_ends_its_sessions_at_once() {
    let f = fixture(&[]);
    let mut ann = Browser::signed_in(&f.server, &f.ann);
    let mut bob = Browser::signed_in(&f.server, &f.bob);
    let mut eve = Browser::signed_in(&f.server, &f.eve);
    assert_eq!(home(&mut ann), "/inbox");
    assert_eq!(home(&mut bob), "/inbox");
    let csrf = eve.csrf();
    for token in [&f.ann, &f.bob] {
        let resp = eve.post("/tokens/revoke", &[("csrf", &csrf), ("token", token)]);
        assert_eq!(resp.status, 200, "{}", text(&resp));
        assert!(text(&resp).contains(r#"id="revoked""#));
    }
    for b in [&mut ann, &mut bob] {
        let resp = b.get("/inbox");
        assert_eq!(resp.status, 303);
        assert_eq!(resp.header("location"), Some("/sign-in"));
        assert!(b.session().is_none());
    }
    // And the revoked token cannot sign in again.
    let resp = Browser::new(&f.server).sign_in(&f.ann);
    assert_eq!(resp.status, 401);
    assert_eq!(reason_of(&text(&resp)).as_deref(), Some("token_invalid"));
    assert_eq!(home(&mut eve), "/inbox");
}

#[test]
fn a_post_without_the_right_csrf_token_is_refused() {
    let f = fixture(&[]);
    let mut b = Browser::signed_in(&f.server, &f.ann);
    let csrf = b.csrf();
    let other = "0".repeat(64);
    for fields in [
        vec![("action", "ask"), ("body", "a question?")],
        vec![
            ("csrf", other.as_str()),
            ("action", "ask"),
            ("body", "a question?"),
        ],
        vec![("csrf", ""), ("action", "ask"), ("body", "a question?")],
    ] {
        let resp = b.post("/threads", &fields);
        assert_eq!(resp.status, 403, "{fields:?}");
        assert_eq!(reason_of(&text(&resp)).as_deref(), Some("csrf_invalid"));
    }
    let resp = b.post("/sign-out", &[("csrf", &other)]);
    assert_eq!(resp.status, 403);
    assert_eq!(reason_of(&text(&resp)).as_deref(), Some("csrf_invalid"));
    assert_eq!(
        home(&mut b),
        "/inbox",
        "a refused sign-out leaves the session"
    );
    let resp = b.post("/tokens", &[("handle", "mallory")]);
    assert_eq!(resp.status, 403);
    assert_eq!(reason_of(&text(&resp)).as_deref(), Some("csrf_invalid"));
    // Nothing was posted.
    let threads = f.server.get("/v1/threads", Some(&f.ann));
    assert_eq!(threads.json()["items"], serde_json::json!([]));
    // The right token passes.
    let resp = b.post(
        "/threads",
        &[("csrf", &csrf), ("action", "ask"), ("body", "a question?")],
    );
    assert_eq!(resp.status, 303);

    // Sign-in: the field must match the pre-session cookie.
    let mut fresh = Browser::new(&f.server);
    fresh.get("/sign-in");
    let resp = fresh.post("/sign-in", &[("token", &f.ann), ("csrf", &other)]);
    assert_eq!(resp.status, 403);
    assert_eq!(reason_of(&text(&resp)).as_deref(), Some("csrf_invalid"));
    let mut cookieless = Browser::new(&f.server);
    let resp = cookieless.post("/sign-in", &[("token", &f.ann), ("csrf", &other)]);
    assert_eq!(resp.status, 403);
    assert_eq!(reason_of(&text(&resp)).as_deref(), Some("csrf_invalid"));
    assert!(cookieless.session().is_none());
}

#[test]
fn a_post_from_another_origin_is_refused() {
    let f = fixture(&[]);
    let mut b = Browser::signed_in(&f.server, &f.ann);
    let csrf = b.csrf();
    let fields = [
        ("csrf", csrf.as_str()),
        ("action", "ask"),
        ("body", "from afar?"),
    ];
    // Another loopback origin passes the server's global rule; the web view admits
    // only its own.
    let resp = b.post_with("/threads", &fields, &[("Origin", "http://localhost:1")]);
    assert_eq!(resp.status, 403);
    assert_eq!(reason_of(&text(&resp)).as_deref(), Some("cross_origin"));
    let resp = b.post_with("/threads", &fields, &[("Origin", "null")]);
    assert_eq!(resp.status, 403);
    let resp = b.post_with("/threads", &fields, &[("Origin", "http://evil.example")]);
    assert_eq!(resp.status, 403);
    assert_eq!(
        resp.reason(),
        "origin_not_allowed",
        "refused by the global rule first"
    );
    let own = b.origin();
    let resp = b.post_with(
        "/threads",
        &fields,
        &[("Origin", &own), ("Sec-Fetch-Site", "cross-site")],
    );
    assert_eq!(resp.status, 403);
    assert_eq!(reason_of(&text(&resp)).as_deref(), Some("cross_origin"));
    // Sign-in and sign-out follow the same rule.
    let mut fresh = Browser::new(&f.server);
    let page = fresh.get("/sign-in");
    let login = csrf_of(&text(&page));
    let resp = fresh.post_with(
        "/sign-in",
        &[("token", &f.ann), ("csrf", &login)],
        &[("Origin", "http://127.0.0.1:9")],
    );
    assert_eq!(resp.status, 403);
    assert_eq!(reason_of(&text(&resp)).as_deref(), Some("cross_origin"));
    assert!(fresh.session().is_none());
    let resp = b.post_with(
        "/sign-out",
        &[("csrf", &csrf)],
        &[("Sec-Fetch-Site", "cross-site")],
    );
    assert_eq!(resp.status, 403);
    assert_eq!(home(&mut b), "/inbox");
    let threads = f.server.get("/v1/threads", Some(&f.ann));
    assert_eq!(
        threads.json()["items"],
        serde_json::json!([]),
        "nothing was posted"
    );
    // Same-origin (and a request without Origin, as an old browser sends) pass.
    let resp = b.post_with("/threads", &fields, &[("Sec-Fetch-Site", "same-origin")]);
    assert_eq!(resp.status, 303);
}

#[test]
fn failed_sign_ins_are_slowed_and_never_bar_a_valid_token() {
    let f = fixture(&[]);
    let mut b = Browser::new(&f.server);
    // One after another: each failure from this address waits longer.
    let mut took = Duration::ZERO;
    for n in 0..4 {
        let began = Instant::now();
        let resp = b.sign_in(&format!("pt_wrong_{n}"));
        took = began.elapsed();
        assert_eq!(resp.status, 401, "attempt {n}");
        assert_eq!(reason_of(&text(&resp)).as_deref(), Some("token_invalid"));
    }
    assert!(
        took >= Duration::from_millis(700),
        "the 4th failure took {took:?}"
    );
    // Twelve at once, from the same address: a few are delayed, the rest refused
    // at once with 429, none of them in.
    let page = b.get("/sign-in");
    let csrf = csrf_of(&text(&page));
    let cookie = format!("parley_csrf={}", b.cookies["parley_csrf"]);
    let (addr, origin) = (f.server.addr, b.origin());
    let guesses: Vec<_> = (0..12)
        .map(|n| {
            let (csrf, cookie, origin) = (csrf.clone(), cookie.clone(), origin.clone());
            std::thread::spawn(move || {
                let form = format!("token=pt_guess_{n}&csrf={csrf}");
                let headers = [
                    ("Content-Type", "application/x-www-form-urlencoded"),
                    ("Cookie", cookie.as_str()),
                    ("Origin", origin.as_str()),
                ];
                let resp = http(addr, "POST", "/sign-in", &headers, Some(form.as_bytes()));
                assert!(resp.header("location").is_none(), "signed in?");
                if resp.status == 429 {
                    assert_eq!(reason_of(&text(&resp)).as_deref(), Some("rate_limited"));
                    let retry: u64 = resp.header("retry-after").unwrap().parse().unwrap();
                    assert!((1..=2).contains(&retry), "{retry}");
                }
                resp.status
            })
        })
        .collect();
    let statuses: Vec<u16> = guesses.into_iter().map(|g| g.join().unwrap()).collect();
    assert!(
        statuses.iter().all(|s| matches!(s, 401 | 429)),
        "{statuses:?}"
    );
    assert!(statuses.contains(&429), "{statuses:?}");
    // After sixteen failures, the person's own token signs in, at once.
    let began = Instant::now();
    let resp = b.sign_in(&f.ann);
    assert_eq!(resp.status, 303, "{}", text(&resp));
    assert!(b.session().is_some());
    assert!(
        began.elapsed() < Duration::from_secs(1),
        "{:?}",
        began.elapsed()
    );
    // The REST API is not the web view's to limit.
    let me = http(
        f.server.addr,
        "GET",
        "/v1/whoami",
        &[("Authorization", &format!("Bearer {}", f.ann))],
        None,
    );
    assert_eq!(me.status, 200);
}

#[test]
fn pages_are_not_cached_or_framed_and_assets_are_cached_and_revalidated() {
    let f = fixture(&[]);
    let mut b = Browser::signed_in(&f.server, &f.ann);
    for path in ["/sign-in", "/inbox", "/tokens", "/"] {
        let resp = b.get(path);
        let cache = resp.header("cache-control").unwrap_or_default();
        assert!(
            cache == "no-store" || cache.starts_with("private"),
            "{path}: {cache}"
        );
        if path != "/inbox" {
            assert_eq!(cache, "no-store", "{path}");
        }
        let csp = resp.header("content-security-policy").unwrap_or_default();
        assert!(
            csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"),
            "{path}: {csp}"
        );
        assert_eq!(resp.header("x-frame-options"), Some("DENY"));
    }
    let page = text(&b.get("/inbox"));
    assert!(page.contains(r#"<meta name="viewport""#));
    assert!(page.contains(r#"<link rel="stylesheet" href="/assets/style.css">"#));
    assert!(page.contains(r#"<script src="/assets/live.js" defer>"#));
    for (path, kind) in [
        ("/assets/style.css", "text/css"),
        ("/assets/live.js", "text/javascript"),
    ] {
        let resp = b.get(path);
        assert_eq!(resp.status, 200);
        assert!(resp.header("content-type").unwrap().starts_with(kind));
        assert_eq!(resp.header("cache-control"), Some("public, max-age=86400"));
        assert!(!resp.body.is_empty());
        let etag = resp.header("etag").expect("an ETag").to_string();
        let again = b.request("GET", path, &[("If-None-Match", &etag)], None);
        assert_eq!(again.status, 304, "{path}");
        assert!(again.body.is_empty());
        let changed = b.request("GET", path, &[("If-None-Match", "\"other\"")], None);
        assert_eq!(changed.status, 200);
    }
    // Assets need no session.
    assert_eq!(Browser::new(&f.server).get("/assets/style.css").status, 200);
    // The REST API and its JSON fallback are unchanged beside the web view.
    let missing = http(f.server.addr, "GET", "/no/such/route", &[], None);
    assert_eq!(missing.status, 404);
    assert_eq!(missing.header("content-type"), Some("application/json"));
}
