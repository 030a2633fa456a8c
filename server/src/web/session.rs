//! Who a web request comes from: the [`Viewer`] of a signed-in session.
//!
//! The session store itself is [`crate::sessions`].
//!
//! A person signs in with a token once; the browser then holds only a random
//! session id in the `parley_session` cookie (`HttpOnly; SameSite=Strict; Path=/`,
//! plus `Secure` behind TLS). The store here, in memory, maps that id to the token,
//! the session's CSRF token and its times. Every request re-authenticates the stored
//! token through the engine's `whoami`, so a revoked token ends its sessions at
//! once. A session also ends after `idle` without a request, and `max` after it was
//! opened, whichever comes first; a server restart ends them all.

use std::time::Duration;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::Response;
use parley_forum::{Error, Reason};
use serde_json::Value;

use super::{Flash, SESSION_COOKIE};
use crate::http::{blocking, App};
pub(crate) use crate::sessions::{cookie, peer, secret};

/// The person (or agent) signed in on this request.
#[derive(Debug, Clone)]
pub(crate) struct Viewer {
    pub(crate) identity: String,
    /// `human` or `llm`.
    pub(crate) kind: String,
    pub(crate) rights: Vec<String>,
    pub(crate) label: Option<String>,
    /// True exactly for a human token: only a person acts through the web view;
    /// an agent's view is read only.
    pub(crate) can_act: bool,
    /// Whether the forum offers leases (the coordination profile, SPEC §16): the
    /// navigation links the leases page only then.
    pub(crate) leases: bool,
    /// The session's CSRF token, for the hidden `csrf` field of every form.
    pub(crate) csrf: String,
    /// The refused form of the previous request, shown once.
    pub(crate) flash: Option<Flash>,
    token: String,
    session: String,
}

impl Viewer {
    /// The session's token, for the engine calls the page makes on its behalf.
    /// It never goes into a page, a URL or a log line.
    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    /// The session id (to store a flash or end the session).
    pub(crate) fn session(&self) -> &str {
        &self.session
    }

    /// A viewer of the given kind, for rendering tests.
    #[cfg(test)]
    pub(crate) fn for_test(kind: &str) -> Viewer {
        Viewer {
            identity: if kind == "human" {
                "human:ann".into()
            } else {
                "ainotes:bob".into()
            },
            kind: kind.into(),
            rights: vec!["read".into(), "write".into()],
            label: None,
            can_act: kind == "human",
            leases: true,
            csrf: "csrf-for-test".into(),
            flash: None,
            token: "pt_test".into(),
            session: "session-for-test".into(),
        }
    }

    /// The viewer of this request, or the answer that sends the browser to sign in
    /// (with a dead session's cookie deleted).
    pub(crate) async fn resolve(parts: &Parts, app: &App) -> Result<Viewer, Response> {
        let secure = app.web.is_secure(&parts.headers, peer(parts));
        let Some(id) = cookie(&parts.headers, SESSION_COOKIE) else {
            return Err(to_sign_in(app, false, secure));
        };
        let Some((token, csrf)) = app.web.enter(&id) else {
            return Err(to_sign_in(app, true, secure));
        };
        let forum = app.forum.clone();
        let checked = token.clone();
        let me = blocking(move || forum.call(Some(&checked), "whoami", &Value::Null)).await?;
        let me = match me {
            Ok(me) => me,
            Err(Error::Refused(refusal))
                if matches!(refusal.reason, Reason::TokenInvalid | Reason::TokenMissing) =>
            {
                // Revoked since the last request: the session ends with it.
                app.web.close(&id);
                return Err(to_sign_in(app, true, secure));
            }
            Err(err) => {
                eprintln!("parley: web session check failed: {err}");
                return Err(super::refusal_page(
                    None,
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal_error",
                    "the session could not be checked",
                ));
            }
        };
        let text = |key: &str| me[key].as_str().unwrap_or_default().to_string();
        let kind = text("kind");
        Ok(Viewer {
            identity: text("identity"),
            can_act: kind == "human",
            kind,
            rights: me["rights"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r.as_str().map(str::to_string))
                .collect(),
            label: me["label"].as_str().map(str::to_string),
            leases: app.forum.offers("get_leases"),
            csrf,
            flash: app.web.take_flash(&id),
            token,
            session: id,
        })
    }
}

impl FromRequestParts<App> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Viewer, Response> {
        Viewer::resolve(parts, app).await
    }
}

/// 303 to `/sign-in`; `forget` also deletes the session cookie.
fn to_sign_in(app: &App, forget: bool, secure: bool) -> Response {
    let mut resp = super::see_other("/sign-in");
    if forget {
        resp.headers_mut().insert(
            header::SET_COOKIE,
            app.web.cookie(SESSION_COOKIE, "", Duration::ZERO, secure),
        );
    }
    resp
}
