//! The web view's actions over real HTTP: every act a person takes through a form,
//! each going through the engine as a REST post does, and every way one is refused.
//! The token administration page is `web_tokens.rs`.

mod support;
mod web_client;

use serde_json::{json, Value};
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

impl Fixture {
    /// A REST post by `token`; returns the result.
    fn rest_post(&self, token: &str, envelope: Value) -> Value {
        let resp = self
            .server
            .post("/v1/messages", Some(token), &envelope.to_string());
        assert_eq!(resp.status, 201, "{}", text(&resp));
        resp.json()
    }

    /// The thread as REST shows it.
    fn thread(&self, id: &str) -> Value {
        let resp = self
            .server
            .get(&format!("/v1/threads/{id}"), Some(&self.ann));
        assert_eq!(resp.status, 200);
        resp.json()
    }

    fn events(&self, id: &str) -> Vec<Value> {
        let resp = self
            .server
            .get(&format!("/v1/events?thread={id}"), Some(&self.ann));
        resp.json()["items"].as_array().unwrap().clone()
    }

    /// A thread opened by bob over REST; returns its id.
    fn bobs_thread(&self, body: &str) -> String {
        let posted = self.rest_post(&self.bob, json!({"kind": "ask", "body": body}));
        posted["thread"]["id"].as_str().unwrap().to_string()
    }
}

/// Posts an action form and returns the response.
fn act(b: &mut Browser, csrf: &str, thread: &str, fields: &[(&str, &str)]) -> support::Response {
    let mut all = vec![("csrf", csrf)];
    all.extend_from_slice(fields);
    b.post(&format!("/threads/{thread}/act"), &all)
}

/// The message id a successful action's redirect points at.
fn posted_message(resp: &support::Response, thread: &str) -> String {
    assert_eq!(resp.status, 303, "{}", text(resp));
    let location = resp.header("location").unwrap();
    let (path, fragment) = location
        .split_once('#')
        .unwrap_or_else(|| panic!("{location}"));
    assert_eq!(path, format!("/threads/{thread}"));
    assert!(fragment.starts_with("msg_"), "{location}");
    fragment.to_string()
}

/// Asserts the action was refused and sent back to `back`, then returns the page
/// there, which shows the refusal once.
fn refused(b: &mut Browser, resp: &support::Response, back: &str) -> String {
    assert_eq!(resp.status, 303, "{}", text(resp));
    assert_eq!(resp.header("location"), Some(back));
    let page = b.get(back);
    assert_eq!(page.status, 200);
    let again = text(&b.get(back));
    assert!(
        reason_of(&again).is_none(),
        "a flash is shown once: {again}"
    );
    text(&page)
}

fn message_kinds(view: &Value) -> Vec<(String, String)> {
    fn walk(level: &Value, out: &mut Vec<(String, String)>) {
        for m in level.as_array().into_iter().flatten() {
            out.push((
                m["kind"].as_str().unwrap().to_string(),
                m["body"].as_str().unwrap().to_string(),
            ));
            walk(&m["replies"], out);
        }
    }
    let mut out = Vec::new();
    walk(&view["messages"], &mut out);
    out
}

