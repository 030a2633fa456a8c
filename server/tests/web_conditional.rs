//! The web view's confirm, close, reopen and mark send the state the page showed
//! (`if_state`, SPEC §14.5): pressed on a page whose thread has moved since, they are
//! refused as `state_changed`, nothing is posted, and the page the person is sent
//! back to shows the refusal with the thread's new state. Over real HTTP; the same
//! story in headless Chromium is tests/browser/test_conditional.py.

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
    carol: String,
}

fn fixture() -> Fixture {
    let forum = TempForum::new();
    let ann = forum.token("ann", &["--human"]);
    let bob = forum.token("bob", &["--rights", "read,write"]);
    let carol = forum.token("carol", &["--rights", "read,write"]);
    let server = Server::start(&forum.db, None, &[]);
    Fixture {
        _forum: forum,
        server,
        ann,
        bob,
        carol,
    }
}

impl Fixture {
    fn rest_post(&self, token: &str, envelope: Value) -> Value {
        let resp = self
            .server
            .post("/v1/messages", Some(token), &envelope.to_string());
        assert_eq!(resp.status, 201, "{}", text(&resp));
        resp.json()
    }

    fn summary(&self, id: &str) -> Value {
        let resp = self
            .server
            .get(&format!("/v1/threads/{id}"), Some(&self.ann));
        resp.json()["thread"].clone()
    }

    /// Bob asks, Carol answers: the thread is `answered`, a proposal.
    fn answered(&self) -> String {
        let root = self.rest_post(&self.bob, json!({"kind": "ask", "body": "Which port?"}));
        let th = root["thread"]["id"].as_str().unwrap().to_string();
        self.rest_post(
            &self.carol,
            json!({"kind": "answer", "thread": th, "body": "7878"}),
        );
        th
    }
}

/// The fields of the form of `action` on `page`, as a browser would send them.
fn fields_of(page: &str, action: &str) -> Vec<(String, String)> {
    let form = form_with(page, &format!(r#"data-action="{action}""#)).expect("the form");
    let mut fields = Vec::new();
    for name in ["csrf", "action", "key", "if_state"] {
        if let Some(value) = value_after(form, &format!(r#"name="{name}" value=""#)) {
            fields.push((name.to_string(), value));
        }
    }
    fields
}

fn press(
    b: &mut Browser,
    th: &str,
    fields: &[(String, String)],
    extra: &[(&str, &str)],
) -> support::Response {
    let mut all: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    all.extend_from_slice(extra);
    b.post(&format!("/threads/{th}/act"), &all)
}

#[test]
fn a_stale_confirm_is_refused_and_the_page_shows_the_new_state() {
    let f = fixture();
    let th = f.answered();
    let mut b = Browser::signed_in(&f.server, &f.ann);
    // The person has the thread page and the proposals list, both showing `answered`.
    let page = text(&b.get(&format!("/threads/{th}")));
    let list = text(&b.get("/proposals"));
    for action in ["confirm", "close", "reopen", "mark"] {
        if let Some(form) = form_with(&page, &format!(r#"data-action="{action}""#)) {
            assert!(
                form.contains(r#"name="if_state" value="answered""#),
                "{action}: {form}"
            );
        }
    }
    let on_page = fields_of(&page, "confirm");
    let in_list = fields_of(&list, "confirm");
    assert!(
        in_list.contains(&("if_state".into(), "answered".into())),
        "{in_list:?}"
    );
    let close = fields_of(&page, "close");
    let mark = fields_of(&page, "mark");
    // Meanwhile Bob proposes `closed`.
    f.rest_post(
        &f.bob,
        json!({"kind": "mark", "thread": th, "state": "closed", "body": "done here"}),
    );
    let back = format!("/threads/{th}");
    for (fields, extra) in [
        (&on_page, &[][..]),
        (&in_list, &[]),
        (&close, &[]),
        (&mark, &[("state", "decided")]),
    ] {
        let resp = press(&mut b, &th, fields, extra);
        assert_eq!(resp.status, 303, "{}", text(&resp));
        assert_eq!(resp.header("location"), Some(back.as_str()));
        let shown = text(&b.get(&back));
        assert_eq!(
            reason_of(&shown).as_deref(),
            Some("state_changed"),
            "{shown}"
        );
        assert!(
            shown.contains(
                "it is `closed` now, not `answered` as your page showed, and nothing was posted"
            ),
            "{shown}"
        );
        // The page now shows `closed`, unconfirmed, and its forms carry it.
        assert!(
            shown.contains(r#"data-state="closed" data-confirmed="false""#),
            "{shown}"
        );
        assert!(fields_of(&shown, "confirm").contains(&("if_state".into(), "closed".into())));
    }
    let t = f.summary(&th);
    assert_eq!(t["state"], "closed");
    assert!(t["state_confirmed_at"].is_null(), "{t}");
    assert_eq!(t["locked"], false);
    assert_eq!(t["message_count"], 3, "nothing was posted");
    // Confirmed as now shown: closed and locked.
    let page = text(&b.get(&back));
    let resp = press(&mut b, &th, &fields_of(&page, "confirm"), &[]);
    assert_eq!(resp.status, 303);
    let t = f.summary(&th);
    assert_eq!(
        (t["state"].as_str(), t["locked"].as_bool()),
        (Some("closed"), Some(true))
    );
}
