//! Server-Sent Events: `GET /v1/events/stream`, `/v1/inbox/stream` and
//! `/v1/messages/stream` follow `get_events`, `get_inbox` and `get_messages`.
//!
//! Each item of the read is one event: `id:` the cursor after that item, `data:`
//! the item as JSON (one line). A stream starts where its read starts: after
//! `Last-Event-ID` when the client sends one (a reconnecting `EventSource` does),
//! else after `since`, else at the beginning; so a client that reconnects with the
//! last id it saw misses nothing and sees nothing twice. The query takes the
//! read's other arguments (`thread`, `extension`), not `limit` or `wait_ms`.
//!
//! The stream reads one item at a time (a cursor after each item needs a read
//! that ends there), several to a trip to a reader thread, and between commits
//! holds no thread: it waits on a [`parley_forum::Subscription`] like a waiting
//! read (see `waits`), and counts against the same cap. Every read checks the
//! token: a refusal before the stream starts is the usual JSON refusal; one later
//! (a revoked token) is sent as `event: error` with the refusal, and the stream
//! ends. A comment line is sent when nothing else has been for the heartbeat
//! interval (15 s by default), so that proxies and clients keep the stream open;
//! a client that stops reading for the idle timeout is dropped; shutdown ends
//! every stream. That sending end ([`Outlet`]) is shared with the web view's
//! `/live`, which waits for commits the same way.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use hyper::body::Frame;
use parley_forum::{Error, Forum, Reason, Refusal, Subscription};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::connections::Streaming;
use super::readers::Readers;
use super::rest::{query_args, too_many_waits};
use super::waits::Place;
use super::{bearer, engine_failed, refusal_response, App};

/// Items read in one trip to a reader thread.
const BATCH: usize = 64;
/// Chunks queued for a client before the stream waits for it to read.
const QUEUE: usize = 8;
/// Arguments of the read that a stream does not take: it pages and waits itself.
const NOT_ON_STREAMS: [&str; 2] = ["limit", "wait_ms"];

pub(crate) async fn events(
    State(app): State<App>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    open(app, headers, query, "get_events").await
}

pub(crate) async fn inbox(State(app): State<App>, headers: HeaderMap, query: RawQuery) -> Response {
    open(app, headers, query, "get_inbox").await
}

pub(crate) async fn messages(
    State(app): State<App>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    open(app, headers, query, "get_messages").await
}

/// What one trip to a reader thread read.
struct Batch {
    /// Each item with the cursor after it.
    items: Vec<(Value, String)>,
    /// Where the next read starts.
    since: Option<String>,
    /// Whether more items were there than this batch took.
    more: bool,
    /// The refusal (or failure) that ended the batch.
    error: Option<Error>,
}

/// The read of one stream: its operation, token and arguments (without `since`).
#[derive(Clone)]
struct Read {
    forum: Arc<Forum>,
    readers: Arc<Readers>,
    token: Option<String>,
    op: &'static str,
    args: Map<String, Value>,
}

impl Read {
    /// Reads up to [`BATCH`] items after `since`, one at a time.
    fn batch(&self, mut since: Option<String>) -> Batch {
        let mut items = Vec::new();
        let mut more = false;
        let mut error = None;
        for _ in 0..BATCH {
            let mut args = self.args.clone();
            if let Some(cursor) = &since {
                args.insert("since".into(), Value::from(cursor.as_str()));
            }
            args.insert("limit".into(), Value::from(1));
            match self
                .forum
                .call(self.token.as_deref(), self.op, &Value::Object(args))
            {
                Ok(mut page) => {
                    let cursor = page["cursor"].as_str().map(str::to_string);
                    more = page["more"].as_bool().unwrap_or(false);
                    let item = page["items"].as_array_mut().and_then(|items| items.pop());
                    if cursor.is_some() {
                        since = cursor;
                    }
                    match (item, &since) {
                        (Some(item), Some(cursor)) => items.push((item, cursor.clone())),
                        _ => {
                            more = false;
                            break;
                        }
                    }
                    if !more {
                        break;
                    }
                }
                Err(err) => {
                    error = Some(err);
                    more = false;
                    break;
                }
            }
        }
        Batch {
            items,
            since,
            more,
            error,
        }
    }

