//! The HTTP server: MCP Streamable HTTP at `POST /mcp` and the REST routes of
//! SPEC §11.2 under `/v1`, one engine behind both.
//!
//! The engine is blocking (redb), so no call runs on an async worker: a call (a
//! post or a read, REST, MCP or web alike) runs on tokio's blocking pool
//! ([`blocking`]), each run of a waiting read on a reader thread (`readers`). Posts
//! that arrive together share the engine's group commits; the server keeps no
//! queue of its own. On SIGINT or SIGTERM
//! the listener stops accepting, requests in flight finish (within a grace
//! period), and the forum is closed only after the last engine call has returned,
//! so no acknowledged write is lost.
//!
//! Before a request reaches a route: the connection counts against a cap and is held
//! to a header, a body and an idle timeout (`connections`, `stalls`); its `Host`
//! must be allowed (`host`), and so must its `Origin` when it has one (`origin`).
//! Only then is anything looked up for it: the request log names its caller after
//! admission, never before. A request refused before its body is read (admission, a
//! post's token) is answered at once and its connection closed, so a body that
//! never comes holds nothing.
//!
//! A read with `wait_ms` (REST and MCP) and an event stream (`sse`) wait for
//! commits without holding a thread (`waits`); they count against their own cap.
//! Shutdown ends every wait and stream at once (`Forum::end_waits`), so they do not
//! hold the grace period up.
//!
//! While it serves, the admin channel (`crate::control`) answers the command line on
//! a Unix socket beside the forum file; its posts reach the engine as directly.

mod connections;
mod coordination;
mod host;
mod log;
mod provenance;
pub(crate) use log::log_request;
pub use log::tool_of;
pub(crate) mod mcp;
mod mcp_headers;
mod origin;
mod readers;
mod rest;
pub(crate) mod sse;
mod waits;

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::Router;
use http_body_util::BodyExt;
use parley_forum::{Forum, Reason, Refusal};
use serde_json::{json, Value};

use crate::Error;
pub(crate) use connections::serve as serve_connections;
pub use connections::{fit_to_descriptors, Limits};
pub use host::parse_allow_host;
use host::Hosts;
use origin::Origins;
pub(crate) use provenance::raw_response as raw_artifact;
pub(crate) use rest::{not_found, too_many_waits};
pub use waits::default_share;

/// What every handler shares: the forum, its engine and reader threads, the
/// waits, the web sessions and the admission rules; [`serve`] builds it.
#[derive(Clone)]
pub struct App {
    pub(crate) forum: Arc<Forum>,
    pub(crate) origins: Arc<Origins>,
    pub(crate) hosts: Arc<Hosts>,
    pub(crate) readers: Arc<readers::Readers>,
    pub(crate) waits: Arc<waits::Waits>,
    /// The longest an event stream stays silent: then it sends a comment.
    pub(crate) heartbeat: Duration,
    /// How long a stream waits for a client that does not read before dropping it.
    pub(crate) idle_timeout: Duration,
    /// Turns true when the server begins to shut down.
    pub(crate) stopping: tokio::sync::watch::Receiver<bool>,
    /// The web view's signed-in sessions.
    pub(crate) web: Arc<crate::sessions::Sessions>,
}

/// How `serve --http` serves: the flags of the `serve` subcommand.
pub struct Options {
    /// The address to listen on, `HOST:PORT`.
    pub addr: String,
    /// Origins accepted beside the loopback ones.
    pub allow_origins: Vec<String>,
    /// Hosts answered beside the loopback names, as NAME or NAME:PORT.
    pub allow_hosts: Vec<String>,
    /// How long requests in flight may take to finish after SIGINT/SIGTERM.
    pub grace: Duration,
    /// What each connection is held to, and how many are served at once.
    pub limits: Limits,
    /// Waiting requests and event streams held at once.
    pub max_waits: usize,
    /// Of those, the most one token holds.
    pub max_waits_per_token: usize,
    /// The heartbeat interval of event streams.
    pub heartbeat: Duration,
    /// A web session ends after this long without a request…
    pub web_session_idle: Duration,
    /// …and this long after sign-in, whichever comes first.
    pub web_session_max: Duration,
    /// The web view is reached through TLS: its cookies are `Secure`.
    pub web_secure_cookie: bool,
}

impl App {
    /// The state of a server of `forum` under `options`: its admission rules, its
    /// reader threads, its waits and its web sessions. `stopping` turns true when
    /// the server begins to shut down.
    pub fn new(
        forum: Arc<Forum>,
        options: &Options,
        stopping: tokio::sync::watch::Receiver<bool>,
    ) -> Result<App, Error> {
        let origins = Origins::new(&options.allow_origins).map_err(Error::new)?;
        let hosts = Hosts::new(&options.allow_hosts).map_err(Error::new)?;
        let readers = readers::Readers::start()
            .map_err(|e| Error::new(format!("cannot start the reader threads: {e}")))?;
        Ok(App {
            origins: Arc::new(origins),
            hosts: Arc::new(hosts),
            readers: Arc::new(readers),
            waits: Arc::new(waits::Waits::new(
                &forum,
                options.max_waits,
                options.max_waits_per_token,
            )),
            heartbeat: options.heartbeat,
            idle_timeout: options.limits.idle_timeout,
            stopping,
            web: Arc::new(crate::sessions::Sessions::new(
                options.web_session_idle,
                options.web_session_max,
                options.web_secure_cookie,
            )),
            forum,
        })
    }

