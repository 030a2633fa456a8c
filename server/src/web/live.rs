//! `GET /live`: tells an open page that what it shows has changed, so that its
//! script (`assets/live.js`) fetches it again.
//!
//! The stream is an event stream like those of `http::sse`, on the same machinery
//! (`sse::Outlet`): it holds a place under the cap on waits (`--max-waits`), waits
//! for commits without holding a thread, sends a heartbeat comment when it has been
//! silent for the heartbeat interval, and ends on shutdown. It is authenticated by
//! the session cookie, not a bearer token.
//!
//! Each page carries a print of what it shows (`data-live-seen`), which the script
//! passes as `seen`; a reconnecting `EventSource` sends the last event's id
//! (`Last-Event-ID`), which is the print at that event, instead. The stream sends
//! `event: changed` at once when the print it computes differs from that, and
//! after each commit that changes it:
//! - with `thread=th_N` (a thread page), the print is a digest of the thread's tree
//!   and its events, the reads the page is made of ([`read_thread`]): a commit
//!   elsewhere in the forum is not told;
//! - without (a list page), the print is the number of commits since the server
//!   started: every commit is told.
//!
//! Every run reads with the session's token, so a revoked token ends the stream
//! (`event: ended`), as does a session that was signed out or expired. Two
//! `changed` events are at least [`SPACING`] apart: commits in between are told
//! once, so a busy forum does not have a page refetched many times a second.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, Request, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use parley_forum::{Error, Forum};
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use crate::http::sse::Outlet;
use crate::http::App;
use crate::web::session::Viewer;

/// The least time between two `changed` events of one stream.
const SPACING: Duration = Duration::from_millis(500);
/// How long a browser waits before reconnecting a stream that dropped, in ms.
const RETRY_MS: u64 = 3000;

pub(crate) fn routes() -> Router<App> {
    Router::new().route("/live", get(live))
}

/// What a thread page shows: the thread with its tree (`get_thread`), and every
/// event of the thread, oldest first.
pub(crate) fn read_thread(
    forum: &Forum,
    token: &str,
    thread: &str,
) -> Result<(Value, Vec<Value>), Error> {
    let view = forum.call(Some(token), "get_thread", &json!({ "thread": thread }))?;
    // The summary's id is the key form, whatever form the page was asked with.
    let id = view["thread"]["id"].as_str().unwrap_or(thread).to_string();
    let mut events = Vec::new();
    let mut args = Map::new();
    args.insert("thread".into(), json!(id));
    args.insert("limit".into(), json!(forum.config().limits.page_max));
    loop {
        let page = forum.call(Some(token), "get_events", &Value::Object(args.clone()))?;
        events.extend(page["items"].as_array().into_iter().flatten().cloned());
        match (page["more"].as_bool(), page["cursor"].as_str()) {
            (Some(true), Some(cursor)) => {
                args.insert("since".into(), json!(cursor));
            }
            _ => return Ok((view, events)),
        }
    }
}

/// The print of a thread page: a digest of its reads, or of the refusal that
/// stood in their place (a thread that does not exist yet may come to).
pub(crate) fn thread_print(outcome: &Result<(Value, Vec<Value>), Error>) -> String {
    let mut hasher = DefaultHasher::new();
    match outcome {
        Ok((view, events)) => {
            view.to_string().hash(&mut hasher);
            for event in events {
                event.to_string().hash(&mut hasher);
            }
        }
        Err(err) => match err.refusal() {
            Some(refusal) => refusal.reason.as_str().hash(&mut hasher),
            None => err.to_string().hash(&mut hasher),
        },
    }
    format!("t{:016x}", hasher.finish())
}

/// The print of a list page: the commits the server had seen before its reads.
pub(crate) fn forum_print(commits: u64) -> String {
    format!("c{commits}")
}

/// What one stream follows.
#[derive(Clone)]
enum Follow {
    Forum,
    Thread(String),
}

/// What one run of a stream found.
enum Found {
    /// The print of what the page shows now.
    Print(String),
    /// The token was refused: the stream ends with this.
    Ended(Value),
}