    async fn run(&self, since: Option<String>) -> Result<Batch, Response> {
        let read = self.clone();
        self.readers
            .run(move || read.batch(since))
            .await
            .ok_or_else(engine_failed)
    }
}

async fn open(app: App, headers: HeaderMap, query: RawQuery, op: &'static str) -> Response {
    let token = match bearer(&headers) {
        Ok(token) => token,
        Err(refusal) => return refusal_response(&refusal),
    };
    let mut args = match query_args(query.0.as_deref().unwrap_or("")) {
        Ok(args) => args,
        Err(refusal) => return refusal_response(&refusal),
    };
    let mut since = match args.remove("since") {
        None => None,
        Some(Value::String(cursor)) => Some(cursor),
        Some(other) => Some(other.to_string()),
    };
    match last_event_id(&headers) {
        Ok(Some(id)) => since = Some(id),
        Ok(None) => {}
        Err(refusal) => return refusal_response(&refusal),
    }
    let refused_args: Vec<String> = NOT_ON_STREAMS
        .iter()
        .filter(|a| args.remove(**a).is_some())
        .map(|a| a.to_string())
        .collect();
    let read = Read {
        forum: Arc::clone(&app.forum),
        readers: Arc::clone(&app.readers),
        token,
        op,
        args,
    };
    // Taken before the first read: a commit between it and the wait is seen.
    let sub = app.forum.subscribe();
    let first = match read.run(since).await {
        Ok(batch) => batch,
        Err(resp) => return resp,
    };
    // The first read's checks come first (token, arguments, right: SPEC §12.1).
    if first.items.is_empty() {
        if let Some(err) = first.error {
            return super::rest::respond(op, Err(err), StatusCode::OK);
        }
    }
    if let Some(arg) = refused_args.first() {
        let refusal = Refusal::new(
            Reason::InvalidArgument,
            format!("a stream takes no `{arg}`: it sends every item, one event each, as it comes"),
        )
        .with_field(arg.as_str());
        return refusal_response(&refusal);
    }
    let (outlet, resp) = match Outlet::open(&app, read.token.as_deref(), sub) {
        Ok(opened) => opened,
        Err(refusal) => return too_many_waits(refusal),
    };
    tokio::spawn(Stream { read, outlet }.run(first));
    resp
}

/// The `Last-Event-ID` header: `None` when absent or empty (the SSE spec's "no
/// last event id").
fn last_event_id(headers: &HeaderMap) -> Result<Option<String>, Refusal> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    match value.to_str() {
        Ok("") => Ok(None),
        Ok(id) => Ok(Some(id.to_string())),
        Err(_) => Err(Refusal::new(
            Reason::InvalidCursor,
            "the Last-Event-ID header is not a cursor this forum issued",
        )
        .with_field("since")),
    }
}

/// One stream's producer, running as its own task; the response body receives
/// what it sends.
struct Stream {
    read: Read,
    outlet: Outlet,
}

impl Stream {
    async fn run(mut self, first: Batch) {
        let opening = format!(": parley {} stream\n\n", self.read.op);
        let mut batch = first;
        let mut text = opening;
        loop {
            let last_run = Instant::now();
            for (item, cursor) in &batch.items {
                text.push_str("id: ");
                text.push_str(cursor);
                text.push_str("\ndata: ");
                text.push_str(&item.to_string());
                text.push_str("\n\n");
            }
            if let Some(err) = &batch.error {
                text.push_str("event: error\ndata: ");
                text.push_str(&error_json(err).to_string());
                text.push_str("\n\n");
                let _ = self.outlet.send(std::mem::take(&mut text)).await;
                return;
            }
            if !text.is_empty() && !self.outlet.send(std::mem::take(&mut text)).await {
                return;
            }
            if self.outlet.stopping() {
                self.outlet.send_shutdown().await;
                return;
            }
            if !batch.more {
                match self.outlet.wait(last_run).await {
                    Some(true) => {}
                    Some(false) => {
                        self.outlet.send_shutdown().await;
                        return;
                    }
                    None => return,
                }
            }
            batch = match self.read.run(batch.since).await {
                Ok(next) => next,
                Err(_) => {
                    self.outlet.send_failure().await;
                    return;
                }
            };
        }
    }
}