    /// The forum served.
    pub fn forum(&self) -> &Arc<Forum> {
        &self.forum
    }

    /// Stops the reader threads once the reads they hold have run; returns once
    /// they have ended (and let go of what those reads held).
    pub(crate) fn stop(&self) {
        self.readers.stop();
    }
}

/// The routes of MCP, REST and event streams; [`crate::router`] adds the web view's
/// and the layers every request passes.
pub(crate) fn routes() -> Router<App> {
    Router::new()
        .route(
            "/mcp",
            post(mcp::handle)
                .get(mcp::method_not_allowed)
                .delete(mcp::method_not_allowed),
        )
        .route("/v1/manifest", get(rest::manifest))
        .route("/v1/whoami", get(rest::whoami))
        .route("/v1/messages", get(rest::messages).post(rest::post_message))
        .route("/v1/messages/stream", get(sse::messages))
        .route("/v1/threads", get(rest::list_threads))
        .route("/v1/threads/{id}", get(rest::get_thread))
        .route("/v1/threads/{id}/digest", get(rest::get_digest))
        .route("/v1/inbox", get(rest::inbox))
        .route("/v1/inbox/stream", get(sse::inbox))
        .route("/v1/events", get(rest::events))
        .route("/v1/events/stream", get(sse::events))
        .route("/v1/claims/{id}", get(rest::get_claim))
        .route("/v1/search", get(rest::search))
        .route(
            "/v1/leases",
            get(coordination::leases).post(coordination::lease),
        )
        .route("/v1/leases/{id}", delete(coordination::release))
        .route(
            "/v1/presence",
            get(coordination::presence).put(coordination::set_presence),
        )
        .merge(provenance::routes())
}

/// What every request passes before its route (DNS-rebinding protection): its
/// `Host` must be allowed, then its `Origin` when it has one. Nothing is looked up
/// for a request before it passes, its caller for the log included.
pub(crate) async fn admit(State(app): State<App>, request: Request, next: Next) -> Response {
    if let Some(message) = host::refusal(&app.hosts, &request) {
        let status = StatusCode::MISDIRECTED_REQUEST;
        return refuse_early(&app, request, status, "host_not_allowed", &message);
    }
    if let Some(message) = origin::refusal(&app.origins, &request) {
        let status = StatusCode::FORBIDDEN;
        return refuse_early(&app, request, status, "origin_not_allowed", &message);
    }
    log::admitted(&app, &request);
    next.run(request).await
}

/// The bearer token of the request: `Ok(None)` when there is no `Authorization`
/// header, a refusal when there is one that is not `Bearer <token>`.
pub(crate) fn bearer(headers: &HeaderMap) -> Result<Option<String>, Refusal> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let malformed = || {
        Refusal::new(
            Reason::TokenInvalid,
            "the Authorization header must be `Bearer <token>`",
        )
    };
    let text = value.to_str().map_err(|_| malformed())?;
    let (scheme, token) = text.trim().split_once(' ').ok_or_else(malformed)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(malformed());
    }
    Ok(Some(token.to_string()))
}

/// Why a request body could not be read.
pub(crate) enum BodyError {
    TooLarge(Refusal),
    Broken(String),
}

/// Reads the whole body, refusing with `payload_too_large` past `max` bytes without
/// buffering more than that.
pub(crate) async fn read_body(
    headers: &HeaderMap,
    body: Body,
    max: usize,
) -> Result<Bytes, BodyError> {
    let too_large = || {
        BodyError::TooLarge(
            Refusal::new(
                Reason::PayloadTooLarge,
                format!("the request is larger than request_max_bytes ({max} bytes)"),
            )
            .with_limit(parley_forum::Limit::RequestMaxBytes),
        )
    };
    if declared_length(headers).is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    match axum::body::to_bytes(body, max).await {
        Ok(bytes) => Ok(bytes),
        Err(err) => {
            let inner = err.into_inner();
            if inner
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                Err(too_large())
            } else {
                Err(BodyError::Broken(inner.to_string()))
            }
        }
    }
}

/// The answer to a request refused before dispatch (a `Host` or `Origin` that is
/// not allowed): on `/mcp` a JSON-RPC error whose `data` is the refusal, elsewhere
/// `{"error": {…}}`. It is sent at once, without waiting for the body
/// ([`unread`]).
fn refuse_early(
    app: &App,
    request: Request,
    status: StatusCode,
    reason: &str,
    message: &str,
) -> Response {
    let mcp = request.uri().path() == "/mcp";
    let resp = if mcp {
        let refusal = json!({ "reason": reason, "status": status.as_u16(), "message": message });
        json_response(
            status,
            &parley_forum::mcp::error_response(
                Value::Null,
                parley_forum::mcp::codes::INVALID_REQUEST,
                message,
                Some(refusal),
            ),
        )
    } else {
        error_response(status, reason, message)
    };
    unread(app, resp, request.into_body())
}

