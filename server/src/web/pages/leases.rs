//! `GET /leases`: the active leases (SPEC §16.2), by id, each with its holder, mode,
//! thread, note and expiry; for a person, a release button on each.
//!
//! `POST /leases/release` releases one with the person's token (a human may
//! release any lease): success is a 303 back to the list, which says what was
//! released; a refusal (the lease ended meanwhile: `lease_not_found`) is the list
//! again with the refusal, at the refusal's status.

use axum::extract::{RawQuery, Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{html, Markup};
use serde_json::{json, Value};

use super::render::{self, text};
use super::{param, query, read, Live};
use crate::http::App;
use crate::view;
use crate::web::posted_form;
use crate::web::session::Viewer;

const TITLE: &str = "Leases";

pub(super) async fn page(
    State(app): State<App>,
    viewer: Viewer,
    RawQuery(raw): RawQuery,
) -> Response {
    let params = match query(raw.as_deref()) {
        Ok(params) => params,
        Err(refused) => return super::refused(&viewer, TITLE, refused),
    };
    let released = param(&params, "released")
        .filter(|id| is_lease_key(id))
        .map(str::to_string);
    let note = match released {
        Some(id) => html! { p #released role="status" { "Released " (id) "." } },
        None => html! {},
    };
    render_list(&app, &viewer, StatusCode::OK, note).await
}

/// `POST /leases/release`: the form's `lease`, released with the person's token.
pub(super) async fn release(State(app): State<App>, request: Request) -> Response {
    let (_, viewer, form) = match posted_form(&app, request, true).await {
        Ok(admitted) => admitted,
        Err(refused) => return refused,
    };
    let lease = form.get("lease").unwrap_or_default().trim().to_string();
    match read(&app, &viewer, "release", json!({ "lease": lease })).await {
        Ok(result) => {
            let id = result["lease"]["id"].as_str().unwrap_or_default();
            crate::web::see_other(&format!("/leases?released={id}"))
        }
        Err(refused) => {
            let status = refused.status;
            let note = render::refusal(&refused.reason, &refused.message);
            let mut resp = render_list(&app, &viewer, status, note).await;
            crate::http::note_reason(&mut resp, &refused.reason);
            resp
        }
    }
}

/// The list of active leases with `note` above it, answered with `status`.
async fn render_list(app: &App, viewer: &Viewer, status: StatusCode, note: Markup) -> Response {
    let live = Live::forum(app);
    let result = match read(app, viewer, "get_leases", json!({})).await {
        Ok(result) => result,
        Err(refused) => return super::refused(viewer, TITLE, refused),
    };
    let content = content(viewer, render::items(&result), &note);
    let mut resp = super::page(viewer, TITLE, &live, content);
    *resp.status_mut() = status;
    resp
}

fn content(viewer: &Viewer, leases: &[Value], note: &Markup) -> Markup {
    html! {
        h1 { (TITLE) }
        p.hint {
            "A lease is an agent's advisory claim on a resource (a file, a prefix such as "
            code { "src/" } ", a job). Released, it stops counting at once."
        }
        (note)
        @if leases.is_empty() {
            p.empty { "No active lease." }
        } @else {
            table #leases data-live-region {
                thead { tr {
                    th scope="col" { "Lease" } th scope="col" { "Resource" } th scope="col" { "Mode" }
                    th scope="col" { "Holder" } th scope="col" { "Thread" } th scope="col" { "Note" }
                    th scope="col" { "Granted" } th scope="col" { "Expires" }
                    @if viewer.can_act { th scope="col" { span.visually-hidden { "Release" } } }
                } }
                tbody {
                    @for lease in leases { (row(viewer, lease)) }
                }
            }
        }
    }
}

fn row(viewer: &Viewer, lease: &Value) -> Markup {
    let id = text(lease, "id");
    html! {
        tr.lease id=(id) data-mode=(text(lease, "mode")) {
            td.id data-label="Lease" { (id) }
            td.resource data-label="Resource" { code { (text(lease, "resource")) } }
            td.mode data-label="Mode" { (text(lease, "mode")) }
            td.holder data-label="Holder" { span.who { (view::author(&lease["holder"])) } }
            td.thread data-label="Thread" {
                @if let Some(thread) = lease["thread"].as_str() {
                    a href=(render::thread_href(thread)) { (thread) }
                }
            }
            td.note data-label="Note" { (lease["note"].as_str().unwrap_or("")) }
            td.granted data-label="Granted" { (render::time(&lease["granted_at"])) }
            td.expires data-label="Expires" { (render::time(&lease["expires_at"])) }
            @if viewer.can_act {
                td.release {
                    form.release method="post" action="/leases/release" {
                        input type="hidden" name="csrf" value=(viewer.csrf);
                        input type="hidden" name="lease" value=(id);
                        button type="submit" aria-label=(format!("Release {id}")) { "Release" }
                    }
                }
            }
        }
    }
}

/// `ls_N`: the only form the note after a release echoes (it comes from the URL).
fn is_lease_key(id: &str) -> bool {
    id.strip_prefix("ls_")
        .is_some_and(|n| !n.is_empty() && n.len() <= 20 && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_person_gets_a_release_form_and_an_agent_none() {
        let lease = json!({
            "id": "ls_3", "resource": "src/<b>", "mode": "exclusive",
            "holder": {"identity": "ainotes:alice", "extension": "w1"},
            "thread": "th_2", "note": "editing \u{1b}[1A", "granted_at": "2026-12-01T10:00:00.000Z",
            "expires_at": "2026-12-01T10:10:00.000Z"
        });
        let person = Viewer::for_test("human");
        let html = content(&person, std::slice::from_ref(&lease), &html! {}).into_string();
        assert!(html.contains(r#"action="/leases/release""#), "{html}");
        assert!(html.contains(r#"name="lease" value="ls_3""#), "{html}");
        assert!(html.contains("src/&lt;b&gt;"), "{html}");
        assert!(html.contains("ainotes:alice/w1"), "{html}");
        assert!(html.contains(r#"href="/threads/th_2""#), "{html}");
        let agent = Viewer::for_test("llm");
        let html = content(&agent, &[lease], &html! {}).into_string();
        assert!(!html.contains("/leases/release"), "{html}");
    }

    #[test]
    fn only_lease_keys_are_echoed() {
        assert!(is_lease_key("ls_12"));
        for bad in ["ls_", "12", "ls_1x", "ls_<b>", "th_1"] {
            assert!(!is_lease_key(bad), "{bad}");
        }
    }
}
