//! What a person does in the web view: the action forms of a thread page and the
//! handlers they post to.
//!
//! Each form posts `action` (and `body`, `state`, `parent` where it has them) with
//! the session's `csrf`. The handler builds the envelope with
//! `crate::human::envelope` and posts it to the engine, exactly as a
//! REST or MCP post goes: the engine decides. Success is a 303 to the new message;
//! a refusal is kept in the session as a one-time [`Flash`] and answered with a 303
//! back to the thread, whose form then shows the refusal and what was typed.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{html, Markup};
use parley_forum::Error;
use serde_json::Value;

use super::session::{self, Viewer};
use super::{posted_form, refusal, refusal_page, see_other};
use super::{Flash, Form};
use crate::http::{blocking, App};
use crate::human::{self, Act};

/// The states a person may mark (a human may also mark `open`).
const STATES: [&str; 7] = [
    "open", "answered", "decided", "closed", "deferred", "obsolete", "rejected",
];
const SIDE_STATES: [&str; 3] = ["deferred", "obsolete", "rejected"];
/// The most characters of a body the forum accepts (`body_max_chars`); the fields
/// say so, the engine enforces it.
const BODY_MAX_CHARS: u32 = 500;

/// Every action form for a thread page, given the thread's summary; empty for an
/// agent's session. A form is shown where its act can apply to the thread's state,
/// and always when it holds the flash of a refused attempt.
pub(crate) fn forms(viewer: &Viewer, thread: &Value, flash: Option<&Flash>) -> Markup {
    if !viewer.can_act {
        return html! {};
    }
    let id = thread["id"].as_str().unwrap_or_default();
    let state = thread["state"].as_str().unwrap_or_default();
    let unconfirmed = thread["state_confirmed_at"].is_null();
    let locked = thread["locked"].as_bool().unwrap_or(false);
    let reopenable = state == "closed" || SIDE_STATES.contains(&state);
    // Only a flash of this thread, and of a form on this page (no `parent`: the
    // thread-level forms reply to the root).
    let flash = flash.filter(|f| f.thread.as_deref() == Some(id));
    let mine = |action: &str| flash.filter(|f| f.action == action && f.parent.is_none());
    let shown = |action: &str, applies: bool| applies || mine(action).is_some();
    // A refusal no form on the page holds is shown above the forms: an unknown
    // action, or a reply under a message with no reply form of its kind there (the
    // thread page offers `answer` and `note` under each message of an unlocked
    // thread).
    let orphan = flash.filter(|f| {
        let known = [
            "confirm", "close", "reopen", "mark", "answer", "note", "ask",
        ];
        let replied = matches!(f.action.as_str(), "answer" | "note") && !locked;
        !known.contains(&f.action.as_str()) || (f.parent.is_some() && !replied)
    });
    html! {
        section id="actions" aria-labelledby="actions-title" {
            h2 id="actions-title" { "Act on this thread" }
            @if let Some(f) = orphan {
                (refusal(&f.reason, &f.message))
            }
            div.state-actions {
                @if shown("confirm", unconfirmed) {
                    (state_form(viewer, id, "confirm", mine("confirm"), state))
                }
                @if shown("close", !locked) {
                    (state_form(viewer, id, "close", mine("close"), state))
                }
                @if shown("reopen", reopenable) {
                    (state_form(viewer, id, "reopen", mine("reopen"), state))
                }
                @if shown("mark", !locked) {
                    (state_form(viewer, id, "mark", mine("mark"), state))
                }
            }
            @for (action, label, hint) in [
                ("answer", "Answer", "Your answer"),
                ("note", "Add a note", "A note (expects no reply)"),
                ("ask", "Ask", "Your question"),
            ] {
                @if shown(action, !locked) {
                    (body_form(viewer, &act_path(id), action, label, hint, None, mine(action)))
                }
            }
        }
    }
}

/// The confirm form of a proposal in the proposals list, for the state `seen`
/// shown beside it; empty for an agent.
pub(crate) fn confirm_form(viewer: &Viewer, thread_id: &str, seen: &str) -> Markup {
    if !viewer.can_act {
        return html! {};
    }
    html! {
        form.action.inline data-action="confirm" method="post" action=(act_path(thread_id)) {
            (hidden(viewer, "confirm"))
            (if_state(seen))
            button type="submit" aria-label=(format!("Confirm {thread_id}")) { "Confirm" }
        }
    }
}

