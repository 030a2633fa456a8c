//! The REST routes of SPEC §11.2. Query parameters carry the arguments, the path
//! carries the id; the engine does every check, this module maps its answer to a
//! status code: 200 for a read, 201 for a post, the reason's status for a refusal.

use std::pin::pin;
use std::time::Duration;

use axum::body::Body;
use axum::extract::path::ErrorKind;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use parley_forum::{Error, Reason, Refusal};
use serde_json::{Map, Value};

use super::waits::{self, Plan, Waited};
use super::{
    bearer, blocking, closing, error_response, json_response, read_body, refusal_response, unread,
    App, BodyError,
};

/// Arguments that are numbers; every other query parameter stays a string (cursors
/// are opaque and may look like numbers, and ids accept the decimal string form).
pub(crate) const NUMERIC: [&str; 2] = ["limit", "wait_ms"];

/// How long a post to a shared forum waits for its body before its token is
/// judged on its own (see `post_message`).
const JUDGE_AFTER: Duration = Duration::from_millis(50);

/// The header that carries a post's `idempotency_key` (SPEC §14.3).
const IDEMPOTENCY_KEY: &str = "idempotency-key";

pub(crate) async fn manifest(
    State(app): State<App>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    read(app, headers, query, "get_manifest", None).await
}

pub(crate) async fn whoami(
    State(app): State<App>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    read(app, headers, query, "whoami", None).await
}

pub(crate) async fn list_threads(
    State(app): State<App>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    read(app, headers, query, "list_threads", None).await
}

pub(crate) async fn get_thread(
    State(app): State<App>,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    match path_id(id, "thread") {
        Ok(id) => read(app, headers, query, "get_thread", Some(("thread", id))).await,
        Err(refusal) => refusal_response(&refusal),
    }
}

/// `get_digest` (SPEC §17): `GET /v1/threads/{id}/digest`.
pub(crate) async fn get_digest(
    State(app): State<App>,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    match path_id(id, "thread") {
        Ok(id) => read(app, headers, query, "get_digest", Some(("thread", id))).await,
        Err(refusal) => refusal_response(&refusal),
    }
}

pub(crate) async fn inbox(State(app): State<App>, headers: HeaderMap, query: RawQuery) -> Response {
    read(app, headers, query, "get_inbox", None).await
}

pub(crate) async fn events(
    State(app): State<App>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    read(app, headers, query, "get_events", None).await
}

pub(crate) async fn messages(
    State(app): State<App>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    read(app, headers, query, "get_messages", None).await
}

/// `search` (SPEC §14.4); a forum whose engine has no `search` answers 404
/// `unknown_operation`.
pub(crate) async fn search(
    State(app): State<App>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    read(app, headers, query, "search", None).await
}

pub(crate) async fn get_claim(
    State(app): State<App>,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    match path_id(id, "claim") {
        Ok(id) => read(app, headers, query, "get_claim", Some(("claim", id))).await,
        Err(refusal) => refusal_response(&refusal),
    }
}

/// The id in the path, or the refusal of one that cannot be read (its percent
/// escapes do not decode to UTF-8).
pub(crate) fn path_id(
    id: Result<Path<String>, PathRejection>,
    field: &str,
) -> Result<String, Refusal> {
    match id {
        Ok(Path(id)) => Ok(id),
        Err(PathRejection::FailedToDeserializePathParams(err))
            if matches!(err.kind(), ErrorKind::InvalidUtf8InPathParam { .. }) =>
        {
            Err(Refusal::new(
                Reason::InvalidArgument,
                format!("the {field} id in the path is not valid UTF-8"),
            )
            .with_field(field))
        }
        Err(err) => Err(Refusal::new(
            Reason::InvalidArgument,
            format!(
                "the {field} id in the path cannot be read: {}",
                err.body_text()
            ),
        )
        .with_field(field)),
    }
}

