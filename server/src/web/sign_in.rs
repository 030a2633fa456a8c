//! Signing in with a token and signing out.
//!
//! Sign-in checks the token the only way the forum knows, the engine's `whoami`, so
//! it tells nothing a REST call would not. A valid token always signs in, at once.
//! A failed attempt is answered after a delay that grows with its address's recent
//! failures (100 ms doubling to 2 s); past a few being delayed at once, more from
//! that address are answered 429 (`rate_limited`) at once. Failures never bar a
//! valid token: behind a reverse proxy every user shares one address, and a
//! stranger's guesses must not lock the person out. The token is never echoed: a
//! refused sign-in shows an empty field.

use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use maud::{html, Markup};
use parley_forum::{Error, Reason};
use serde_json::Value;

use super::session::{self, cookie, peer};
use super::{csrf, html_response, layout, read_form, refusal, same_origin, see_other};
use super::{CSRF_COOKIE, SESSION_COOKIE};
use crate::http::{blocking, App};

/// `GET /sign-in`: the form, with a fresh pre-session CSRF token (or the one the
/// browser already holds, so that two open sign-in pages both work).
pub(crate) async fn page(State(app): State<App>, parts: Parts) -> Response {
    let token = match cookie(&parts.headers, CSRF_COOKIE) {
        Some(token) => token,
        None => match session::secret() {
            Ok(token) => token,
            Err(err) => return failed(&err),
        },
    };
    form_page(&app, &parts, StatusCode::OK, &token, None)
}

/// `POST /sign-in`: opens a session for a valid token and goes to the inbox.
pub(crate) async fn submit(State(app): State<App>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if let Some(refused) = same_origin(&app, &parts) {
        return refused;
    }
    let form = match read_form(None, &parts.headers, body).await {
        Ok(form) => form,
        Err(refused) => return refused,
    };
    let Some(expected) = cookie(&parts.headers, CSRF_COOKIE) else {
        return super::csrf_refused(None);
    };
    if !csrf::matches(&expected, form.get("csrf")) {
        return super::csrf_refused(None);
    }
    let ip = peer(&parts).map(|p| p.ip());
    let token = form.get("token").unwrap_or_default().trim().to_string();
    let forum = app.forum.clone();
    let checked = token.clone();
    let me = match blocking(move || forum.call(Some(&checked), "whoami", &Value::Null)).await {
        Ok(me) => me,
        Err(resp) => return resp,
    };
    match me {
        Ok(_) => {}
        Err(Error::Refused(refusal)) => {
            if matches!(refusal.reason, Reason::TokenInvalid | Reason::TokenMissing) {
                match app.web.sign_in_failed(ip) {
                    Ok(Some(delayed)) => tokio::time::sleep(delayed.delay).await,
                    Ok(None) => {}
                    Err(retry) => return too_many_failures(&app, &parts, &expected, retry),
                }
            }
            let status = StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::UNAUTHORIZED);
            let why = (refusal.reason.as_str(), refusal.message.clone());
            return form_page(&app, &parts, status, &expected, Some(why));
        }
        Err(err) => return failed(&err),
    }
    // A new id at every sign-in: an id planted before it (session fixation) is
    // worth nothing, and a session the browser still held ends.
    if let Some(old) = cookie(&parts.headers, SESSION_COOKIE) {
        app.web.close(&old);
    }
    let (id, _csrf) = match app.web.open(token) {
        Ok(opened) => opened,
        Err(err) => return failed(&err),
    };
    let secure = app.web.is_secure(&parts.headers, peer(&parts));
    let mut resp = see_other("/inbox");
    // The pre-session CSRF cookie stays: another sign-in page still open in the
    // browser keeps working.
    resp.headers_mut().insert(
        header::SET_COOKIE,
        app.web
            .cookie(SESSION_COOKIE, &id, app.web.max_age(), secure),
    );
    resp
}

/// 429 to a failed sign-in from an address with too many failures being answered
/// already.
fn too_many_failures(app: &App, parts: &Parts, csrf: &str, retry: Duration) -> Response {
    let secs = retry.as_secs_f64().ceil().max(1.0) as u64;
    let why = (
        "rate_limited",
        format!(
            "the token was not accepted, and too many sign-ins from this address are failing at once; try again in {secs} s"
        ),
    );
    let mut resp = form_page(app, parts, StatusCode::TOO_MANY_REQUESTS, csrf, Some(why));
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    resp
}

/// `POST /sign-out`: ends the session and goes to the sign-in page.
pub(crate) async fn sign_out(State(app): State<App>, request: Request) -> Response {
    // A session already gone is sent to sign-in: signed out all the same.
    let (parts, viewer, _) = match super::posted_form(&app, request, false).await {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    app.web.close(viewer.session());
    let secure = app.web.is_secure(&parts.headers, peer(&parts));
    let mut resp = see_other("/sign-in");
    resp.headers_mut().insert(
        header::SET_COOKIE,
        app.web.cookie(SESSION_COOKIE, "", Duration::ZERO, secure),
    );
    resp
}

/// The sign-in page with `status`, the CSRF cookie set, and the refusal when there
/// is one. The token field is always empty.
fn form_page(
    app: &App,
    parts: &Parts,
    status: StatusCode,
    csrf: &str,
    refused: Option<(&str, String)>,
) -> Response {
    let mut resp = html_response(
        status,
        layout::page(None, "Sign in", sign_in_form(csrf, refused)),
    );
    let secure = app.web.is_secure(&parts.headers, peer(parts));
    resp.headers_mut().insert(
        header::SET_COOKIE,
        app.web.cookie(CSRF_COOKIE, csrf, app.web.max_age(), secure),
    );
    resp
}

fn sign_in_form(csrf: &str, refused: Option<(&str, String)>) -> Markup {
    html! {
        h1 { "Sign in" }
        form id="sign-in" method="post" action="/sign-in" {
            @if let Some((reason, message)) = &refused {
                (refusal(reason, message))
            }
            p {
                label for="token" { "Token" }
                input id="token" name="token" type="password" autocomplete="off" required spellcheck="false";
            }
            p.hint {
                "A person signs in with a human token, which may act; an agent token gives a read-only view. "
                "Tokens are issued with " code { "parley token create" } "."
            }
            input type="hidden" name="csrf" value=(csrf);
            button type="submit" { "Sign in" }
        }
    }
}

/// The answer to a failure that is not a refusal (the random source, the store).
fn failed(err: &Error) -> Response {
    eprintln!("parley: web sign-in failed: {err}");
    super::refusal_page(
        None,
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal_error",
        "signing in failed on the server",
    )
}
