//! `GET /inbox`: the threads waiting for the signed-in person (SPEC §8.3), each
//! with the message that made it due.

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
    const TITLE: &str = "Waiting for you";
    let params = match query(raw.as_deref()) {
        Ok(params) => params,
        Err(refused) => return super::refused(&viewer, TITLE, refused),
    };
    let since = param(&params, "since");
    let mut args = Map::new();
    if let Some(since) = since {
        args.insert("since".into(), json!(since));
    }
    let live = Live::forum(&app);
    let result = match read(&app, &viewer, "get_inbox", Value::Object(args)).await {
        Ok(result) => result,
        Err(refused) => return super::refused(&viewer, TITLE, refused),
    };
    let items = render::items(&result);
    let content = html! {
        h1 { (TITLE) }
        @if items.is_empty() {
            p.empty { "Nothing is waiting for you." }
        }
        ul #inbox data-live-region {
            @for item in items {
                @let (summary, message) = (&item["thread"], &item["message"]);
                li {
                    (render::thread_line(summary))
                    p.due {
                        "Due since "
                        a href=(render::message_href(text(summary, "id"), text(message, "id"))) {
                            (text(message, "kind"))
                        }
                        " by " (render::author(&message["from"], message["author_kind"].as_str()))
                        " · " (render::time(&message["created_at"]))
                    }
                    q.why { (message["body"].as_str().unwrap_or("")) }
                }
            }
        }
        (render::next_page("/inbox", &[], &result))
    };
    super::page(&viewer, TITLE, &live, content)
}