pub(crate) async fn post_message(
    State(app): State<App>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let token = match bearer(&headers) {
        Ok(token) => token,
        Err(refusal) => return unread(&app, refusal_response(&refusal), body),
    };
    // The token is judged before the body is read (it would be first anyway, SPEC
    // §12.1): a stranger's request is answered at once and holds nothing while its
    // body does not come. A shared forum's check is a round trip to the database,
    // so there it waits for a body that is not in after a moment: nearly every
    // post's is, and the engine judges its token with the post.
    let max = app.forum.config().limits.request_max_bytes;
    let mut judged = false;
    let read = if app.forum.is_shared() {
        let mut read = pin!(read_body(&headers, body, max));
        match tokio::time::timeout(JUDGE_AFTER, &mut read).await {
            Ok(read) => read,
            Err(_) => match judge_token(&app, token.as_deref()).await {
                Ok(None) => {
                    judged = true;
                    read.await
                }
                Ok(Some(refused)) => return closing(refused),
                Err(resp) => return resp,
            },
        }
    } else {
        match judge_token(&app, token.as_deref()).await {
            Ok(None) => judged = true,
            Ok(Some(refused)) => return unread(&app, refused, body),
            Err(resp) => return resp,
        }
        read_body(&headers, body, max).await
    };
    let bytes = match read {
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
    let text = match std::str::from_utf8(&bytes) {
        Ok(text) => text,
        Err(err) => {
            let refusal = Refusal::new(
                Reason::InvalidBody,
                format!(
                    "the body is not valid UTF-8 (invalid byte at offset {})",
                    err.valid_up_to()
                ),
            );
            return refusal_response(&refusal);
        }
    };
    let mut envelope: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(err) => {
            let refusal = Refusal::new(
                Reason::InvalidBody,
                format!("the body is not valid JSON: {err}"),
            );
            return refusal_response(&refusal);
        }
    };
    if let Err(refusal) = idempotency_header(&headers, &mut envelope) {
        // The token is judged first (SPEC §12.1): a bad token wins over the header.
        if !judged {
            match judge_token(&app, token.as_deref()).await {
                Ok(None) => {}
                Ok(Some(refused)) => return refused,
                Err(resp) => return resp,
            }
        }
        return refusal_response(&refusal);
    }
    // Concurrent posts share the engine's group commits.
    let forum = app.forum.clone();
    match blocking(move || forum.call(token.as_deref(), "post", &envelope)).await {
        Ok(outcome) => respond("post", outcome, StatusCode::CREATED),
        Err(resp) => resp,
    }
}

/// The refusal of a request's token, as the engine judges it (`token_missing`,
/// `token_invalid`); `None` for a token that is good. A file forum's callers are
/// cached, so the check runs here; a shared forum's is a round trip to the
/// database, on the blocking pool.
async fn judge_token(app: &App, token: Option<&str>) -> Result<Option<Response>, Response> {
    let forum = app.forum.clone();
    let token = token.map(str::to_string);
    let check = move || forum.call(token.as_deref(), "whoami", &Value::Null);
    let outcome = if app.forum.is_shared() {
        blocking(check).await?
    } else {
        check()
    };
    Ok(match outcome {
        Ok(_) => None,
        Err(Error::Refused(refusal)) => Some(refusal_response(&refusal)),
        Err(other) => Some(respond("post", Err(other), StatusCode::CREATED)),
    })
}

/// Carries the `Idempotency-Key` header into the envelope's `idempotency_key`;
/// refuses (`invalid_body`) a header that is not text, and one that differs from
/// the key the envelope carries. The key's syntax is the engine's to judge.
fn idempotency_header(headers: &HeaderMap, envelope: &mut Value) -> Result<(), Refusal> {
    let mut values = headers.get_all(IDEMPOTENCY_KEY).iter();
    let Some(value) = values.next() else {
        return Ok(());
    };
    let refuse = |message: &str| {
        Err(Refusal::new(Reason::InvalidBody, message).with_field("idempotency_key"))
    };
    if values.next().is_some() {
        return refuse("the Idempotency-Key header is given more than once");
    }
    let Ok(key) = value.to_str() else {
        return refuse("the Idempotency-Key header is not printable ASCII");
    };
    // An envelope that is not an object is the engine's to refuse.
    let Value::Object(fields) = envelope else {
        return Ok(());
    };
    match fields.get("idempotency_key") {
        None => {
            fields.insert("idempotency_key".into(), Value::from(key));
            Ok(())
        }
        Some(Value::String(given)) if given == key => Ok(()),
        Some(_) => refuse(
            "the Idempotency-Key header and the envelope's idempotency_key differ; give one, or the same in both",
        ),
    }
}

