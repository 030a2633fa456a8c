//! `GET /artifacts/{ref}`: an artifact's bytes (SPEC §18.1), read with the signed-in
//! person's token, as a download. The bytes are whatever a writer stored (HTML
//! included), so they are never rendered on the web view's origin: `attachment`,
//! `nosniff` and a sandbox policy (see `crate::http::provenance::raw_response`).

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::response::Response;
use serde_json::json;

use super::Refused;
use crate::http::App;
use crate::web::session::Viewer;

pub(super) async fn bytes(
    State(app): State<App>,
    viewer: Viewer,
    reference: Result<Path<String>, PathRejection>,
) -> Response {
    let reference = match reference {
        Ok(Path(reference)) => reference,
        Err(err) => {
            return super::refused(&viewer, "Artifact", Refused::bad_path("artifact", &err))
        }
    };
    let args = json!({ "ref": reference });
    match super::read(&app, &viewer, "get_artifact", args).await {
        Ok(found) => crate::http::raw_artifact(&found),
        Err(refused) => super::refused(&viewer, &format!("Artifact {reference}"), refused),
    }
}

/// A ref the forum stores (`sha256:<64 lowercase hex>`), the only kind of artifact
/// evidence that links to this route.
pub(super) fn is_stored_ref(reference: &str) -> bool {
    reference.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_sha256_ref_in_key_form_is_stored() {
        assert!(is_stored_ref(&format!("sha256:{}", "ab".repeat(32))));
        assert!(!is_stored_ref(&format!("sha256:{}", "AB".repeat(32))));
        assert!(!is_stored_ref(&format!("sha256:{}", "ab".repeat(31))));
        assert!(!is_stored_ref("git:abc"));
        assert!(!is_stored_ref(&format!("sha256:{}/../x", "ab".repeat(32))));
    }
}
