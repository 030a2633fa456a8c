//! `GET /events?thread=TH`: the event log (SPEC §8.4), oldest first, of the forum
//! or of one thread, paged with `since`.

use axum::extract::{RawQuery, State};
use axum::response::Response;
use maud::html;
use serde_json::{json, Map, Value};

use super::render;
use super::{param, query, read, Live};
use crate::http::App;
use crate::web::session::Viewer;

pub(super) async fn page(
    State(app): State<App>,
    viewer: Viewer,
    RawQuery(raw): RawQuery,
) -> Response {
    const TITLE: &str = "Events";
    let params = match query(raw.as_deref()) {
        Ok(params) => params,
        Err(refused) => return super::refused(&viewer, TITLE, refused),
    };
    let thread = param(&params, "thread").unwrap_or("");
    let mut args = Map::new();
    if !thread.is_empty() {
        args.insert("thread".into(), json!(thread));
    }
    if let Some(since) = param(&params, "since") {
        args.insert("since".into(), json!(since));
    }
    let live = Live::forum(&app);
    let result = match read(&app, &viewer, "get_events", Value::Object(args)).await {
        Ok(result) => result,
        Err(refused) => return super::refused(&viewer, TITLE, refused),
    };
    let items = render::items(&result);
    let content = html! {
        h1 {
            (TITLE)
            @if !thread.is_empty() { " of " a href=(render::thread_href(thread)) { (thread) } }
        }
        form #event-filter method="get" action="/events" {
            label for="event-filter-thread" { "Thread" }
            " "
            input #event-filter-thread name="thread" type="text" value=(thread)
                placeholder="th_1" autocomplete="off";
            " "
            button type="submit" { "Show" }
        }
        @if items.is_empty() {
            p.empty { "No events." }
        }
        ol #events data-live-region {
            @for ev in items { (render::event(ev)) }
        }
        (render::next_page("/events", &[("thread", thread)], &result))
    };
    super::page(&viewer, TITLE, &live, content)
}
