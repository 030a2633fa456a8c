//! `GET /search?q=WORDS`: the messages holding every word (SPEC §14.4), newest
//! first, each linking to its place in its thread.

use axum::extract::{RawQuery, State};
use axum::response::Response;
use maud::html;
use serde_json::{json, Map, Value};

use super::render::{self, text};
use super::{param, query, read, Live};
use crate::http::App;
use crate::web::session::Viewer;

pub(super) async fn page(
    State(app): State<App>,
    viewer: Viewer,
    RawQuery(raw): RawQuery,
) -> Response {
    const TITLE: &str = "Search";
    let params = match query(raw.as_deref()) {
        Ok(params) => params,
        Err(refused) => return super::refused(&viewer, TITLE, refused),
    };
    let q = param(&params, "q").unwrap_or("");
    let thread = param(&params, "thread").unwrap_or("");
    let live = Live::forum(&app);
    // No words, no search: the page is the form alone.
    let result = if q.trim().is_empty() {
        None
    } else {
        let mut args = Map::new();
        args.insert("q".into(), json!(q));
        if !thread.is_empty() {
            args.insert("thread".into(), json!(thread));
        }
        if let Some(since) = param(&params, "since") {
            args.insert("since".into(), json!(since));
        }
        match read(&app, &viewer, "search", Value::Object(args)).await {
            Ok(result) => Some(result),
            Err(refused) => return super::refused(&viewer, TITLE, refused),
        }
    };
    let content = html! {
        h1 { (TITLE) @if !q.is_empty() { ": " q.words { (q) } } }
        form #search-page method="get" action="/search" role="search" {
            label for="search-page-q" { "Words" }
            " "
            input #search-page-q name="q" type="search" value=(q) required;
            @if !thread.is_empty() {
                input type="hidden" name="thread" value=(thread);
            }
            " "
            button type="submit" { "Search" }
        }
        @if let Some(result) = &result {
            @let items = render::items(result);
            @if items.is_empty() {
                p.empty { "No message holds every one of these words." }
            }
            ol #results data-live-region {
                @for item in items {
                    @let (message, summary) = (&item["message"], &item["thread"]);
                    @let (thread_id, message_id) = (text(summary, "id"), text(message, "id"));
                    li {
                        a href=(render::message_href(thread_id, message_id)) {
                            span.id { (message_id) } " in " (thread_id) " " span.topic { (summary["topic"].as_str().unwrap_or("")) }
                        }
                        " " (render::state_badge(summary))
                        p.hit {
                            span.kind { (text(message, "kind")) } " by "
                            (render::author(&message["from"], message["author_kind"].as_str()))
                            " · " (render::time(&message["created_at"]))
                        }
                        q.body { (message["body"].as_str().unwrap_or("")) }
                    }
                }
            }
            (render::next_page("/search", &[("q", q), ("thread", thread)], result))
        }
    };
    super::page(&viewer, TITLE, &live, content)
}
