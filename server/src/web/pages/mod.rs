//! The read pages of the web view: the inbox, the proposals to confirm, threads by
//! state, a thread as its tree, a claim with its chain, the event log and search.
//!
//! Each page is one engine read (or a few) with the signed-in person's token, run
//! on the blocking pool as the REST reads are, rendered with maud (which escapes
//! every value). A refusal of the read is a page of its own, with the refusal's
//! status code and `p.refusal[data-reason]`. Every page marks what `/live` needs
//! to tell it when it is out of date (see `live`), and works as a plain page
//! without JavaScript.

mod artifact;
mod claim;
mod events;
mod inbox;
mod leases;
mod presence;
mod proposals;
mod render;
mod search;
mod thread;
mod threads;

use axum::extract::rejection::PathRejection;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use maud::{html, Markup};
use parley_forum::Error;
use serde_json::Value;

use crate::http::App;
use crate::web::layout;
use crate::web::session::Viewer;

pub(crate) fn routes() -> Router<App> {
    Router::new()
        .route("/inbox", get(inbox::page))
        .route("/proposals", get(proposals::page))
        .route("/threads", get(threads::page))
        .route("/threads/{id}", get(thread::page))
        .route("/claims/{id}", get(claim::page))
        .route("/artifacts/{ref}", get(artifact::bytes))
        .route("/events", get(events::page))
        .route("/search", get(search::page))
        .route("/leases", get(leases::page))
        .route("/leases/release", axum::routing::post(leases::release))
}

/// Why a page could not show what was asked, as the page says it.
#[derive(Debug)]
pub(super) struct Refused {
    status: StatusCode,
    reason: String,
    message: String,
}

impl Refused {
    fn new(status: StatusCode, reason: &str, message: impl Into<String>) -> Refused {
        Refused {
            status,
            reason: reason.to_string(),
            message: message.into(),
        }
    }

    /// A query string that is not `key=value&…` text.
    /// A path whose `{id}` could not be read (not UTF-8, say): `what` names the id.
    fn bad_path(what: &str, err: &PathRejection) -> Refused {
        Refused::bad_query(format!(
            "the {what} id in the path cannot be read: {}",
            err.body_text()
        ))
    }

    fn bad_query(message: impl Into<String>) -> Refused {
        Refused::new(StatusCode::BAD_REQUEST, "invalid_argument", message)
    }

    /// An engine call that failed on the blocking pool.
    fn engine_failed() -> Refused {
        Refused::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "the engine call failed",
        )
    }
}

impl From<Error> for Refused {
    fn from(err: Error) -> Refused {
        match err {
            Error::Refused(refusal) => Refused::new(
                StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::BAD_REQUEST),
                refusal.reason.as_str(),
                refusal.message,
            ),
            // A read of a profile the host switched off (`get_claim`, `search`).
            Error::UnknownOperation(name) => Refused::new(
                StatusCode::NOT_FOUND,
                "unknown_operation",
                format!("operation {name} is not offered by this forum"),
            ),
            other => {
                eprintln!("parley: a web page's read failed: {other}");
                Refused::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal_error",
                    other.to_string(),
                )
            }
        }
    }
}

/// Runs `f` (engine calls) on the blocking pool, as the REST reads do.
pub(super) async fn run<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Refused> {
    match crate::http::blocking(f).await {
        Ok(outcome) => outcome.map_err(Refused::from),
        Err(_) => Err(Refused::engine_failed()),
    }
}

/// One read with the viewer's token.
pub(super) async fn read(
    app: &App,
    viewer: &Viewer,
    op: &'static str,
    args: Value,
) -> Result<Value, Refused> {
    let forum = app.forum.clone();
    let token = viewer.token().to_string();
    run(move || forum.call(Some(&token), op, &args)).await
}