#[test]
fn a_person_confirms_a_proposal() {
    let f = fixture();
    let th = f.bobs_thread("Which port?");
    // bob decides his own thread: without the lock right that is a proposal.
    f.rest_post(
        &f.bob,
        json!({"kind": "decide", "thread": th, "body": "7878, it is free"}),
    );
    assert!(f.thread(&th)["thread"]["state_confirmed_at"].is_null());
    let mut b = Browser::signed_in(&f.server, &f.ann);
    let csrf = b.csrf();
    let proposals = text(&b.get("/proposals"));
    let confirm = form_with(&proposals, r#"data-action="confirm""#).expect("a confirm form");
    assert!(confirm.contains(&format!(r#"action="/threads/{th}/act""#)));
    let resp = act(&mut b, &csrf, &th, &[("action", "confirm")]);
    let msg = posted_message(&resp, &th);
    let view = f.thread(&th);
    assert_eq!(view["thread"]["state"], "decided");
    assert!(view["thread"]["state_confirmed_at"].is_string());
    assert_eq!(
        view["thread"]["state_origin"], "llm",
        "the state stays bob's"
    );
    let confirmation = f
        .events(&th)
        .into_iter()
        .find(|e| e["type"] == "confirmation")
        .expect("a confirmation event");
    assert_eq!(confirmation["identity"], "human:ann");
    assert_eq!(confirmation["message"], msg);
    assert!(!text(&b.get("/proposals")).contains(&format!("/threads/{th}\"")));
}

#[test]
fn closing_locks_the_thread_and_reopening_opens_it() {
    let f = fixture();
    let th = f.bobs_thread("Ship it?");
    let mut b = Browser::signed_in(&f.server, &f.ann);
    let csrf = b.csrf();
    posted_message(
        &act(&mut b, &csrf, &th, &[("action", "close"), ("body", "")]),
        &th,
    );
    assert_eq!(f.thread(&th)["thread"]["locked"], true);
    let late = f.server.post(
        "/v1/messages",
        Some(&f.bob),
        &json!({"kind": "note", "thread": th, "body": "one more thing"}).to_string(),
    );
    assert_eq!(late.status, 409);
    assert_eq!(late.reason(), "thread_closed");
    // The page of a locked thread offers reopen, not replies.
    let page = text(&b.get(&format!("/threads/{th}")));
    assert!(form_with(&page, r#"data-action="reopen""#).is_some());
    assert!(form_with(&page, r#"data-action="answer""#).is_none());
    let reopened = posted_message(&act(&mut b, &csrf, &th, &[("action", "reopen")]), &th);
    let view = f.thread(&th);
    assert_eq!(view["thread"]["state"], "open");
    assert_eq!(view["thread"]["locked"], false);
    f.rest_post(
        &f.bob,
        json!({"kind": "note", "parent": reopened, "body": "one more thing"}),
    );
}

#[test]
fn marking_sets_the_state_as_a_person() {
    let f = fixture();
    let th = f.bobs_thread("Later?");
    let mut b = Browser::signed_in(&f.server, &f.ann);
    let csrf = b.csrf();
    let resp = act(
        &mut b,
        &csrf,
        &th,
        &[
            ("action", "mark"),
            ("state", "deferred"),
            ("body", "next quarter"),
        ],
    );
    posted_message(&resp, &th);
    let view = f.thread(&th);
    assert_eq!(view["thread"]["state"], "deferred");
    assert_eq!(view["thread"]["state_origin"], "user");
    assert!(view["thread"]["state_confirmed_at"].is_string());
    assert!(message_kinds(&view).contains(&("mark".into(), "next quarter".into())));
}

#[test]
fn answers_notes_and_questions_are_posted_under_the_right_parent() {
    let f = fixture();
    let th = f.bobs_thread("Which port?");
    let mut b = Browser::signed_in(&f.server, &f.ann);
    let csrf = b.csrf();
    let answer = posted_message(
        &act(
            &mut b,
            &csrf,
            &th,
            &[("action", "answer"), ("body", "7878\r\nit is free")],
        ),
        &th,
    );
    let note = posted_message(
        &act(&mut b, &csrf, &th, &[("action", "note"), ("body", "noted")]),
        &th,
    );
    let root = f.thread(&th)["messages"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ask = posted_message(
        &act(
            &mut b,
            &csrf,
            &th,
            &[
                ("action", "ask"),
                ("body", "and the host?"),
                ("parent", &root),
            ],
        ),
        &th,
    );
    assert!(answer != note && note != ask);
    let view = f.thread(&th);
    assert_eq!(view["thread"]["state"], "answered");
    let kinds = message_kinds(&view);
    assert!(
        kinds.contains(&("answer".into(), "7878\nit is free".into())),
        "{kinds:?}"
    );
    assert!(kinds.contains(&("note".into(), "noted".into())));
    assert!(kinds.contains(&("ask".into(), "and the host?".into())));
    let replies = view["messages"][0]["replies"].as_array().unwrap();
    let ids: Vec<&Value> = replies.iter().map(|m| &m["id"]).collect();
    assert_eq!(
        ids,
        [&json!(answer), &json!(note), &json!(ask)],
        "each under the root"
    );
    assert!(replies.iter().all(|m| m["author_kind"] == "human"));
    // The nested question gives the turn to the root's author.
    assert_eq!(view["thread"]["awaiting"]["identity"], "ainotes:bob");
    assert_eq!(view["thread"]["awaiting"]["message"], json!(ask));

    // A reply under one's own message is the engine's `self_reply`, kept in the form.
    let resp = act(
        &mut b,
        &csrf,
        &th,
        &[
            ("action", "note"),
            ("body", "me again"),
            ("parent", &answer),
        ],
    );
    assert_eq!(resp.status, 303);
    assert_eq!(
        resp.header("location"),
        Some(format!("/threads/{th}").as_str())
    );
    let page = text(&b.get(&format!("/threads/{th}")));
    assert_eq!(reason_of(&page).as_deref(), Some("self_reply"));
}

#[test]
fn a_new_thread_is_opened_by_a_question() {
    let f = fixture();
    let mut b = Browser::signed_in(&f.server, &f.ann);
    let csrf = b.csrf();
    let page = text(&b.get("/threads"));
    assert!(form_with(&page, r#"id="new-ask""#).is_some());
    let resp = b.post(
        "/threads",
        &[
            ("csrf", &csrf),
            ("action", "ask"),
            ("body", "Should we cache the manifest?"),
        ],
    );
    let msg = posted_message(&resp, "th_1");
    let view = f.thread("th_1");
    assert_eq!(view["thread"]["topic"], "Should we cache the manifest?");
    assert_eq!(view["messages"][0]["id"], msg);
    assert_eq!(view["messages"][0]["from"]["identity"], "human:ann");
}

#[test]
fn refusals_come_back_in_their_form_with_what_was_typed() {
    let f = fixture();
    let th = f.bobs_thread("Which port?");
    let back = format!("/threads/{th}");
    let mut b = Browser::signed_in(&f.server, &f.ann);
    let csrf = b.csrf();

    // Nothing to confirm: the engine's transition rule, shown in the confirm form.
    let resp = act(
        &mut b,
        &csrf,
        &th,
        &[("action", "confirm"), ("body", "my <reason>")],
    );
    let page = refused(&mut b, &resp, &back);
    let form = form_with(&page, r#"id="act-confirm""#).expect("the confirm form holds the refusal");
    assert_eq!(reason_of(form).as_deref(), Some("invalid_transition"));
    assert!(
        form.contains("my &lt;reason&gt;"),
        "the body is kept: {form}"
    );

    // An answer needs a body.
    let resp = act(
        &mut b,
        &csrf,
        &th,
        &[("action", "answer"), ("body", "  \r\n ")],
    );
    let page = refused(&mut b, &resp, &back);
    let form = form_with(&page, r#"id="act-answer""#).unwrap();
    assert_eq!(reason_of(form).as_deref(), Some("invalid_body"));
    assert!(
        form_with(&page, r#"id="act-note""#).map(reason_of) == Some(None),
        "only in its form"
    );

    // A body over the forum's limit is the engine's refusal; the text is kept.
    let long = "x".repeat(501);
    let resp = act(&mut b, &csrf, &th, &[("action", "note"), ("body", &long)]);
    let page = refused(&mut b, &resp, &back);
    let form = form_with(&page, r#"id="act-note""#).unwrap();
    assert_eq!(reason_of(form).as_deref(), Some("body_too_long"));
    assert!(form.contains(&long));

    // A mark needs a state, and keeps the one chosen when the engine refuses it.
    let resp = act(&mut b, &csrf, &th, &[("action", "mark")]);
    let page = refused(&mut b, &resp, &back);
    assert_eq!(
        reason_of(form_with(&page, r#"id="act-mark""#).unwrap()).as_deref(),
        Some("invalid_body")
    );
    let resp = act(
        &mut b,
        &csrf,
        &th,
        &[("action", "mark"), ("state", "limbo")],
    );
    let page = refused(&mut b, &resp, &back);
    let form = form_with(&page, r#"id="act-mark""#).unwrap();
    assert!(reason_of(form).is_some());

    // An unknown action is refused on the page.
    let resp = act(&mut b, &csrf, &th, &[("action", "frobnicate")]);
    let page = refused(&mut b, &resp, &back);
    assert_eq!(reason_of(&page).as_deref(), Some("invalid_body"));
    assert!(page.contains("frobnicate"));

    // A new thread without a question.
    let resp = b.post(
        "/threads",
        &[("csrf", &csrf), ("action", "ask"), ("body", "")],
    );
    let page = refused(&mut b, &resp, "/threads");
    let form = form_with(&page, r#"id="new-ask""#).unwrap();
    assert_eq!(reason_of(form).as_deref(), Some("invalid_body"));
    let resp = b.post("/threads", &[("csrf", &csrf), ("action", "close")]);
    let page = refused(&mut b, &resp, "/threads");
    assert_eq!(reason_of(&page).as_deref(), Some("invalid_body"));

    // A thread that does not exist, and a path that names none.
    let resp = act(
        &mut b,
        &csrf,
        "th_99",
        &[("action", "note"), ("body", "hello")],
    );
    assert_eq!(resp.header("location"), Some("/threads/th_99"));
    let resp = act(
        &mut b,
        &csrf,
        "msg_1",
        &[("action", "note"), ("body", "hello")],
    );
    assert_eq!(resp.status, 404);
    assert_eq!(reason_of(&text(&resp)).as_deref(), Some("thread_not_found"));

    // A locked thread refuses a note (the engine's thread_closed), kept in its form.
    posted_message(&act(&mut b, &csrf, &th, &[("action", "close")]), &th);
    let resp = act(
        &mut b,
        &csrf,
        &th,
        &[("action", "note"), ("body", "too late")],
    );
    let page = refused(&mut b, &resp, &back);
    let form = form_with(&page, r#"id="act-note""#).expect("shown to hold its refusal");
    assert_eq!(reason_of(form).as_deref(), Some("thread_closed"));
    assert!(form.contains("too late"));

    // Only the root and the close were written.
    let kinds = message_kinds(&f.thread(&th));
    assert_eq!(kinds.len(), 2, "{kinds:?}");
}

#[test]
fn an_agents_session_cannot_act() {
    let f = fixture();
    let th = f.bobs_thread("Which port?");
    let mut b = Browser::signed_in(&f.server, &f.bob);
    let page = text(&b.get(&format!("/threads/{th}")));
    assert!(page.contains(r#"id="read-only""#));
    assert!(
        !page.contains(r#"class="action""#),
        "no action forms for an agent"
    );
    let csrf = web_client::csrf_of(&page);
    for fields in [
        vec![("action", "note"), ("body", "forged")],
        vec![("action", "close")],
    ] {
        let resp = act(&mut b, &csrf, &th, &fields);
        assert_eq!(resp.status, 403);
        assert_eq!(reason_of(&text(&resp)).as_deref(), Some("read_only"));
    }
    let resp = b.post(
        "/threads",
        &[("csrf", &csrf), ("action", "ask"), ("body", "forged?")],
    );
    assert_eq!(resp.status, 403);
    assert_eq!(reason_of(&text(&resp)).as_deref(), Some("read_only"));
    assert_eq!(f.thread(&th)["thread"]["message_count"], 1);
    let threads = f.server.get("/v1/threads", Some(&f.ann)).json();
    assert_eq!(threads["items"].as_array().unwrap().len(), 1);
}

#[test]
fn an_oversized_form_is_refused() {
    let f = fixture();
    let th = f.bobs_thread("Which port?");
    let mut b = Browser::signed_in(&f.server, &f.ann);
    let csrf = b.csrf();
    let huge = "y".repeat(70 * 1024);
    let resp = act(&mut b, &csrf, &th, &[("action", "note"), ("body", &huge)]);
    assert_eq!(resp.status, 413);
    assert_eq!(
        reason_of(&text(&resp)).as_deref(),
        Some("payload_too_large")
    );
    let resp = b.post("/threads", &[("csrf", &csrf), ("body", &huge)]);
    assert_eq!(resp.status, 413);
    assert_eq!(f.thread(&th)["thread"]["message_count"], 1);
}

#[test]
fn a_form_sent_twice_posts_once() {
    let f = fixture();
    let th = f.bobs_thread("Which port?");
    let mut b = Browser::signed_in(&f.server, &f.ann);
    let page = text(&b.get(&format!("/threads/{th}")));
    let form = form_with(&page, r#"id="act-note""#).unwrap();
    let csrf = web_client::csrf_of(form);
    let key = value_after(form, r#"name="key" value=""#).expect("an idempotency key");
    let fields = [
        ("action", "note"),
        ("body", "noted once"),
        ("key", key.as_str()),
    ];
    let first = posted_message(&act(&mut b, &csrf, &th, &fields), &th);
    let second = posted_message(&act(&mut b, &csrf, &th, &fields), &th);
    assert_eq!(first, second, "the resent form answers with the first post");
    assert_eq!(f.thread(&th)["thread"]["message_count"], 2);
    // Each rendering has its own key: the same text typed again is a new post.
    let again = text(&b.get(&format!("/threads/{th}")));
    let other = value_after(
        form_with(&again, r#"id="act-note""#).unwrap(),
        r#"name="key" value=""#,
    );
    assert_ne!(other.as_deref(), Some(key.as_str()));
    // A key the engine refuses comes back in the form like any refusal.
    let resp = act(
        &mut b,
        &csrf,
        &th,
        &[
            ("action", "note"),
            ("body", "x"),
            ("key", "no spaces allowed"),
        ],
    );
    let page = refused(&mut b, &resp, &format!("/threads/{th}"));
    assert_eq!(
        reason_of(form_with(&page, r#"id="act-note""#).unwrap()).as_deref(),
        Some("invalid_body")
    );
}
