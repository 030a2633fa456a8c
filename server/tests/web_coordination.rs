//! The web view's side of the coordination profile (SPEC §16) over real HTTP: a
//! thread page shows the presence of its awaited party and participants (stale
//! shown as such), the leases page lists the active leases, and a person releases
//! one through a form held to the same origin, session and CSRF rules as the
//! others.

mod support;
mod web_client;

use serde_json::{json, Value};
use support::{Server, TempForum};
use web_client::{form_with, reason_of, text, Browser};

struct Fixture {
    _forum: TempForum,
    server: Server,
    ann: String,
    alice: String,
    bob: String,
}

fn fixture() -> Fixture {
    let forum = TempForum::new();
    let ann = forum.token("ann", &["--human"]);
    let alice = forum.token("alice", &["--rights", "read,write"]);
    let bob = forum.token("bob", &["--rights", "read,write"]);
    let server = Server::start(
        &forum.db,
        Some(r#"{"limits":{"writes_per_minute":0}}"#),
        &[],
    );
    Fixture {
        _forum: forum,
        server,
        ann,
        alice,
        bob,
    }
}

impl Fixture {
    fn rest(&self, method: &str, path: &str, token: &str, body: Value) -> Value {
        let auth = format!("Bearer {token}");
        let text = body.to_string();
        let resp = support::http(
            self.server.addr,
            method,
            path,
            &[
                ("Authorization", auth.as_str()),
                ("Content-Type", "application/json"),
            ],
            Some(text.as_bytes()),
        );
        assert!(
            (200..300).contains(&resp.status),
            "{method} {path}: {}",
            String::from_utf8_lossy(&resp.body)
        );
        resp.json()
    }

    fn leases(&self) -> Vec<Value> {
        let resp = self.server.get("/v1/leases", Some(&self.ann));
        resp.json()["items"].as_array().unwrap().clone()
    }
}

#[test]
fn a_thread_page_shows_who_is_due_and_who_took_part() {
    let f = fixture();
    let posted = f.rest(
        "POST",
        "/v1/messages",
        &f.alice,
        json!({"kind": "ask", "body": "Parser or lexer first?", "to": "ainotes:bob"}),
    );
    let th = posted["thread"]["id"].as_str().unwrap().to_string();
    f.rest(
        "PUT",
        "/v1/presence",
        &f.bob,
        json!({"status": "working", "note": "lexer <fast>\u{1b}[2K", "extension": "w1"}),
    );
    f.rest(
        "PUT",
        "/v1/presence",
        &f.alice,
        json!({"status": "idle", "ttl_s": 1}),
    );
    std::thread::sleep(std::time::Duration::from_millis(1100));

    let mut b = Browser::signed_in(&f.server, &f.ann);
    let page = text(&b.get(&format!("/threads/{th}")));
    let section = page
        .split(r#"<section id="presence""#)
        .nth(1)
        .and_then(|s| s.split("</section>").next())
        .unwrap_or_else(|| panic!("no presence section: {page}"));
    // bob is due (asked by name), then alice wrote: in that order.
    let bob_at = section.find(r#"data-identity="ainotes:bob""#).unwrap();
    let alice_at = section.find(r#"data-identity="ainotes:alice""#).unwrap();
    assert!(bob_at < alice_at, "{section}");
    assert!(section.contains("(due)"), "{section}");
    assert!(
        section.contains(r#"data-status="working" data-stale="false""#),
        "{section}"
    );
    // Escaped, control characters shown as their escape.
    assert!(
        section.contains("lexer &lt;fast&gt;\\u001b[2K"),
        "{section}"
    );
    assert!(!section.contains('\u{1b}'), "{section}");
    // alice's presence ran out: stale, its last status kept.
    assert!(
        section.contains(r#"data-status="idle" data-stale="true""#),
        "{section}"
    );
    assert!(section.contains("stale"), "{section}");

    // A participant with no presence says so.
    f.rest(
        "POST",
        "/v1/messages",
        &f.ann,
        json!({"kind": "note", "thread": th, "body": "Lexer first."}),
    );
    let page = text(&b.get(&format!("/threads/{th}")));
    assert!(page.contains(r#"data-identity="human:ann""#), "{page}");
    assert!(page.contains("no presence set"), "{page}");
}

#[test]
fn a_person_releases_a_lease_from_the_leases_page() {
    let f = fixture();
    let lease = f.rest(
        "POST",
        "/v1/leases",
        &f.alice,
        json!({"resource": "src/<parser>/", "note": "mine \u{7f}", "extension": "w1"}),
    );
    let id = lease["lease"]["id"].as_str().unwrap().to_string();
    f.rest("POST", "/v1/leases", &f.bob, json!({"resource": "docs/"}));

    let mut b = Browser::signed_in(&f.server, &f.ann);
    let inbox = text(&b.get("/inbox"));
    assert!(
        inbox.contains(r#"href="/leases""#),
        "the navigation links it"
    );
    let page = text(&b.get("/leases"));
    assert!(page.contains(&format!(r#"id="{id}""#)), "{page}");
    assert!(page.contains("src/&lt;parser&gt;/"), "{page}");
    assert!(page.contains("ainotes:alice/w1"), "{page}");
    assert!(page.contains("mine \\u007f"), "{page}");
    let form = form_with(&page, r#"action="/leases/release""#).expect("a release form");
    assert!(
        form.contains(&format!(r#"name="lease" value="{id}""#)),
        "{form}"
    );
    let csrf = b.csrf();

    // Without the session's CSRF token, or from another origin: refused, nothing released.
    let resp = b.post("/leases/release", &[("lease", &id)]);
    assert_eq!(resp.status, 403);
    assert_eq!(reason_of(&text(&resp)).as_deref(), Some("csrf_invalid"));
    let resp = b.post_with(
        "/leases/release",
        &[("csrf", &csrf), ("lease", &id)],
        &[("Origin", "http://evil.example")],
    );
    assert_eq!(resp.status, 403);
    assert_eq!(f.leases().len(), 2);

    let resp = b.post("/leases/release", &[("csrf", &csrf), ("lease", &id)]);
    assert_eq!(resp.status, 303, "{}", text(&resp));
    let back = resp.header("location").unwrap().to_string();
    assert_eq!(back, format!("/leases?released={id}"));
    let page = text(&b.get(&back));
    assert!(page.contains(&format!("Released {id}.")), "{page}");
    assert!(!page.contains(&format!(r#"id="{id}""#)), "{page}");
    assert_eq!(f.leases().len(), 1);

    // Released already (in another tab, say): the list again, with the refusal.
    let resp = b.post("/leases/release", &[("csrf", &csrf), ("lease", &id)]);
    assert_eq!(resp.status, 404);
    assert_eq!(reason_of(&text(&resp)).as_deref(), Some("lease_not_found"));
    assert!(text(&resp).contains(r#"id="leases""#));
}

#[test]
fn an_agent_sees_the_leases_but_releases_none() {
    let f = fixture();
    let lease = f.rest("POST", "/v1/leases", &f.alice, json!({"resource": "a"}));
    let id = lease["lease"]["id"].as_str().unwrap().to_string();
    let mut b = Browser::signed_in(&f.server, &f.bob);
    let page = text(&b.get("/leases"));
    assert!(page.contains(&format!(r#"id="{id}""#)), "{page}");
    assert!(!page.contains("/leases/release"), "{page}");
    let csrf = b.csrf();
    let resp = b.post("/leases/release", &[("csrf", &csrf), ("lease", &id)]);
    assert_eq!(resp.status, 403);
    assert_eq!(reason_of(&text(&resp)).as_deref(), Some("read_only"));
    assert_eq!(f.leases().len(), 1);
    // Signed out, the page leads to the sign-in page.
    let resp = Browser::new(&f.server).get("/leases");
    assert_eq!(resp.status, 303);
    assert_eq!(resp.header("location"), Some("/sign-in"));
}

#[test]
fn switched_off_the_thread_page_shows_no_presence_and_the_leases_page_says_why() {
    let forum = TempForum::new();
    let ann = forum.token("ann", &["--human"]);
    let server = Server::start(&forum.db, Some(r#"{"coordination":false}"#), &[]);
    let posted = server.post(
        "/v1/messages",
        Some(&ann),
        r#"{"kind":"ask","body":"Anyone here?"}"#,
    );
    assert_eq!(posted.status, 201);
    let th = posted.json()["thread"]["id"].as_str().unwrap().to_string();
    let mut b = Browser::signed_in(&server, &ann);
    let page = b.get(&format!("/threads/{th}"));
    assert_eq!(page.status, 200);
    assert!(!text(&page).contains(r#"id="presence""#), "{}", text(&page));
    // No link to a page that would only refuse.
    assert!(
        !text(&page).contains(r#"href="/leases""#),
        "{}",
        text(&page)
    );
    let leases = b.get("/leases");
    assert_eq!(leases.status, 400, "{}", text(&leases));
    assert_eq!(
        reason_of(&text(&leases)).as_deref(),
        Some("invalid_argument")
    );
}