/// The form that opens a new thread with a question; empty for an agent.
pub(crate) fn new_thread_form(viewer: &Viewer, flash: Option<&Flash>) -> Markup {
    if !viewer.can_act {
        return html! {};
    }
    // Every refused new-thread form shows here, whatever its `action` said.
    let flash = flash.filter(|f| f.thread.is_none());
    html! {
        section id="new-thread" aria-labelledby="new-thread-title" {
            h2 id="new-thread-title" { "Ask a new question" }
            (body_form(viewer, "/threads", "ask", "Open thread", "Your question", None, flash))
        }
    }
}

/// A reply form (`answer`, `note` or `ask`) under the message `parent` of a thread,
/// for pages that offer replies beside each message; empty for an agent.
pub(crate) fn reply_form(
    viewer: &Viewer,
    thread_id: &str,
    parent: &str,
    action: &str,
    flash: Option<&Flash>,
) -> Markup {
    if !viewer.can_act {
        return html! {};
    }
    let flash = flash.filter(|f| {
        f.thread.as_deref() == Some(thread_id)
            && f.action == action
            && f.parent.as_deref() == Some(parent)
    });
    let (label, hint) = match action {
        "answer" => ("Answer", "Your answer"),
        "ask" => ("Ask", "Your question"),
        _ => ("Add a note", "A note"),
    };
    body_form(
        viewer,
        &act_path(thread_id),
        action,
        label,
        hint,
        Some(parent),
        flash,
    )
}

fn act_path(thread_id: &str) -> String {
    format!("/threads/{thread_id}/act")
}

/// The hidden fields of every action form. `key` is a fresh idempotency key for
/// each rendering of the form: a form sent twice (a double click, a resent
/// request) is one post, the second answered with the first's message.
fn hidden(viewer: &Viewer, action: &str) -> Markup {
    // Without a random source there is no key, and a resent form posts again.
    let key = session::secret().ok().map(|k| format!("web-{k}"));
    html! {
        input type="hidden" name="csrf" value=(viewer.csrf);
        input type="hidden" name="action" value=(action);
        @if let Some(key) = key {
            input type="hidden" name="key" value=(key);
        }
    }
}

/// The state the page shows, sent back with a form that changes the state: the
/// engine refuses the act with `state_changed` when the thread has moved since
/// (SPEC §14.5), so a person confirms, closes or marks only what they saw.
fn if_state(seen: &str) -> Markup {
    html! {
        @if !seen.is_empty() {
            input type="hidden" name="if_state" value=(seen);
        }
    }
}

/// A form that changes the state of a thread the page shows in state `seen`: an
/// optional comment, and for `mark` the state.
fn state_form(
    viewer: &Viewer,
    thread_id: &str,
    action: &str,
    flash: Option<&Flash>,
    seen: &str,
) -> Markup {
    let (label, what) = match action {
        "confirm" => ("Confirm", "Make the proposed state stand as it is."),
        "close" => (
            "Close",
            "Closed by a person, the thread takes no more messages.",
        ),
        "reopen" => ("Reopen", "Open the thread again for everyone."),
        _ => ("Set state", "Set any state, backwards too."),
    };
    let field = format!("{action}-body");
    let chosen = flash.and_then(|f| f.state.as_deref()).unwrap_or(seen);
    html! {
        form.action id=(format!("act-{action}")) data-action=(action) method="post" action=(act_path(thread_id)) {
            @if let Some(f) = flash {
                (refusal(&f.reason, &f.message))
            }
            h3 { (label) }
            p.hint { (what) }
            (hidden(viewer, action))
            (if_state(seen))
            @if action == "mark" {
                label for="mark-state" { "State" }
                select id="mark-state" name="state" {
                    @for state in STATES {
                        option value=(state) selected[state == chosen] { (state) }
                    }
                }
            }
            label for=(field) { "Why (optional)" }
            input id=(field) name="body" type="text" maxlength=(BODY_MAX_CHARS)
                value=(flash.map(|f| f.body.as_str()).unwrap_or_default());
            button type="submit" { (label) }
        }
    }
}

/// A form that posts a body: answer, note or ask.
fn body_form(
    viewer: &Viewer,
    path: &str,
    action: &str,
    label: &str,
    hint: &str,
    parent: Option<&str>,
    flash: Option<&Flash>,
) -> Markup {
    let field = match parent {
        Some(parent) => format!("{action}-body-{parent}"),
        None => format!("{action}-body"),
    };
    let form_id = match parent {
        Some(parent) => format!("act-{action}-{parent}"),
        None if path == "/threads" => "new-ask".to_string(),
        None => format!("act-{action}"),
    };
    html! {
        form.action id=(form_id) data-action=(action) method="post" action=(path) {
            @if let Some(f) = flash {
                (refusal(&f.reason, &f.message))
            }
            (hidden(viewer, action))
            @if let Some(parent) = parent {
                input type="hidden" name="parent" value=(parent);
            }
            label for=(field) { (hint) }
            textarea id=(field) name="body" rows="3" maxlength=(BODY_MAX_CHARS) {
                (flash.map(|f| f.body.as_str()).unwrap_or_default())
            }
            button type="submit" { (label) }
        }
    }
}

