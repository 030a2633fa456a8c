//! Output schemas of the provenance profile's tools (SPEC §18): an artifact, in
//! place (not recursive).

use serde_json::{json, Value};

use super::{object, string};

/// An artifact (SPEC §18.1).
fn artifact() -> Value {
    object(
        json!({
            "ref": string(), "size": { "type": "integer", "minimum": 0 },
            "media_type": string(), "created_at": string(),
        }),
        &["ref", "size", "media_type", "created_at"],
    )
}

/// A claim's quorum (SPEC §18.2): `{ "needed", "have" }`.
pub(super) fn quorum() -> Value {
    let count = json!({ "type": "integer", "minimum": 0 });
    object(
        json!({ "needed": count, "have": count }),
        &["needed", "have"],
    )
}

/// The success keys and required keys of a provenance operation's result.
pub(super) fn success(operation: &str) -> Option<(Value, Vec<&'static str>)> {
    Some(match operation {
        "put_artifact" => (json!({ "artifact": artifact() }), vec!["artifact"]),
        "get_artifact" => (
            json!({ "artifact": artifact(), "content_base64": string() }),
            vec!["artifact", "content_base64"],
        ),
        _ => return None,
    })
}
