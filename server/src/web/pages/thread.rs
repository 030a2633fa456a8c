//! `GET /threads/{id}`: a thread as its tree (SPEC §8.2), each message with its
//! kind, its author (identity/extension and author kind) and the events it caused,
//! the thread's state with its standing, who is due, the whole event log of the
//! thread, and for a person the action forms.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::response::Response;
use maud::{html, Markup};
use serde_json::Value;

use super::render::{self, text};
use super::{presence, run, Live, Refused};
use crate::http::App;
use crate::web::actions;
use crate::web::live::{read_thread, thread_print};
use crate::web::session::Viewer;

pub(super) async fn page(
    State(app): State<App>,
    viewer: Viewer,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    let id = match id {
        Ok(Path(id)) => id,
        Err(err) => return super::refused(&viewer, "Thread", Refused::bad_path("thread", &err)),
    };
    let forum = Arc::clone(&app.forum);
    let token = viewer.token().to_string();
    let asked = id.clone();
    // The print is taken from the very reads the page shows, so `/live` tells of
    // any commit after them.
    let reads = run(move || {
        let reads = read_thread(&forum, &token, &asked);
        let print = thread_print(&reads);
        let (view, events) = reads?;
        let presence = presence::read(&forum, &token, &view)?;
        Ok(((view, events), print, presence))
    })
    .await;
    let ((view, events), print, presence) = match reads {
        Ok(reads) => reads,
        Err(refused) => return super::refused(&viewer, &format!("Thread {id}"), refused),
    };
    let summary = &view["thread"];
    let thread_id = text(summary, "id").to_string();
    let topic = summary["topic"].as_str().unwrap_or("");
    let mut caused: HashMap<&str, Vec<&Value>> = HashMap::new();
    for ev in &events {
        if let Some(message) = ev["message"].as_str() {
            caused.entry(message).or_default().push(ev);
        }
    }
    let tree = Tree {
        viewer: &viewer,
        thread: &thread_id,
        replies: viewer.can_act && summary["locked"].as_bool() != Some(true),
        caused: &caused,
        turn: summary["awaiting"]["message"].as_str(),
    };
    let content = html! {
        h1 { span.id { (thread_id) } " " (topic) }
        (standing(summary))
        (presence::section(presence.as_deref()))
        section #messages data-live-region aria-label="messages" {
            @for message in view["messages"].as_array().into_iter().flatten() {
                (tree.message(message))
            }
        }
        section.events aria-labelledby="events-title" {
            h2 #events-title { "Events" }
            @if events.is_empty() {
                p.empty { "No state change yet." }
            }
            ol #events data-live-region {
                @for ev in &events { (render::event(ev)) }
            }
        }
        (actions::forms(&viewer, summary, viewer.flash.as_ref()))
    };
    let title = format!("{thread_id} {topic}");
    let live = Live::Thread {
        id: thread_id.clone(),
        print,
    };
    super::page(&viewer, &title, &live, content)
}

/// The state with its standing, who is due, and the thread's counts.
fn standing(summary: &Value) -> Markup {
    let confirmed_at = &summary["state_confirmed_at"];
    let turn = &summary["awaiting"];
    let thread = text(summary, "id");
    html! {
        p #thread-state data-live-region {
            "State: " (render::state_badge(summary))
            @if !confirmed_at.is_null() {
                " " span.confirmed { "confirmed" } " " (render::time(confirmed_at))
            }
            " · origin " span.origin { (text(summary, "state_origin")) }
            @if let Some(label) = summary["state_label"].as_str() {
                " · " span.label { (label) }
            }
        }
        p #awaiting data-live-region {
            "Due: "
            @if turn.is_null() {
                span.who { "nobody" }
            } @else {
                span.who { (due(turn)) }
                @if let Some(message) = turn["message"].as_str() {
                    ", since " a href=(render::message_href(thread, message)) { (message) }
                }
            }
        }
        p.meta data-live-region {
            (summary["message_count"].as_u64().unwrap_or(0)) " messages"
            " · opened by " (render::author(&summary["creator"], None))
            " " (render::time(&summary["created_at"]))
            " · last activity " (render::time(&summary["updated_at"]))
        }
    }
}

/// Who is due, without the message that made them so (the page links it).
fn due(turn: &Value) -> String {
    let mut who = turn.clone();
    if let Some(fields) = who.as_object_mut() {
        fields.remove("message");
    }
    crate::view::awaiting(&who)
}

/// What every message of the tree needs from its thread.
struct Tree<'a> {
    viewer: &'a Viewer,
    thread: &'a str,
    /// Whether each message offers reply forms: to a person, on a thread that is
    /// not locked.
    replies: bool,
    caused: &'a HashMap<&'a str, Vec<&'a Value>>,
    turn: Option<&'a str>,
}

impl Tree<'_> {
    /// Answer or add a note under one message, folded away until opened (open
    /// at once when it holds a refused attempt).
    fn reply_forms(&self, parent: &str) -> Markup {
        let flash = self.viewer.flash.as_ref().filter(|f| {
            f.thread.as_deref() == Some(self.thread) && f.parent.as_deref() == Some(parent)
        });
        html! {
            details.reply open[flash.is_some()] {
                summary { "Reply to " (parent) }
                @for action in ["answer", "note"] {
                    (actions::reply_form(self.viewer, self.thread, parent, action, flash))
                }
            }
        }
    }

    fn message(&self, msg: &Value) -> Markup {
        let id = text(msg, "id");
        let kind = text(msg, "kind");
        let replies = msg["replies"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let caused = self.caused.get(id).map(Vec::as_slice).unwrap_or(&[]);
        html! {
            article.message id=(id) data-kind=(kind) {
                header {
                    span.kind { (kind) } " "
                    (render::author(&msg["from"], msg["author_kind"].as_str()))
                    " · " (render::time(&msg["created_at"]))
                    " · " a.permalink href={ "#" (id) } { (id) }
                    @if let Some(to) = msg["to"].as_str() { " · to " span.to { (to) } }
                    @if let Some(state) = msg["state"].as_str() { " · state " span.state-named { (state) } }
                    @if let Some(claim) = msg["claim"].as_str() {
                        " · claim " a.claim href={ "/claims/" (claim) } { (claim) }
                    }
                    @if let Some(claim) = msg["counter_claim"].as_str() {
                        " · counter-claim " a.claim href={ "/claims/" (claim) } { (claim) }
                    }
                    @if self.turn == Some(id) { " · " span.turn { "sets the turn" } }
                }
                div.body { (msg["body"].as_str().unwrap_or("")) }
                @if let Some(evidence) = msg["evidence"].as_array().filter(|e| !e.is_empty()) {
                    ul.evidence aria-label="evidence" {
                        @for item in evidence { li { (render::evidence_item(item)) } }
                    }
                }
                @for ev in caused {
                    p.caused {
                        "↳ " a href={ "#" (text(ev, "id")) } { (crate::view::event_change(ev)) }
                    }
                }
                @if self.replies {
                    (self.reply_forms(id))
                }
                @if !replies.is_empty() {
                    div.replies {
                        @for reply in replies { (self.message(reply)) }
                    }
                }
            }
        }
    }
}
