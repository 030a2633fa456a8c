//! Token administration for a person: the identities, issuing an agent token, and
//! revoking a token. These are host operations (SPEC §2: never over MCP or REST),
//! offered here to a signed-in human only; an agent's session is refused.
//!
//! A new secret is shown once, on the page that answers the form (not after a
//! redirect, and with `Cache-Control: no-store`), so it is never stored in a session
//! or reachable again by reloading a URL.

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use maud::{html, Markup};
use parley_forum::{Error, IdentityInfo, TokenSpec};
use serde_json::{json, Map, Value};

use super::session::Viewer;
use super::{html_response, layout, posted_form, read_only, refusal};
use crate::http::{blocking, App};

const RIGHTS: [&str; 4] = ["read", "write", "lock", "verify"];

/// What the create form shows again after a refusal.
#[derive(Default)]
struct Typed {
    handle: String,
    label: String,
    rights: Vec<String>,
}

/// What the page reports after a form.
enum Outcome {
    None,
    Created {
        identity: String,
        secret: String,
    },
    CreateRefused {
        reason: String,
        message: String,
        typed: Typed,
    },
    Revoked,
    RevokeRefused {
        reason: String,
        message: String,
    },
}

/// `GET /tokens`.
pub(crate) async fn page(State(app): State<App>, viewer: Viewer) -> Response {
    if !viewer.can_act {
        return read_only(&viewer);
    }
    render(&app, &viewer, StatusCode::OK, Outcome::None).await
}

/// `POST /tokens`: issues an agent token.
pub(crate) async fn create(State(app): State<App>, request: Request) -> Response {
    let (_, viewer, form) = match posted_form(&app, request, true).await {
        Ok(admitted) => admitted,
        Err(refused) => return refused,
    };
    let typed = Typed {
        handle: form.get("handle").unwrap_or_default().trim().to_string(),
        label: form.get("label").unwrap_or_default().trim().to_string(),
        rights: form.all("rights").map(str::to_string).collect(),
    };
    let spec = spec_json(&typed);
    let forum = app.forum.clone();
    let made = blocking(move || {
        let spec = TokenSpec::from_json(&spec)?;
        let secret = forum.create_token(&spec)?;
        let me = forum.call(Some(&secret), "whoami", &Value::Null)?;
        Ok::<_, Error>((
            me["identity"].as_str().unwrap_or_default().to_string(),
            secret,
        ))
    })
    .await;
    let outcome = match made {
        Ok(Ok((identity, secret))) => Outcome::Created { identity, secret },
        Ok(Err(err)) => {
            let (reason, message) = refusal_of(&err);
            Outcome::CreateRefused {
                reason,
                message,
                typed,
            }
        }
        Err(resp) => return resp,
    };
    let status = match outcome {
        Outcome::Created { .. } => StatusCode::OK,
        _ => StatusCode::BAD_REQUEST,
    };
    render(&app, &viewer, status, outcome).await
}

/// `POST /tokens/revoke`: revokes a token by its secret; it stops working at once.
pub(crate) async fn revoke(State(app): State<App>, request: Request) -> Response {
    let (_, viewer, form) = match posted_form(&app, request, true).await {
        Ok(admitted) => admitted,
        Err(refused) => return refused,
    };
    let token = form.get("token").unwrap_or_default().trim().to_string();
    let forum = app.forum.clone();
    let revoked = match blocking(move || forum.revoke_token(&token)).await {
        Ok(revoked) => revoked,
        Err(resp) => return resp,
    };
    let (status, outcome) = match revoked {
        Ok(true) => (StatusCode::OK, Outcome::Revoked),
        Ok(false) => (
            StatusCode::NOT_FOUND,
            Outcome::RevokeRefused {
                reason: "token_not_found".into(),
                message: "no active token matches (unknown or already revoked)".into(),
            },
        ),
        Err(err) => {
            let (reason, message) = refusal_of(&err);
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                Outcome::RevokeRefused { reason, message },
            )
        }
    };
    render(&app, &viewer, status, outcome).await
}

/// The token spec in the JSON form every binding shares: an agent token with the
/// rights checked; the engine validates the handle and the label.
fn spec_json(typed: &Typed) -> Value {
    let mut spec = Map::new();
    spec.insert("handle".into(), json!(typed.handle));
    spec.insert("kind".into(), json!("llm"));
    spec.insert("rights".into(), json!(typed.rights));
    if !typed.label.is_empty() {
        spec.insert("label".into(), json!(typed.label));
    }
    Value::Object(spec)
}

/// The reason and message of a failed token operation: a protocol refusal keeps
/// its reason; a malformed spec is `invalid_argument`.
fn refusal_of(err: &Error) -> (String, String) {
    match err {
        Error::Refused(refusal) => (refusal.reason.as_str().into(), refusal.message.clone()),
        Error::InvalidArgument(message) => ("invalid_argument".into(), message.clone()),
        other => {
            eprintln!("parley: a web token operation failed: {other}");
            ("internal_error".into(), "the token store failed".into())
        }
    }
}

