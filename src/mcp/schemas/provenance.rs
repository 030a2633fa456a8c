//! Output schemas of the provenance profile's tools (SPEC §18): an artifact, a
//! quorum, a bundle (a DSSE envelope) and an imported claim's origin, in place
//! (none recurses).

use serde_json::{json, Value};

use super::{array_of, object, string};

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

/// A DSSE envelope: `payloadType`, `payload` (base64), `signatures`.
pub(super) fn bundle() -> Value {
    object(
        json!({
            "payloadType": string(),
            "payload": string(),
            "signatures": array_of(object(
                json!({ "keyid": string(), "sig": string() }),
                &["keyid", "sig"],
            )),
        }),
        &["payloadType", "payload", "signatures"],
    )
}

/// `get_claim`'s `imported`: where an imported claim came from.
pub(super) fn imported() -> Value {
    object(
        json!({
            "realm": string(), "claim": string(), "status": string(),
            "exported_at": string(), "key": string(),
        }),
        &["realm", "claim", "status", "exported_at", "key"],
    )
}