async fn live(State(app): State<App>, parts: Parts) -> Response {
    let Ok(viewer) = resolve(&app, &parts).await else {
        return plain(
            StatusCode::UNAUTHORIZED,
            "session_missing",
            "no session: sign in at /sign-in",
        );
    };
    let query = parts.uri.query();
    let headers = &parts.headers;
    let params: Vec<(String, String)> = match serde_urlencoded::from_str(query.unwrap_or("")) {
        Ok(params) => params,
        Err(e) => {
            return plain(
                StatusCode::BAD_REQUEST,
                "invalid_argument",
                &format!("malformed query string: {e}"),
            )
        }
    };
    let get = |key: &str| {
        params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    };
    if let Some((key, _)) = params.iter().find(|(k, _)| k != "thread" && k != "seen") {
        return plain(
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            &format!("/live takes `thread` and `seen`, not `{key}`"),
        );
    }
    let follow = match get("thread") {
        Some(thread) => Follow::Thread(thread),
        None => Follow::Forum,
    };
    // A reconnecting EventSource's last id is newer than the page's print.
    let seen = match headers.get("last-event-id").map(HeaderValue::to_str) {
        Some(Ok(id)) if !id.is_empty() => Some(id.to_string()),
        _ => get("seen"),
    };
    let token = viewer.token().to_string();
    let cookies: Vec<HeaderValue> = headers.get_all(header::COOKIE).iter().cloned().collect();
    // Taken before the first run: a commit after it is seen.
    let sub = app.forum.subscribe();
    let first = match run(&app, &token, &follow, sub.seen()).await {
        Some(found) => found,
        None => {
            return plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                "the engine call failed",
            )
        }
    };
    let print = match first {
        Found::Print(print) => print,
        Found::Ended(error) => {
            let status = error["error"]["status"].as_u64().unwrap_or(401);
            let status = u16::try_from(status)
                .ok()
                .and_then(|s| StatusCode::from_u16(s).ok())
                .unwrap_or(StatusCode::UNAUTHORIZED);
            let reason = error["error"]["reason"].as_str().unwrap_or("token_invalid");
            let message = error["error"]["message"].as_str().unwrap_or("");
            return plain(status, reason, message);
        }
    };
    let (outlet, resp) = match Outlet::open(&app, Some(&token), sub) {
        Ok(opened) => opened,
        Err(refusal) => return crate::http::too_many_waits(refusal),
    };
    let stream = Stream {
        app,
        cookies,
        token,
        follow,
        outlet,
    };
    tokio::spawn(stream.run(print, seen));
    resp
}

/// One run: the print of what the page shows, read with `token`; `None` when the
/// engine call failed on its thread.
async fn run(app: &App, token: &str, follow: &Follow, commits: u64) -> Option<Found> {
    let forum = Arc::clone(&app.forum);
    let token = token.to_string();
    let follow = follow.clone();
    app.readers
        .run(move || {
            let outcome = match &follow {
                Follow::Thread(thread) => {
                    let reads = read_thread(&forum, &token, thread);
                    match reads {
                        Err(err) if ends(&err) => Err(err),
                        reads => Ok(thread_print(&reads)),
                    }
                }
                // The token is checked on every run, as every read checks it.
                Follow::Forum => forum
                    .call(Some(&token), "whoami", &Value::Null)
                    .map(|_| forum_print(commits)),
            };
            match outcome {
                Ok(print) => Found::Print(print),
                Err(err) => Found::Ended(crate::http::sse::error_json(&err)),
            }
        })
        .await
}

/// Whether a refusal ends the stream: the token's (revoked, or gone), or a
/// failure of the engine. Any other refusal is what the page shows.
fn ends(err: &Error) -> bool {
    match err.refusal() {
        Some(refusal) => refusal.status() == 401,
        None => !matches!(err, Error::UnknownOperation(_)),
    }
}

struct Stream {
    app: App,
    /// The request's cookies, to check that its session still stands.
    cookies: Vec<HeaderValue>,
    token: String,
    follow: Follow,
    outlet: Outlet,
}