/// `POST /threads/{id}/act`.
pub(crate) async fn act(
    State(app): State<App>,
    id: Result<Path<String>, PathRejection>,
    request: Request,
) -> Response {
    let (_, viewer, form) = match posted_form(&app, request, true).await {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    // A path that is no thread id (or not UTF-8) names no thread.
    let thread = id.ok().and_then(|Path(id)| thread_key(&id));
    let Some(thread) = thread else {
        return refusal_page(
            Some(&viewer),
            StatusCode::NOT_FOUND,
            "thread_not_found",
            "the path names no thread (a thread id looks like th_12 or 12)",
        );
    };
    perform(&app, &viewer, Some(thread), &form).await
}

/// `POST /threads`: a new thread opened by a question.
pub(crate) async fn new_thread(State(app): State<App>, request: Request) -> Response {
    let (_, viewer, form) = match posted_form(&app, request, true).await {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    perform(&app, &viewer, None, &form).await
}

/// Builds the envelope of the form's act on `thread` (a new thread when `None`),
/// posts it, and answers with the 303 to the outcome.
async fn perform(app: &App, viewer: &Viewer, thread: Option<String>, form: &Form) -> Response {
    let action = form.get("action").unwrap_or_default().trim().to_string();
    // A new thread is opened by an `ask`; the form says so, but nothing else could be.
    let action = if thread.is_none() && action.is_empty() {
        "ask".to_string()
    } else {
        action
    };
    let body = form.get("body").map(str::to_string);
    let state = form
        .get("state")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let parent = form
        .get("parent")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string);
    // The state the page showed (`human::envelope` keeps it for the marking acts).
    let seen = form.get("if_state").map(str::to_string);
    let shown = seen.clone();
    let back = match &thread {
        Some(thread) => format!("/threads/{thread}"),
        None => "/threads".to_string(),
    };
    let refused = |err: Error| -> Response {
        let Error::Refused(refusal) = err else {
            return failed(viewer, &err);
        };
        // The page the person is sent back to shows the thread as it is now; the
        // refusal says what changed and that nothing was posted.
        let message = match (refusal.state, &shown) {
            (Some(now), Some(shown)) if refusal.reason == parley_forum::Reason::StateChanged => {
                format!(
                    "The thread changed while you looked: it is `{}` now, not `{shown}` as \
                     your page showed, and nothing was posted. Look at it again below.",
                    now.as_str()
                )
            }
            _ => refusal.message.clone(),
        };
        let flash = Flash {
            action: action.clone(),
            thread: thread.clone(),
            reason: refusal.reason.as_str().to_string(),
            message,
            body: body.clone().unwrap_or_default(),
            state: state.clone(),
            parent: parent.clone(),
        };
        app.web.set_flash(viewer.session(), flash);
        let mut resp = see_other(&back);
        crate::http::note_reason(&mut resp, refusal.reason.as_str());
        resp
    };
    let act = match Act::parse(&action, state.as_deref()) {
        Ok(act) if thread.is_none() && act != Act::Ask => {
            return refused(Error::Refused(parley_forum::Refusal::new(
                parley_forum::Reason::InvalidBody,
                "a new thread is opened by a question (`ask`)",
            )))
        }
        Ok(act) => act,
        Err(err) => return refused(err),
    };
    let forum = app.forum.clone();
    let token = viewer.token().to_string();
    let (on, under, text) = (thread.clone(), parent.clone(), body.clone());
    let built = blocking(move || {
        human::envelope(
            &*forum,
            Some(&token),
            on.as_deref().unwrap_or_default(),
            under.as_deref(),
            &act,
            text.as_deref(),
            seen.as_deref(),
        )
    })
    .await;
    let mut envelope = match built {
        Ok(Ok(envelope)) => envelope,
        Ok(Err(err)) => return refused(err),
        Err(resp) => return resp,
    };
    if let Some(fields) = envelope.as_object_mut() {
        if thread.is_none() {
            // Neither `thread` nor `parent`: the question opens a thread (SPEC §3.1).
            fields.remove("thread");
            fields.remove("parent");
        }
        // The engine judges the key's syntax (SPEC §14.3) like any other field.
        if let Some(key) = form.get("key").map(str::trim).filter(|k| !k.is_empty()) {
            fields.insert("idempotency_key".into(), Value::from(key));
        }
    }
    let forum = app.forum.clone();
    let token = viewer.token().to_string();
    match blocking(move || forum.call(Some(&token), "post", &envelope)).await {
        Ok(Ok(posted)) => {
            let thread = posted["thread"]["id"].as_str().unwrap_or_default();
            let message = posted["message"]["id"].as_str().unwrap_or_default();
            see_other(&format!("/threads/{thread}#{message}"))
        }
        Ok(Err(err)) => refused(err),
        Err(resp) => resp,
    }
}

/// `th_12` for `th_12` or `12`; `None` for anything that is not a thread id.
fn thread_key(id: &str) -> Option<String> {
    let digits = id.strip_prefix("th_").unwrap_or(id);
    if digits.is_empty() || digits.len() > 19 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok().filter(|n| *n > 0)?;
    Some(format!("th_{n}"))
}

fn failed(viewer: &Viewer, err: &Error) -> Response {
    eprintln!("parley: a web action failed: {err}");
    refusal_page(
        Some(viewer),
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal_error",
        "the action failed on the server",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn thread_ids_take_both_forms() {
        assert_eq!(thread_key("th_12").as_deref(), Some("th_12"));
        assert_eq!(thread_key("12").as_deref(), Some("th_12"));
        assert_eq!(thread_key("007").as_deref(), Some("th_7"));
        for bad in [
            "",
            "th_",
            "0",
            "th_0",
            "msg_3",
            "1x",
            "99999999999999999999",
            "-1",
        ] {
            assert_eq!(thread_key(bad), None, "{bad}");
        }
    }

    fn flash(action: &str, thread: Option<&str>) -> Flash {
        Flash {
            action: action.into(),
            thread: thread.map(str::to_string),
            reason: "invalid_transition".into(),
            message: "nothing to confirm".into(),
            body: "kept <text>".into(),
            state: Some("deferred".into()),
            parent: None,
        }
    }

    #[test]
    fn forms_follow_the_state_and_show_a_flash_in_its_form() {
        let human = Viewer::for_test("human");
        let open =
            json!({"id": "th_1", "state": "open", "state_confirmed_at": "t", "locked": false});
        let text = forms(&human, &open, None).into_string();
        assert!(
            !text.contains(r#"data-action="confirm""#),
            "nothing to confirm"
        );
        for action in ["close", "mark", "answer", "note", "ask"] {
            assert!(
                text.contains(&format!(r#"data-action="{action}""#)),
                "{action}"
            );
        }
        assert!(!text.contains(r#"data-action="reopen""#));

        let refused = flash("confirm", Some("th_1"));
        let text = forms(&human, &open, Some(&refused)).into_string();
        let form = text
            .split("<form")
            .find(|f| f.contains(r#"data-action="confirm""#))
            .expect("the confirm form is shown to hold its refusal");
        assert!(form.contains(r#"data-reason="invalid_transition""#));
        assert!(
            form.contains("kept &lt;text&gt;"),
            "the body is kept, escaped"
        );

        let other = forms(&human, &open, Some(&flash("confirm", Some("th_2")))).into_string();
        assert!(
            !other.contains("refusal"),
            "another thread's flash is not shown"
        );

        let locked =
            json!({"id": "th_1", "state": "closed", "state_confirmed_at": "t", "locked": true});
        let text = forms(&human, &locked, None).into_string();
        assert!(text.contains(r#"data-action="reopen""#));
        assert!(!text.contains(r#"data-action="answer""#));

        let proposed =
            json!({"id": "th_1", "state": "decided", "state_confirmed_at": null, "locked": false});
        assert!(forms(&human, &proposed, None)
            .into_string()
            .contains(r#"data-action="confirm""#));
    }

    #[test]
    fn agents_get_no_forms() {
        let agent = Viewer::for_test("llm");
        let open =
            json!({"id": "th_1", "state": "decided", "state_confirmed_at": null, "locked": false});
        assert_eq!(forms(&agent, &open, None).into_string(), "");
        assert_eq!(confirm_form(&agent, "th_1", "answered").into_string(), "");
        assert_eq!(new_thread_form(&agent, None).into_string(), "");
        assert_eq!(
            reply_form(&agent, "th_1", "msg_1", "note", None).into_string(),
            ""
        );
    }

    #[test]
    fn the_new_thread_form_holds_its_flash() {
        let human = Viewer::for_test("human");
        let text = new_thread_form(&human, Some(&flash("ask", None))).into_string();
        assert!(text.contains(r#"action="/threads""#));
        assert!(text.contains(r#"data-reason="invalid_transition""#));
        assert!(text.contains(r#"name="csrf" value="csrf-for-test""#));
    }
}
