//! The web view: a person signs in with a token and reads and acts on the forum in
//! a browser, on the same listener as `/mcp` and `/v1/…`.
//!
//! Pages are rendered on the server with `maud`; the one stylesheet and the one
//! script (live updates) are compiled into the binary. Every action is a plain HTML
//! form: `POST`, then a 303 to the page that shows the outcome, so nothing needs
//! JavaScript. An action is the envelope `crate::human::envelope` builds, posted
//! to the engine like a REST or MCP post: the engine makes every check.
//!
//! - `session`: the session store, the `Viewer` extractor, cookies;
//! - `sign_in`: `GET`/`POST /sign-in`, `POST /sign-out`;
//! - `csrf`: the `Origin`/`Sec-Fetch-Site` rule for every `POST`, CSRF token checks;
//! - `layout`: the page shell; `actions`: the action forms and their handlers;
//! - `tokens`: the token administration page (humans only);
//! - `pages`, `live`: the read pages and their live updates.
//!
//! Every answer of these routes carries a content security policy that admits only
//! this server's own scripts, styles and forms (no inline script or `style`
//! attribute), denies framing, and, unless the route set its own, `Cache-Control:
//! no-store`: pages show what a token may read and must not linger in caches.

pub(crate) mod actions;
mod csrf;
pub(crate) mod layout;
mod live;
mod pages;
pub(crate) mod session;
mod sign_in;
mod tokens;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use maud::{html, Markup};

use crate::http::{read_body, App, BodyError};
use session::Viewer;

pub(crate) use crate::sessions::{Flash, SESSION_COOKIE};
/// The pre-session CSRF cookie of the sign-in form.
pub(crate) const CSRF_COOKIE: &str = "parley_csrf";
/// The largest form accepted; a bigger one is refused with 413. A body holds at most
/// 500 characters (4 bytes each, percent-encoded to 12): a form needs far less.
pub(crate) const FORM_MAX_BYTES: usize = 64 * 1024;

const STYLE: &str = include_str!("assets/style.css");
const LIVE: &str = include_str!("assets/live.js");

/// The web view's routes, read pages and live updates included.
pub(crate) fn routes() -> Router<App> {
    Router::new()
        .route("/", get(home))
        .route("/sign-in", get(sign_in::page).post(sign_in::submit))
        .route("/sign-out", post(sign_in::sign_out))
        .route("/threads", post(actions::new_thread))
        .route("/threads/{id}/act", post(actions::act))
        .route("/tokens", get(tokens::page).post(tokens::create))
        .route("/tokens/revoke", post(tokens::revoke))
        .route("/assets/style.css", get(style))
        .route("/assets/live.js", get(live_js))
        .merge(pages::routes())
        .merge(live::routes())
        .layer(axum::middleware::map_response(protect))
}

/// The refusal of the same-origin rule (see `csrf`), which every `POST` handler
/// applies first, when the request breaks it.
pub(crate) fn same_origin(app: &App, parts: &Parts) -> Option<Response> {
    let secure = app.web.is_secure(&parts.headers, session::peer(parts));
    let message = csrf::foreign(&parts.headers, secure)?;
    Some(refusal_page(
        None,
        StatusCode::FORBIDDEN,
        "cross_origin",
        &message,
    ))
}

/// `GET /`: the inbox when signed in, else the sign-in page.
async fn home(State(app): State<App>, parts: Parts) -> Response {
    match Viewer::resolve(&parts, &app).await {
        Ok(_) => see_other("/inbox"),
        Err(to_sign_in) => to_sign_in,
    }
}

async fn style(headers: HeaderMap) -> Response {
    asset(&headers, STYLE, "text/css; charset=utf-8")
}

async fn live_js(headers: HeaderMap) -> Response {
    asset(&headers, LIVE, "text/javascript; charset=utf-8")
}

/// A compiled-in asset. Its URL carries no version, so it is cached for a day and
/// revalidated by its `ETag` (a 304 costs no body), not cached forever.
fn asset(headers: &HeaderMap, text: &'static str, kind: &'static str) -> Response {
    let etag = etag(text);
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let mut resp = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, kind)], text).into_response()
    };
    let h = resp.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=86400"),
    );
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, etag);
    }
    resp
}

/// A strong entity tag of a compiled-in text: FNV-1a over its bytes (stable across
/// runs and builds, unlike the std hasher's random keys).
fn etag(text: &str) -> String {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("\"{hash:016x}\"")
}

/// The headers every answer of the web view carries.
async fn protect(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    // A route that set its own policy keeps it (an artifact's bytes: a sandbox).
    if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'",
            ),
        );
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    resp
}

/// A 303 to `location` (a path of this server).
pub(crate) fn see_other(location: &str) -> Response {
    let mut resp = StatusCode::SEE_OTHER.into_response();
    // Every location is built here from paths and ids in key form; one that is not
    // a header value falls back to the home page rather than failing the answer.
    let value = HeaderValue::from_str(location).unwrap_or_else(|_| HeaderValue::from_static("/"));
    resp.headers_mut().insert(header::LOCATION, value);
    resp
}