async fn render(app: &App, viewer: &Viewer, status: StatusCode, outcome: Outcome) -> Response {
    let forum = app.forum.clone();
    let identities = match blocking(move || forum.identities()).await {
        Ok(Ok(identities)) => identities,
        Ok(Err(err)) => {
            eprintln!("parley: listing identities failed: {err}");
            return super::refusal_page(
                Some(viewer),
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                "the identities could not be read",
            );
        }
        Err(resp) => return resp,
    };
    let realm = app.forum.config().realm.clone();
    let content = content(viewer, &realm, &identities, &outcome);
    let mut resp = html_response(status, layout::page(Some(viewer), "Tokens", content));
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

fn content(viewer: &Viewer, realm: &str, identities: &[IdentityInfo], outcome: &Outcome) -> Markup {
    let default = Typed {
        rights: vec!["read".into(), "write".into()],
        ..Typed::default()
    };
    let (typed, create_refused) = match outcome {
        Outcome::CreateRefused {
            reason,
            message,
            typed,
        } => (typed, Some((reason, message))),
        _ => (&default, None),
    };
    html! {
        h1 { "Tokens" }
        @if let Outcome::Created { identity, secret } = outcome {
            section #created aria-labelledby="created-title" {
                h2 id="created-title" { "New token for " (identity) }
                p { "Copy it now: it is shown only this once, and the forum keeps only its hash." }
                output id="new-secret" for="token-create" { (secret) }
            }
        }
        section aria-labelledby="identities-title" {
            h2 id="identities-title" { "Identities" }
            table id="tokens" {
                thead { tr { th scope="col" { "Identity" } th scope="col" { "Kind" } th scope="col" { "Label" } th scope="col" { "Active tokens" } } }
                tbody {
                    @for info in identities {
                        tr {
                            td.identity data-label="Identity" { (info.identity) }
                            td.kind data-label="Kind" { (info.kind.as_str()) }
                            td.label data-label="Label" { (info.label) }
                            td.count data-label="Active tokens" { (info.active_tokens) }
                        }
                    }
                }
            }
        }
        section aria-labelledby="create-title" {
            h2 id="create-title" { "Issue an agent token" }
            form id="token-create" method="post" action="/tokens" {
                @if let Some((reason, message)) = create_refused {
                    (refusal(reason, message))
                }
                input type="hidden" name="csrf" value=(viewer.csrf);
                p {
                    label for="handle" { "Handle" }
                    input id="handle" name="handle" type="text" required maxlength="64"
                        autocomplete="off" spellcheck="false" value=(typed.handle)
                        aria-describedby="handle-hint";
                    span.hint id="handle-hint" {
                        "1–64 of a–z, 0–9, . _ -; the agent becomes " code { (realm) ":HANDLE" } "."
                    }
                }
                fieldset {
                    legend { "Rights" }
                    @for right in RIGHTS {
                        label.check {
                            input type="checkbox" name="rights" value=(right)
                                checked[typed.rights.iter().any(|r| r == right)];
                            " " (right)
                        }
                    }
                }
                p {
                    label for="label" { "Label (optional)" }
                    input id="label" name="label" type="text" maxlength="64" value=(typed.label);
                }
                button type="submit" { "Issue token" }
            }
        }
        section aria-labelledby="revoke-title" {
            h2 id="revoke-title" { "Revoke a token" }
            form.token-revoke method="post" action="/tokens/revoke" {
                @match outcome {
                    Outcome::Revoked => p #revoked role="status" { "Token revoked: it stops working at once." },
                    Outcome::RevokeRefused { reason, message } => (refusal(reason, message)),
                    _ => {},
                }
                input type="hidden" name="csrf" value=(viewer.csrf);
                p {
                    label for="revoke-token" { "Token secret" }
                    input id="revoke-token" name="token" type="password" required autocomplete="off";
                }
                button type="submit" { "Revoke" }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_is_an_agent_with_the_checked_rights() {
        let typed = Typed {
            handle: "bob".into(),
            label: String::new(),
            rights: vec!["read".into()],
        };
        assert_eq!(
            spec_json(&typed),
            json!({"handle": "bob", "kind": "llm", "rights": ["read"]})
        );
        let spec = TokenSpec::from_json(&spec_json(&Typed {
            label: "Bob".into(),
            ..typed
        }))
        .unwrap();
        assert_eq!(spec.label.as_deref(), Some("Bob"));
    }

    #[test]
    fn a_refused_create_keeps_what_was_typed_and_never_a_secret_field() {
        let viewer = Viewer::for_test("human");
        let outcome = Outcome::CreateRefused {
            reason: "invalid_argument".into(),
            message: "bad handle".into(),
            typed: Typed {
                handle: "Bad Handle".into(),
                label: "L".into(),
                rights: vec!["lock".into()],
            },
        };
        let text = content(&viewer, "ainotes", &[], &outcome).into_string();
        assert!(text.contains(r#"data-reason="invalid_argument""#));
        assert!(text.contains(r#"value="Bad Handle""#));
        assert!(text.contains(r#"value="lock" checked"#));
        assert!(!text.contains(r#"value="read" checked"#));
        assert!(!text.contains("new-secret"));
    }
}
