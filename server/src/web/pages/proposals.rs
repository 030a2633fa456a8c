//! `GET /proposals`: every thread whose state is an unconfirmed proposal, oldest
//! proposal first, with who proposed it and why, and for a person the form that
//! confirms it.

use axum::extract::State;
use axum::response::Response;
use maud::html;

use super::render::{self, text};
use super::{run, Live};
use crate::http::App;
use crate::human;
use crate::web::actions;
use crate::web::session::Viewer;

pub(super) async fn page(State(app): State<App>, viewer: Viewer) -> Response {
    const TITLE: &str = "To confirm";
    let live = Live::forum(&app);
    let forum = app.forum.clone();
    let token = viewer.token().to_string();
    let found = match run(move || human::proposals(&*forum, Some(&token))).await {
        Ok(found) => found,
        Err(refused) => return super::refused(&viewer, TITLE, refused),
    };
    let content = html! {
        h1 { (TITLE) }
        @if found.is_empty() {
            p.empty { "No state waits for confirmation." }
        }
        ul #proposals data-live-region {
            @for proposal in &found {
                @let id = text(&proposal.thread, "id");
                li id={ "proposal-" (id) } {
                    (render::thread_line(&proposal.thread))
                    p.proposed {
                        "Proposed by "
                        span.proposer { (proposer(proposal)) }
                        @if let Some(event) = &proposal.event {
                            " · " (render::time(&event["at"]))
                            @if let Some(message) = event["message"].as_str() {
                                " · " a href=(render::message_href(id, message)) { (message) }
                            }
                        }
                    }
                    @match &proposal.message {
                        Some(message) => q.why { (message["body"].as_str().unwrap_or("")) },
                        None => p.why-missing { "The proposing message is not in the log." },
                    }
                    @if viewer.can_act {
                        (actions::confirm_form(&viewer, id, text(&proposal.thread, "state")))
                    }
                }
            }
        }
    };
    super::page(&viewer, TITLE, &live, content)
}

/// `identity/extension` of whoever proposed the state: the event's author, else
/// the proposing message's.
fn proposer(proposal: &human::Proposal) -> String {
    match (&proposal.event, &proposal.message) {
        (Some(event), _) if event["identity"].is_string() => {
            crate::view::author(&serde_json::json!({
                "identity": event["identity"],
                "extension": event["extension"],
            }))
        }
        (_, Some(message)) => crate::view::author(&message["from"]),
        _ => "?".to_string(),
    }
}