/// How long a refused request's body is still read, in the background, after its
/// answer was sent.
const DRAIN_FOR: Duration = Duration::from_secs(1);

/// `resp` to a request whose body will not be read: sent at once with
/// `Connection: close`. The body is read and dropped in the background for a
/// moment (up to `request_max_bytes`), so that a client still sending reads the
/// answer instead of a connection reset by unread bytes; a client that sends
/// nothing holds the connection no longer than that.
pub(crate) fn unread(app: &App, resp: Response, body: Body) -> Response {
    let max = app.forum.config().limits.request_max_bytes;
    tokio::spawn(async move {
        let _ = tokio::time::timeout(DRAIN_FOR, drain(body, max)).await;
    });
    closing(resp)
}

/// `resp` with `Connection: close`: the request's body is left unread, so the
/// connection cannot carry another request.
pub(crate) fn closing(mut resp: Response) -> Response {
    resp.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// Reads a body to its end and drops it, unless it is longer than `max` bytes.
async fn drain(mut body: Body, max: usize) {
    let mut seen = 0usize;
    while let Some(Ok(frame)) = body.frame().await {
        seen += frame.data_ref().map_or(0, Bytes::len);
        if seen > max {
            return;
        }
    }
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

/// Runs a blocking engine call on the blocking pool; a panic in it is answered
/// 500 `internal_error`.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response> {
    match tokio::task::spawn_blocking(move || crate::panics::contained(f)).await {
        Ok(Ok(value)) => Ok(value),
        // A panic (reported already), or the runtime shutting down under the call.
        Ok(Err(_)) | Err(_) => Err(engine_failed()),
    }
}

/// The answer to a request whose engine call panicked.
pub(crate) fn engine_failed() -> Response {
    error_response(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal_error",
        "the engine call failed",
    )
}

/// A JSON response with the given status.
pub(crate) fn json_response(status: StatusCode, value: &Value) -> Response {
    let mut resp = (status, value.to_string()).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    crate::telemetry::note_json(&mut resp, value);
    if let Some(reason) = log::reason_in(value) {
        log::note(
            &mut resp,
            log::Outcome {
                tool: None,
                reason: Some(reason),
            },
        );
    }
    resp
}

/// Tells the request log the reason of a response that is not JSON (a web page).
pub(crate) fn note_reason(resp: &mut Response, reason: &str) {
    log::note(
        resp,
        log::Outcome {
            tool: None,
            reason: Some(reason.to_string()),
        },
    );
}

/// `{"error": {reason, status, message}}` for failures outside the refusals of SPEC §12
/// (no such route, a forbidden origin, a broken connection, an internal error).
pub(crate) fn error_response(status: StatusCode, reason: &str, message: &str) -> Response {
    json_response(
        status,
        &json!({ "error": { "reason": reason, "status": status.as_u16(), "message": message } }),
    )
}

/// A refusal as REST returns it: its status code and `{"error": {…}}`, with
/// `WWW-Authenticate` on 401 and `Retry-After` on 429.
pub(crate) fn refusal_response(refusal: &Refusal) -> Response {
    let status = StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::BAD_REQUEST);
    let mut resp = json_response(status, &json!({ "error": refusal.to_json() }));
    if status == StatusCode::UNAUTHORIZED {
        resp.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    if let Some(ms) = refusal.retry_after_ms {
        resp.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(ms.div_ceil(1000).max(1)),
        );
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(auth: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(auth).unwrap());
        h
    }

    #[test]
    fn bearer_tokens_are_parsed_strictly() {
        assert_eq!(bearer(&HeaderMap::new()).unwrap(), None);
        assert_eq!(
            bearer(&headers("Bearer pt_abc")).unwrap().as_deref(),
            Some("pt_abc")
        );
        assert_eq!(
            bearer(&headers("bearer  pt_abc ")).unwrap().as_deref(),
            Some("pt_abc")
        );
        for bad in ["Basic abc", "Bearer", "Bearer   ", "pt_abc"] {
            assert_eq!(
                bearer(&headers(bad)).unwrap_err().reason,
                Reason::TokenInvalid,
                "{bad}"
            );
        }
    }

    #[test]
    fn refusals_carry_their_status_and_auth_hints() {
        let resp = refusal_response(&Refusal::new(Reason::TokenMissing, "no token"));
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(resp.headers()[header::WWW_AUTHENTICATE], "Bearer");
        let mut limited = Refusal::new(Reason::RateLimited, "slow down");
        limited.retry_after_ms = Some(1500);
        let resp = refusal_response(&limited);
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(resp.headers()[header::RETRY_AFTER], "2");
    }
}