/// The sending end of an event stream, shared by every stream of the server: it
/// holds the stream's place under the cap on waits, waits for commits without a
/// thread while sending heartbeats, and drops a client that stops reading.
pub(crate) struct Outlet {
    app: App,
    sub: Subscription,
    tx: mpsc::Sender<Bytes>,
    _place: Place,
    last_sent: Instant,
}

impl Outlet {
    /// Takes a place for a stream of the holder of `token` that waits on `sub`
    /// (taken before the stream's first read, so that a commit after that read is
    /// seen), and the response whose body carries what the outlet sends; the
    /// refusal past the cap on waits or the token's share of it.
    pub(crate) fn open(
        app: &App,
        token: Option<&str>,
        sub: Subscription,
    ) -> Result<(Outlet, Response), Value> {
        let place = app.waits.enter(token)?;
        let (tx, rx) = mpsc::channel(QUEUE);
        let outlet = Outlet {
            app: app.clone(),
            sub,
            tx,
            _place: place,
            last_sent: Instant::now(),
        };
        let mut resp = Body::new(Events { rx }).into_response();
        let h = resp.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        h.insert("x-accel-buffering", HeaderValue::from_static("no"));
        resp.extensions_mut().insert(Streaming);
        Ok((outlet, resp))
    }

    /// The commits the outlet's subscription has seen.
    pub(crate) fn seen(&self) -> u64 {
        self.sub.seen()
    }

    /// Whether the server has begun to shut down.
    pub(crate) fn stopping(&self) -> bool {
        *self.app.stopping.borrow()
    }

    /// Waits for a commit, sending heartbeats meanwhile. `Some(true)`: read again;
    /// `Some(false)`: the waits were ended (shutdown); `None`: the client is gone.
    pub(crate) async fn wait(&mut self, last_run: Instant) -> Option<bool> {
        loop {
            let beat = self.last_sent + self.app.heartbeat;
            tokio::select! {
                changed = self.sub.changed() => {
                    if !changed {
                        return Some(false);
                    }
                    self.app.waits.space(last_run, None).await;
                    return Some(true);
                }
                () = tokio::time::sleep_until(beat) => {
                    if !self.send(": heartbeat\n\n".into()).await {
                        return None;
                    }
                }
                () = self.tx.closed() => return None,
            }
        }
    }

    /// Waits until `at`, sending heartbeats meanwhile; `false` when the client is
    /// gone or the server is shutting down.
    pub(crate) async fn pause_until(&mut self, at: Instant) -> bool {
        let mut stopping = self.app.stopping.clone();
        loop {
            let beat = self.last_sent + self.app.heartbeat;
            tokio::select! {
                () = tokio::time::sleep_until(at) => return !self.stopping(),
                () = tokio::time::sleep_until(beat), if beat < at => {
                    if !self.send(": heartbeat\n\n".into()).await {
                        return false;
                    }
                }
                () = async { let _ = stopping.wait_for(|stop| *stop).await; } => return false,
                () = self.tx.closed() => return false,
            }
        }
    }

    /// Queues `text` for the client; `false` when the client is gone or has not
    /// read for the idle timeout.
    pub(crate) async fn send(&mut self, text: String) -> bool {
        let sent = tokio::time::timeout(self.app.idle_timeout, self.tx.send(Bytes::from(text)));
        let ok = matches!(sent.await, Ok(Ok(())));
        self.last_sent = Instant::now();
        ok
    }

    /// The last words of a stream ended by shutdown.
    pub(crate) async fn send_shutdown(&mut self) {
        let _ = self.send(": the server is shutting down\n\n".into()).await;
    }

    /// The last words of a stream whose engine call failed.
    pub(crate) async fn send_failure(&mut self) {
        let failed = json!({ "error": { "reason": "internal_error", "status": 500, "message": "the engine call failed" } });
        let _ = self.send(format!("event: error\ndata: {failed}\n\n")).await;
    }
}

/// An error ending a stream, as the JSON of its `event: error`.
pub(crate) fn error_json(err: &Error) -> Value {
    match err.refusal() {
        Some(refusal) => json!({ "error": refusal.to_json() }),
        None => {
            json!({ "error": { "reason": "internal_error", "status": 500, "message": err.to_string() } })
        }
    }
}

/// The body of a stream: what its producer sends, until it ends.
struct Events {
    rx: mpsc::Receiver<Bytes>,
}

impl HttpBody for Events {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx
            .poll_recv(cx)
            .map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes))))
    }
}
