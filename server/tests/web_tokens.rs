//! The web view's token page, against the server in this process: a person issues
//! and revokes tokens; an agent cannot.

mod support;
mod web_client;

use serde_json::json;
use support::{Server, TempForum};
use web_client::{form_with, reason_of, text, value_after, Browser};

struct Fixture {
    _forum: TempForum,
    server: Server,
    ann: String,
    bob: String,
}

fn fixture() -> Fixture {
    let forum = TempForum::new();
    let ann = forum.token("ann", &["--human"]);
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
        bob,
    }
}

#[test]
fn tokens_are_issued_and_revoked_by_a_person_only() {
    let f = fixture();
    let mut agent = Browser::signed_in(&f.server, &f.bob);
    let resp = agent.get("/tokens");
    assert_eq!(resp.status, 403);
    assert_eq!(reason_of(&text(&resp)).as_deref(), Some("read_only"));
    let agent_csrf = agent.csrf();
    assert!(!text(&agent.get("/inbox")).contains(r#"href="/tokens""#));
    let resp = agent.post(
        "/tokens",
        &[
            ("csrf", &agent_csrf),
            ("handle", "sneaky"),
            ("rights", "lock"),
        ],
    );
    assert_eq!(resp.status, 403);
    let resp = agent.post(
        "/tokens/revoke",
        &[("csrf", &agent_csrf), ("token", &f.ann)],
    );
    assert_eq!(resp.status, 403);
    assert_eq!(f.server.get("/v1/whoami", Some(&f.ann)).status, 200);

    let mut b = Browser::signed_in(&f.server, &f.ann);
    let csrf = b.csrf();
    let page = text(&b.get("/tokens"));
    assert!(page.contains(r#"id="tokens""#));
    assert!(page.contains("human:ann") && page.contains("ainotes:bob"));
    assert!(form_with(&page, r#"id="token-create""#).is_some());
    assert!(form_with(&page, r#"class="token-revoke""#).is_some());

    let resp = b.post(
        "/tokens",
        &[
            ("csrf", &csrf),
            ("handle", "carol"),
            ("rights", "read"),
            ("rights", "lock"),
            ("label", "Carol"),
        ],
    );
    assert_eq!(resp.status, 200, "{}", text(&resp));
    assert_eq!(resp.header("cache-control"), Some("no-store"));
    let page = text(&resp);
    let secret = value_after(&page, r#"<output id="new-secret" for="token-create">"#)
        .map(|s| s.split('<').next().unwrap().to_string())
        .expect("the new secret is shown");
    assert!(secret.starts_with("pt_"), "{secret}");
    assert!(page.contains("ainotes:carol"));
    let me = f.server.get("/v1/whoami", Some(&secret));
    assert_eq!(me.status, 200);
    assert_eq!(me.json()["identity"], "ainotes:carol");
    assert_eq!(me.json()["rights"], json!(["read", "lock"]));
    assert_eq!(me.json()["label"], "Carol");
    assert!(
        !text(&b.get("/tokens")).contains(&secret),
        "shown once only"
    );

    // A handle the engine refuses: the form comes back with what was typed.
    let resp = b.post(
        "/tokens",
        &[
            ("csrf", &csrf),
            ("handle", "Not A Handle"),
            ("rights", "read"),
        ],
    );
    assert_eq!(resp.status, 400);
    let page = text(&resp);
    assert_eq!(reason_of(&page).as_deref(), Some("invalid_argument"));
    assert!(page.contains(r#"value="Not A Handle""#));
    assert!(!page.contains("new-secret"));

    let resp = b.post("/tokens/revoke", &[("csrf", &csrf), ("token", &secret)]);
    assert_eq!(resp.status, 200);
    assert!(text(&resp).contains(r#"id="revoked""#));
    let me = f.server.get("/v1/whoami", Some(&secret));
    assert_eq!(me.status, 401);
    assert_eq!(me.reason(), "token_invalid");
    let resp = b.post("/tokens/revoke", &[("csrf", &csrf), ("token", &secret)]);
    assert_eq!(resp.status, 404);
    assert_eq!(reason_of(&text(&resp)).as_deref(), Some("token_not_found"));
}