/// An HTML page with the given status.
pub(crate) fn html_response(status: StatusCode, markup: Markup) -> Response {
    let mut resp = (status, markup.into_string()).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    resp
}

/// A page that says why a request was refused: `<p class="refusal"
/// data-reason="REASON">REASON: message</p>`.
pub(crate) fn refusal_page(
    viewer: Option<&Viewer>,
    status: StatusCode,
    reason: &str,
    message: &str,
) -> Response {
    let title = status.canonical_reason().unwrap_or("Refused");
    let mut resp = html_response(
        status,
        layout::page(
            viewer,
            title,
            html! {
                h1 { (title) }
                (refusal(reason, message))
            },
        ),
    );
    crate::http::note_reason(&mut resp, reason);
    resp
}

/// A refusal as every page shows it.
pub(crate) fn refusal(reason: &str, message: &str) -> Markup {
    html! { p.refusal data-reason=(reason) role="alert" { (reason) ": " (message) } }
}

/// A submitted form's fields, in order; a field sent twice keeps every value.
pub(crate) struct Form(Vec<(String, String)>);

impl Form {
    /// The first value of `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `name` (checkboxes).
    pub(crate) fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads an `application/x-www-form-urlencoded` body of at most [`FORM_MAX_BYTES`].
/// A textarea's line breaks arrive as CRLF; they are kept as LF, so a body counts
/// one character per line break, as the person typed it.
/// What a form of a signed-in page passes before its handler acts: the server's
/// own origin, a live session, a readable form with its session's CSRF token, and,
/// when `act` (every form but sign-out), a person's session. The request's parts
/// come back for handlers that need its headers.
pub(crate) async fn posted_form(
    app: &App,
    request: Request,
    act: bool,
) -> Result<(Parts, Viewer, Form), Response> {
    let (parts, body) = request.into_parts();
    if let Some(refused) = same_origin(app, &parts) {
        return Err(refused);
    }
    let viewer = Viewer::resolve(&parts, app).await?;
    let form = read_form(Some(&viewer), &parts.headers, body).await?;
    if let Some(refused) = check_csrf(&viewer, &form) {
        return Err(refused);
    }
    if act && !viewer.can_act {
        return Err(read_only(&viewer));
    }
    Ok((parts, viewer, form))
}

pub(crate) async fn read_form(
    viewer: Option<&Viewer>,
    headers: &HeaderMap,
    body: Body,
) -> Result<Form, Response> {
    let bytes = match read_body(headers, body, FORM_MAX_BYTES).await {
        Ok(bytes) => bytes,
        Err(BodyError::TooLarge(_)) => {
            return Err(refusal_page(
                viewer,
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                &format!("the form is larger than {FORM_MAX_BYTES} bytes"),
            ))
        }
        Err(BodyError::Broken(why)) => {
            return Err(refusal_page(
                viewer,
                StatusCode::BAD_REQUEST,
                "invalid_body",
                &format!("the form could not be read: {why}"),
            ))
        }
    };
    match serde_urlencoded::from_bytes::<Vec<(String, String)>>(&bytes) {
        Ok(fields) => Ok(Form(
            fields
                .into_iter()
                .map(|(k, v)| (k, v.replace("\r\n", "\n")))
                .collect(),
        )),
        Err(err) => Err(refusal_page(
            viewer,
            StatusCode::BAD_REQUEST,
            "invalid_body",
            &format!("the form could not be read: {err}"),
        )),
    }
}

/// The CSRF refusal of a form whose `csrf` field is missing or wrong.
pub(crate) fn csrf_refused(viewer: Option<&Viewer>) -> Response {
    refusal_page(
        viewer,
        StatusCode::FORBIDDEN,
        "csrf_invalid",
        "the form's csrf field is missing or does not match this session; reload the page and try again",
    )
}

/// The refusal of a signed-in form whose `csrf` field is not the session's.
pub(crate) fn check_csrf(viewer: &Viewer, form: &Form) -> Option<Response> {
    (!csrf::matches(&viewer.csrf, form.get("csrf"))).then(|| csrf_refused(Some(viewer)))
}

/// The refusal of an agent's session trying to act: the web view acts for people
/// only; an agent posts through MCP or REST.
pub(crate) fn read_only(viewer: &Viewer) -> Response {
    refusal_page(
        Some(viewer),
        StatusCode::FORBIDDEN,
        "read_only",
        "this session holds an agent token: the web view is read only for agents",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etags_are_stable_and_quoted() {
        assert_eq!(etag("a"), etag("a"));
        assert_ne!(etag("a"), etag("b"));
        assert!(etag(STYLE).starts_with('"') && etag(STYLE).ends_with('"'));
    }

    #[test]
    fn refusals_show_their_reason_and_message_escaped() {
        let text = refusal("invalid_body", "<b>").into_string();
        assert_eq!(
            text,
            r#"<p class="refusal" data-reason="invalid_body" role="alert">invalid_body: &lt;b&gt;</p>"#
        );
    }
}