/// The query string as `(key, value)` pairs, refusing one that cannot be read (a
/// percent escape that is not UTF-8 would otherwise turn into U+FFFD silently).
pub(super) fn query(raw: Option<&str>) -> Result<Vec<(String, String)>, Refused> {
    let raw = raw.unwrap_or("");
    let bytes = raw.replace('+', " ");
    for piece in bytes.split(['&', '=']) {
        if decode(piece).is_none() {
            return Err(Refused::bad_query(
                "the query string holds a percent escape that is not UTF-8",
            ));
        }
    }
    serde_urlencoded::from_str(raw)
        .map_err(|e| Refused::bad_query(format!("malformed query string: {e}")))
}

/// The first value of `key` in `params`, when given and not empty.
pub(super) fn param<'a>(params: &'a [(String, String)], key: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// A percent-decoded query component, `None` when its bytes are not UTF-8.
fn decode(piece: &str) -> Option<String> {
    let bytes = piece.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied(),
            bytes.get(i + 2).copied(),
        ) {
            (b'%', Some(h), Some(l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// What `/live` compares to tell a page that it is out of date.
pub(super) enum Live {
    /// A list page: any commit after the `n`-th since the server started.
    Forum(u64),
    /// A thread page: a change to what `crate::web::live::thread_print` prints.
    Thread { id: String, print: String },
}

impl Live {
    /// The commits seen so far: taken before a list page's reads, so that a commit
    /// after them is always told.
    pub(super) fn forum(app: &App) -> Live {
        Live::Forum(app.forum.subscribe().seen())
    }

    fn markup(&self) -> Markup {
        let (thread, seen) = match self {
            Live::Forum(n) => (None, crate::web::live::forum_print(*n)),
            Live::Thread { id, print } => (Some(id.as_str()), print.clone()),
        };
        html! {
            div #live hidden data-live-thread=[thread] data-live-seen=(seen) {}
        }
    }
}

/// A page of forum data, with what `/live` needs.
pub(super) fn page(viewer: &Viewer, title: &str, live: &Live, content: Markup) -> Response {
    let content = html! { (content) (live.markup()) };
    html_response(StatusCode::OK, layout::page(Some(viewer), title, content))
}

/// The page of a read that was refused, with the refusal's status.
pub(super) fn refused(viewer: &Viewer, title: &str, refused: Refused) -> Response {
    let content = html! {
        h1 { (title) }
        (render::refusal(&refused.reason, &refused.message))
    };
    let mut resp = html_response(refused.status, layout::page(Some(viewer), title, content));
    crate::http::note_reason(&mut resp, &refused.reason);
    resp
}

fn html_response(status: StatusCode, markup: Markup) -> Response {
    let mut resp = (status, markup).into_response();
    // A page shows what one person may read; no shared cache keeps it.
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_read_and_bad_escapes_refused() {
        let params = query(Some("state=open&q=a+b%26c&since=")).unwrap();
        assert_eq!(param(&params, "state"), Some("open"));
        assert_eq!(param(&params, "q"), Some("a b&c"));
        assert_eq!(param(&params, "since"), None);
        assert_eq!(param(&params, "missing"), None);
        assert!(query(None).unwrap().is_empty());
        for bad in ["q=%FF", "caf%C3=1", "q=%ED%A0%80"] {
            let refused = query(Some(bad)).expect_err(bad);
            assert_eq!(refused.reason, "invalid_argument", "{bad}");
            assert_eq!(refused.status, StatusCode::BAD_REQUEST);
        }
    }

    #[test]
    fn engine_refusals_keep_their_reason_and_status() {
        let refusal = parley_forum::Refusal::new(parley_forum::Reason::ThreadNotFound, "no th_9");
        let refused = Refused::from(Error::Refused(refusal));
        assert_eq!(refused.status, StatusCode::NOT_FOUND);
        assert_eq!(refused.reason, "thread_not_found");
        let off = Refused::from(Error::UnknownOperation("search".into()));
        assert_eq!(
            (off.status, off.reason.as_str()),
            (StatusCode::NOT_FOUND, "unknown_operation")
        );
    }
}