pub(crate) async fn not_found() -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such route; the routes are listed in the manifest's documentation",
    )
}

async fn read(
    app: App,
    headers: HeaderMap,
    query: RawQuery,
    op: &'static str,
    path_arg: Option<(&str, String)>,
) -> Response {
    let token = match bearer(&headers) {
        Ok(token) => token,
        Err(refusal) => return refusal_response(&refusal),
    };
    let mut args = match query_args(query.0.as_deref().unwrap_or("")) {
        Ok(args) => args,
        Err(refusal) => return refusal_response(&refusal),
    };
    if let Some((key, id)) = path_arg {
        args.insert(key.to_string(), Value::String(id));
    }
    match app.waits.plan(op, &args) {
        Plan::Plain => call(app, token, op, Value::Object(args), StatusCode::OK).await,
        Plan::Wait(wait) => {
            args.remove("wait_ms");
            let args = Value::Object(args);
            let forum = app.forum.clone();
            let holder = token.clone();
            let run = move || forum.call(token.as_deref(), op, &args);
            let settled = |r: &Result<Value, Error>| r.as_ref().map_or(true, waits::has_items);
            match waits::wait(&app, holder.as_deref(), wait, run, settled).await {
                Ok(Waited::Done(outcome)) => respond(op, outcome, StatusCode::OK),
                Ok(Waited::Full(_, refusal)) => too_many_waits(refusal),
                Err(resp) => resp,
            }
        }
    }
}

/// 503 past the cap on waits (or the token's share of it), with `Retry-After`.
pub(crate) fn too_many_waits(refusal: Value) -> Response {
    let mut resp = json_response(
        StatusCode::SERVICE_UNAVAILABLE,
        &serde_json::json!({ "error": refusal }),
    );
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(waits::RETRY_AFTER_S));
    resp
}

pub(crate) async fn call(
    app: App,
    token: Option<String>,
    op: &'static str,
    args: Value,
    success: StatusCode,
) -> Response {
    let forum = app.forum.clone();
    match blocking(move || forum.call(token.as_deref(), op, &args)).await {
        Ok(outcome) => respond(op, outcome, success),
        Err(resp) => resp,
    }
}

/// The response to an engine call's outcome: `success` with the result, the
/// reason's status for a refusal.
pub(crate) fn respond(op: &str, outcome: Result<Value, Error>, success: StatusCode) -> Response {
    match outcome {
        Ok(result) => json_response(success, &result),
        Err(Error::Refused(refusal)) => refusal_response(&refusal),
        // An operation of a profile the host switched off (`get_claim`, `search`).
        Err(Error::UnknownOperation(name)) => error_response(
            StatusCode::NOT_FOUND,
            "unknown_operation",
            &format!("operation {name} is not offered by this forum"),
        ),
        // The storage is out of reach (a database that is down, a full disk): the
        // request may succeed when repeated, and nothing of it was written.
        Err(Error::Storage(err)) => {
            eprintln!("parley: {op} failed: {err}");
            let mut resp = error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                "storage_unavailable",
                &format!("storage error: {err}"),
            );
            resp.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(STORAGE_RETRY_AFTER_S),
            );
            resp
        }
        Err(err) => {
            eprintln!("parley: {op} failed: {err}");
            error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                &err.to_string(),
            )
        }
    }
}

