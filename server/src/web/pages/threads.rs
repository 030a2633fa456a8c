//! `GET /threads?state=S`: the threads by last activity, oldest first (SPEC
//! §8.5), filtered by state, paged with `since`; for a person, the form that opens
//! a new thread.

use axum::extract::{RawQuery, State};
use axum::response::Response;
use maud::html;
use serde_json::{json, Map, Value};

use super::render;
use super::{param, query, run, Live};
use crate::http::App;
use crate::web::actions;
use crate::web::session::Viewer;

pub(super) async fn page(
    State(app): State<App>,
    viewer: Viewer,
    RawQuery(raw): RawQuery,
) -> Response {
    const TITLE: &str = "Threads";
    let params = match query(raw.as_deref()) {
        Ok(params) => params,
        Err(refused) => return super::refused(&viewer, TITLE, refused),
    };
    let state = param(&params, "state").map(str::to_string);
    let since = param(&params, "since").map(str::to_string);
    let mut args = Map::new();
    if let Some(state) = &state {
        args.insert("state".into(), json!(state));
    }
    if let Some(since) = &since {
        args.insert("since".into(), json!(since));
    }
    let live = Live::forum(&app);
    let forum = app.forum.clone();
    let token = viewer.token().to_string();
    let reads = run(move || {
        let result = forum.call(Some(&token), "list_threads", &Value::Object(args))?;
        let manifest = forum.call(None, "get_manifest", &Value::Null)?;
        Ok((result, states(&manifest)))
    })
    .await;
    let (result, states) = match reads {
        Ok(reads) => reads,
        Err(refused) => return super::refused(&viewer, TITLE, refused),
    };
    let items = render::items(&result);
    let chosen = state.as_deref().unwrap_or("");
    let content = html! {
        h1 { (TITLE) }
        form #thread-filter method="get" action="/threads" {
            label for="thread-filter-state" { "State" }
            " "
            select #thread-filter-state name="state" {
                option value="" selected[chosen.is_empty()] { "any" }
                @for s in &states {
                    option value=(s) selected[chosen == s.as_str()] { (s) }
                }
            }
            " "
            button type="submit" { "Show" }
        }
        @if items.is_empty() {
            p.empty {
                @match &state {
                    Some(state) => { "No thread is " (state) "." },
                    None => "No threads yet.",
                }
            }
        }
        ul #threads data-live-region {
            @for summary in items {
                li {
                    (render::thread_line(summary))
                    span.meta {
                        " · " (summary["message_count"].as_u64().unwrap_or(0)) " messages"
                        " · by " (render::author(&summary["creator"], None))
                        " · " (render::time(&summary["updated_at"]))
                    }
                }
            }
        }
        (render::next_page("/threads", &[("state", chosen)], &result))
        (actions::new_thread_form(&viewer, viewer.flash.as_ref()))
    };
    super::page(&viewer, TITLE, &live, content)
}

/// The states a thread can be in, from the manifest: the forward line, then the
/// side states.
fn states(manifest: &Value) -> Vec<String> {
    ["forward", "side"]
        .iter()
        .flat_map(|line| manifest["states"][line].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_offers_every_state_of_the_manifest() {
        let forum = parley_forum::Forum::in_memory(parley_forum::Config::default()).unwrap();
        let manifest = forum.call(None, "get_manifest", &Value::Null).unwrap();
        assert_eq!(
            states(&manifest),
            ["open", "answered", "decided", "closed", "deferred", "obsolete", "rejected"]
        );
    }
}