impl Stream {
    async fn run(mut self, mut print: String, seen: Option<String>) {
        let mut text = format!("retry: {RETRY_MS}\n: parley live\n\n");
        let mut last_changed = None;
        if seen.as_deref().is_some_and(|seen| seen != print) {
            text.push_str(&changed(&print, &self.follow));
            last_changed = Some(Instant::now());
        }
        if !self.outlet.send(text).await {
            return;
        }
        loop {
            let last_run = Instant::now();
            match self.outlet.wait(last_run).await {
                Some(true) => {}
                Some(false) => {
                    self.outlet.send_shutdown().await;
                    return;
                }
                None => return,
            }
            if let Some(at) = last_changed {
                if !self.outlet.pause_until(at + SPACING).await {
                    if self.outlet.stopping() {
                        self.outlet.send_shutdown().await;
                    }
                    return;
                }
            }
            let commits = self.outlet.seen();
            match run(&self.app, &self.token, &self.follow, commits).await {
                Some(Found::Print(now)) => {
                    if now != print {
                        // The session is checked when there is something to tell
                        // (as the page's refetch would be): checking it on every
                        // commit would keep an idle session alive.
                        if !self.session_stands().await {
                            let gone = json!({ "error": { "reason": "session_ended", "status": 401, "message": "the session was signed out or has expired" } });
                            let _ = self
                                .outlet
                                .send(format!("event: ended\ndata: {gone}\n\n"))
                                .await;
                            return;
                        }
                        print = now;
                        last_changed = Some(Instant::now());
                        if !self.outlet.send(changed(&print, &self.follow)).await {
                            return;
                        }
                    }
                }
                Some(Found::Ended(error)) => {
                    let _ = self
                        .outlet
                        .send(format!("event: ended\ndata: {error}\n\n"))
                        .await;
                    return;
                }
                None => {
                    self.outlet.send_failure().await;
                    return;
                }
            }
        }
    }
}

impl Stream {
    /// Whether the stream's session is still signed in (not signed out, expired, or
    /// ended by a revoked token).
    async fn session_stands(&self) -> bool {
        let mut request = Request::builder();
        for cookie in &self.cookies {
            request = request.header(header::COOKIE, cookie.clone());
        }
        match request.body(()) {
            Ok(request) => resolve(&self.app, &request.into_parts().0).await.is_ok(),
            Err(_) => false,
        }
    }
}

/// The viewer of a request's session. A stream only looks: a refused form kept
/// for the session's next page (its flash) is put back.
async fn resolve(app: &App, parts: &Parts) -> Result<Viewer, Response> {
    let mut viewer = Viewer::resolve(parts, app).await?;
    if let Some(flash) = viewer.flash.take() {
        app.web.set_flash(viewer.session(), flash);
    }
    Ok(viewer)
}

/// `event: changed`, whose id is the print it tells of.
fn changed(print: &str, follow: &Follow) -> String {
    let data = match follow {
        Follow::Thread(thread) => json!({ "thread": thread }),
        Follow::Forum => json!({}),
    };
    format!("id: {print}\nevent: changed\ndata: {data}\n\n")
}

/// A refusal before the stream starts, as plain JSON (an `EventSource` does not
/// follow it; `fetch` callers can read it).
fn plain(status: StatusCode, reason: &str, message: &str) -> Response {
    crate::http::error_response(status, reason, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_forum::{Config, Right, TokenSpec};

    #[test]
    fn a_thread_print_changes_with_its_thread_only() {
        let forum = Forum::in_memory(Config::default()).unwrap();
        let token = forum
            .create_token(&TokenSpec::llm("bob", &[Right::Read, Right::Write]))
            .unwrap();
        let other = forum
            .create_token(&TokenSpec::llm("carol", &[Right::Read, Right::Write]))
            .unwrap();
        let post = |envelope: Value| forum.call(Some(&token), "post", &envelope).unwrap();
        post(json!({"kind": "ask", "body": "first?"}));
        post(json!({"kind": "ask", "body": "second?"}));
        let before = thread_print(&read_thread(&forum, &token, "th_1"));
        assert_eq!(before, thread_print(&read_thread(&forum, &token, "1")));
        let note = json!({"kind": "note", "thread": "th_2", "body": "elsewhere"});
        forum.call(Some(&other), "post", &note).unwrap();
        assert_eq!(before, thread_print(&read_thread(&forum, &token, "th_1")));
        post(json!({"kind": "mark", "thread": "th_1", "state": "deferred", "body": "later"}));
        let after = read_thread(&forum, &token, "th_1");
        assert_eq!(after.as_ref().unwrap().1.len(), 1, "the transition event");
        assert_ne!(before, thread_print(&after));
        // A thread that does not exist has a print of its own, which its creation changes.
        let missing = read_thread(&forum, &token, "th_3");
        assert!(!ends(missing.as_ref().unwrap_err()));
        let missing = thread_print(&missing);
        post(json!({"kind": "ask", "body": "third?"}));
        assert_ne!(missing, thread_print(&read_thread(&forum, &token, "th_3")));
        // A revoked token ends a stream.
        assert!(forum.revoke_token(&token).unwrap());
        assert!(ends(&read_thread(&forum, &token, "th_1").unwrap_err()));
    }
}
