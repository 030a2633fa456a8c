//! The REST routes of the provenance profile (SPEC §18): artifacts and signed
//! claims across realms.
//!
//! `POST /v1/artifacts` (`put_artifact`; a JSON object of its arguments, or the raw
//! bytes with their `Content-Type`), `GET /v1/artifacts/{ref}` (`get_artifact`;
//! `?raw=1` answers with the bytes themselves), `GET /v1/claims/{id}/bundle`
//! (`export_claim`) and `POST /v1/claims/import` (`import_claim`, the body holds
//! `{bundle, thread?}`). The engine makes every check; this module reads requests.

use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use base64::Engine as _;
use parley_forum::{Reason, Refusal};
use serde_json::{json, Value};

use super::coordination::{refusal_after_token, write};
use super::rest::{call, path_id, query_args, respond};
use super::{bearer, blocking, error_response, read_body, refusal_response, App, BodyError};

pub(super) fn routes() -> Router<App> {
    Router::new()
        .route("/v1/artifacts", post(put_artifact))
        .route("/v1/artifacts/{ref}", get(get_artifact))
        .route("/v1/claims/{id}/bundle", get(export_claim))
        .route("/v1/claims/import", post(import_claim))
}

/// `POST /v1/artifacts`: 201 with `{ "artifact" }` (the same bytes again give the
/// same artifact). A body whose `Content-Type` is not JSON is the artifact itself,
/// so that `curl --data-binary @file -H 'Content-Type: image/png'` works as is.
async fn put_artifact(State(app): State<App>, headers: HeaderMap, body: Body) -> Response {
    if is_json(&headers) {
        return write(app, headers, body, "put_artifact", StatusCode::CREATED).await;
    }
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
    let mut args =
        json!({ "content_base64": base64::engine::general_purpose::STANDARD.encode(&bytes) });
    if let Some(media_type) = headers.get(header::CONTENT_TYPE) {
        match media_type.to_str() {
            Ok(media_type) => args["media_type"] = Value::String(media_type.trim().to_string()),
            Err(_) => {
                let refusal = Refusal::new(
                    Reason::InvalidArgument,
                    "the Content-Type header is not visible ASCII",
                )
                .with_field("media_type");
                return refusal_after_token(&app, token, refusal).await;
            }
        }
    }
    call(app, token, "put_artifact", args, StatusCode::CREATED).await
}

/// A JSON body: `application/json` (with parameters or not), or no `Content-Type`
/// at all (what most clients send for a JSON body they did not label).
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return true;
    };
    let Ok(text) = value.to_str() else {
        return false;
    };
    let essence = text.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
}

/// `GET /v1/artifacts/{ref}`: `{ "artifact", "content_base64" }`, or with `raw=1`
/// the bytes themselves.
async fn get_artifact(
    State(app): State<App>,
    reference: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    let token = match bearer(&headers) {
        Ok(token) => token,
        Err(refusal) => return refusal_response(&refusal),
    };
    let reference = match path_id(reference, "ref") {
        Ok(reference) => reference,
        Err(refusal) => return refusal_after_token(&app, token, refusal).await,
    };
    let mut args = match query_args(query.0.as_deref().unwrap_or("")) {
        Ok(args) => args,
        Err(refusal) => return refusal_after_token(&app, token, refusal).await,
    };
    let raw = match args.remove("raw") {
        None => false,
        Some(Value::String(flag)) if flag == "1" || flag == "true" => true,
        Some(Value::String(flag)) if flag == "0" || flag == "false" => false,
        Some(_) => {
            let refusal = Refusal::new(Reason::InvalidArgument, "raw is 1 or 0").with_field("raw");
            return refusal_after_token(&app, token, refusal).await;
        }
    };
    args.insert("ref".into(), Value::String(reference));
    let args = Value::Object(args);
    if !raw {
        return call(app, token, "get_artifact", args, StatusCode::OK).await;
    }
    let forum = app.forum.clone();
    match blocking(move || forum.call(token.as_deref(), "get_artifact", &args)).await {
        Ok(Ok(found)) => raw_response(&found),
        Ok(outcome) => respond("get_artifact", outcome, StatusCode::OK),
        Err(resp) => resp,
    }
}

/// The artifact's bytes as a download. They are whatever a writer stored, so they
/// are never rendered on this origin: `attachment`, `nosniff`, and a sandbox
/// policy for a browser that opens them anyway.
pub(crate) fn raw_response(found: &Value) -> Response {
    let content = found["content_base64"].as_str().unwrap_or("");
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(content) else {
        return error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "the stored artifact is not base64",
        );
    };
    let artifact = &found["artifact"];
    let media_type = artifact["media_type"]
        .as_str()
        .and_then(|m| HeaderValue::from_str(m).ok())
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    // `sha256:<hex>` → `sha256-<hex>`: a file name without a colon.
    let name = artifact["ref"]
        .as_str()
        .unwrap_or("artifact")
        .replace(':', "-");
    let disposition = format!("attachment; filename=\"{name}\"");
    let mut resp = (StatusCode::OK, bytes).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, media_type);
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox; default-src 'none'"),
    );
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        h.insert(header::CONTENT_DISPOSITION, value);
    }
    resp
}

/// `GET /v1/claims/{id}/bundle`: `export_claim`, 200 with `{ "bundle" }`.
async fn export_claim(
    State(app): State<App>,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    let token = match bearer(&headers) {
        Ok(token) => token,
        Err(refusal) => return refusal_response(&refusal),
    };
    match path_id(id, "claim") {
        Ok(id) => {
            let args = json!({ "claim": id });
            call(app, token, "export_claim", args, StatusCode::OK).await
        }
        Err(refusal) => refusal_after_token(&app, token, refusal).await,
    }
}

/// `POST /v1/claims/import`: `import_claim`; 201 with what a post returns.
async fn import_claim(State(app): State<App>, headers: HeaderMap, body: Body) -> Response {
    write(app, headers, body, "import_claim", StatusCode::CREATED).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_json_unless_labelled_otherwise() {
        let mut headers = HeaderMap::new();
        assert!(is_json(&headers));
        for (label, json) in [
            ("application/json", true),
            ("Application/JSON; charset=utf-8", true),
            ("image/png", false),
            ("text/plain", false),
        ] {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(label));
            assert_eq!(is_json(&headers), json, "{label}");
        }
    }

    #[test]
    fn raw_bytes_are_a_download_never_a_page() {
        let found = json!({
            "artifact": {"ref": "sha256:ab", "size": 5, "media_type": "text/html"},
            "content_base64": "PGI+aTwvYj4=",
        });
        let resp = raw_response(&found);
        let h = resp.headers();
        assert_eq!(h[header::CONTENT_TYPE], "text/html");
        assert_eq!(h[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(
            h[header::CONTENT_DISPOSITION],
            "attachment; filename=\"sha256-ab\""
        );
        assert!(h[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap()
            .starts_with("sandbox"));
    }
}