/// `Retry-After` of a storage failure: a restarting database is usually back
/// within seconds.
const STORAGE_RETRY_AFTER_S: u64 = 1;

/// The query string as operation arguments: `limit=10&since=c1` → `{"limit": 10, "since": "c1"}`.
pub(crate) fn query_args(query: &str) -> Result<Map<String, Value>, Refusal> {
    check_utf8(query)?;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).map_err(|e| {
        Refusal::new(
            Reason::InvalidArgument,
            format!("malformed query string: {e}"),
        )
    })?;
    let mut args = Map::new();
    for (key, value) in pairs {
        let value = if NUMERIC.contains(&key.as_str())
            && !value.is_empty()
            && value.bytes().all(|b| b.is_ascii_digit())
        {
            value
                .parse::<u64>()
                .map(Value::from)
                .unwrap_or(Value::String(value))
        } else {
            Value::String(value)
        };
        if args.insert(key.clone(), value).is_some() {
            return Err(Refusal::new(
                Reason::InvalidArgument,
                format!("query parameter {key} is given twice"),
            )
            .with_field(key));
        }
    }
    Ok(args)
}

/// Refuses a query string whose percent escapes do not decode to UTF-8: the
/// decoder would otherwise put U+FFFD in their place.
fn check_utf8(query: &str) -> Result<(), Refusal> {
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if String::from_utf8(percent_decode(key)).is_err()
            || String::from_utf8(percent_decode(value)).is_err()
        {
            let key = String::from_utf8_lossy(&percent_decode(key)).into_owned();
            return Err(Refusal::new(
                Reason::InvalidArgument,
                format!("query parameter {key} is not valid UTF-8"),
            )
            .with_field(key));
        }
    }
    Ok(())
}

/// The bytes of a query component: `%XX` decoded, anything else (a `%` that starts
/// no escape included) as it is. `+` is a space, a byte either way.
fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn query_parameters_become_arguments() {
        let args = query_args("limit=10&since=123&state=open&thread=th_1").unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"limit": 10, "since": "123", "state": "open", "thread": "th_1"})
        );
        let args = query_args("limit=ten").unwrap();
        assert_eq!(args["limit"], "ten");
        let args = query_args("since=a%2Bb%3D").unwrap();
        assert_eq!(args["since"], "a+b=");
        assert!(query_args("").unwrap().is_empty());
    }

    proptest::proptest! {
        #[test]
        fn encoded_parameters_come_back_as_strings(
            pairs in proptest::collection::btree_map("[a-z_]{1,8}", "\\PC{0,20}", 0..5),
        ) {
            let query = serde_urlencoded::to_string(pairs.iter().collect::<Vec<_>>()).unwrap();
            let args = query_args(&query).unwrap();
            proptest::prop_assert_eq!(args.len(), pairs.len());
            for (key, value) in &pairs {
                let expected = if NUMERIC.contains(&key.as_str()) && !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
                    value.parse::<u64>().map(Value::from).unwrap_or_else(|_| json!(value))
                } else {
                    json!(value)
                };
                proptest::prop_assert_eq!(&args[key], &expected);
            }
        }
    }

    #[test]
    fn escapes_that_are_not_utf8_are_refused() {
        for bad in ["since=%FF", "state=open&x=caf%C3", "%FF=1", "q=%ED%A0%80"] {
            let refusal = query_args(bad).unwrap_err();
            assert_eq!(refusal.reason, Reason::InvalidArgument, "{bad}");
            assert!(refusal.message.contains("UTF-8"), "{bad}");
        }
        assert_eq!(query_args("since=caf%C3%A9").unwrap()["since"], "café");
        assert_eq!(query_args("q=100%25&r=%zz").unwrap()["r"], "%zz");
    }

    #[test]
    fn repeated_parameters_are_refused() {
        let refusal = query_args("limit=1&limit=2").unwrap_err();
        assert_eq!(refusal.reason, Reason::InvalidArgument);
        assert_eq!(refusal.field.as_deref(), Some("limit"));
    }
}
