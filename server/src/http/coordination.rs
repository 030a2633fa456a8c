//! The REST routes of the coordination profile (SPEC §16.2): presence and leases.
//!
//! `POST /v1/leases` (the body holds `lease`'s arguments), `DELETE /v1/leases/{id}`,
//! `GET /v1/leases` (`resource`, `identity`), `PUT /v1/presence` (the body holds
//! `set_presence`'s arguments) and `GET /v1/presence` (`identity`). The engine makes
//! every check, in the order of SPEC §12.1; this module only reads the request.
//! A body that cannot be read as a JSON object of arguments is `invalid_argument`
//! (these are operations, not envelopes), after the token has been judged.

use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use parley_forum::{Error, Reason, Refusal};
use serde_json::Value;

use super::rest::{call, path_id, query_args, respond};
use super::{bearer, blocking, error_response, read_body, refusal_response, App, BodyError};

/// `POST /v1/leases`: `lease`; 201 with `{ "lease" }`, a renewal included.
pub(crate) async fn lease(State(app): State<App>, headers: HeaderMap, body: Body) -> Response {
    write(app, headers, body, "lease", StatusCode::CREATED).await
}

/// `DELETE /v1/leases/{id}`: `release`; 200 with `{ "lease" }` and its `released_at`.
pub(crate) async fn release(
    State(app): State<App>,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    let token = match bearer(&headers) {
        Ok(token) => token,
        Err(refusal) => return refusal_response(&refusal),
    };
    match path_id(id, "lease") {
        Ok(id) => {
            let args = serde_json::json!({ "lease": id });
            call(app, token, "release", args, StatusCode::OK).await
        }
        Err(refusal) => refusal_after_token(&app, token, refusal).await,
    }
}

/// `GET /v1/leases`: `get_leases`.
pub(crate) async fn leases(
    State(app): State<App>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    read(app, headers, query, "get_leases").await
}

/// `PUT /v1/presence`: `set_presence`; 200 with `{ "presence" }`.
pub(crate) async fn set_presence(
    State(app): State<App>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    write(app, headers, body, "set_presence", StatusCode::OK).await
}

/// `GET /v1/presence`: `get_presence`.
pub(crate) async fn presence(
    State(app): State<App>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    read(app, headers, query, "get_presence").await
}

async fn read(app: App, headers: HeaderMap, query: RawQuery, op: &'static str) -> Response {
    let token = match bearer(&headers) {
        Ok(token) => token,
        Err(refusal) => return refusal_response(&refusal),
    };
    match query_args(query.0.as_deref().unwrap_or("")) {
        Ok(args) => call(app, token, op, Value::Object(args), StatusCode::OK).await,
        Err(refusal) => refusal_after_token(&app, token, refusal).await,
    }
}

/// A write whose arguments are the request's JSON body. These requests are small
/// and rare next to posts, so the body is read before the token is judged; a body
/// that cannot be read is answered only after the token.
pub(super) async fn write(
    app: App,
    headers: HeaderMap,
    body: Body,
    op: &'static str,
    success: StatusCode,
) -> Response {
    let token = match bearer(&headers) {
        Ok(token) => token,
        Err(refusal) => return refusal_response(&refusal),
    };
    let max = app.forum.config().limits.request_max_bytes;
    let bytes = match read_body(&headers, body, max).await {
        Ok(bytes) => bytes,
        Err(BodyError::TooLarge(refusal)) => return refusal_response(&refusal),
        Err(BodyError::Broken(why)) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                "unreadable_body",
                &format!("unreadable request body: {why}"),
            )
        }
    };
    match arguments(&bytes) {
        Ok(args) => call(app, token, op, args, success).await,
        Err(refusal) => refusal_after_token(&app, token, refusal).await,
    }
}

/// The body as the operation's arguments: a JSON object, or nothing at all (no
/// arguments). Anything else is `invalid_argument`.
fn arguments(bytes: &[u8]) -> Result<Value, Refusal> {
    let refuse = |message: String| Refusal::new(Reason::InvalidArgument, message);
    let text = std::str::from_utf8(bytes).map_err(|err| {
        refuse(format!(
            "the body is not valid UTF-8 (invalid byte at offset {})",
            err.valid_up_to()
        ))
    })?;
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    match serde_json::from_str(text) {
        Ok(Value::Object(args)) => Ok(Value::Object(args)),
        Ok(_) => Err(refuse(
            "the body must be a JSON object of the operation's arguments".into(),
        )),
        Err(err) => Err(refuse(format!("the body is not valid JSON: {err}"))),
    }
}

/// `refusal`, unless the token is refused first (SPEC §12.1: the token is judged
/// before anything else).
pub(super) async fn refusal_after_token(
    app: &App,
    token: Option<String>,
    refusal: Refusal,
) -> Response {
    let forum = app.forum.clone();
    let judged = blocking(move || forum.call(token.as_deref(), "whoami", &Value::Null)).await;
    match judged {
        Ok(Ok(_)) => refusal_response(&refusal),
        Ok(Err(Error::Refused(token_refusal))) => refusal_response(&token_refusal),
        Ok(Err(other)) => respond("whoami", Err(other), StatusCode::OK),
        Err(resp) => resp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_body_is_an_object_of_arguments_or_nothing() {
        assert_eq!(
            arguments(br#"{"resource":"src/","ttl_s":60}"#).unwrap(),
            json!({"resource": "src/", "ttl_s": 60})
        );
        assert_eq!(arguments(b"").unwrap(), json!({}));
        assert_eq!(arguments(b"  \n").unwrap(), json!({}));
        for bad in [&b"[1]"[..], b"\"src/\"", b"{", b"\xff{}"] {
            let refusal = arguments(bad).unwrap_err();
            assert_eq!(refusal.reason, Reason::InvalidArgument);
        }
    }
}
