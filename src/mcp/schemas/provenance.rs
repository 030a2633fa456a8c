//! Output schemas of the provenance profile's tools (SPEC §18.3): a bundle (a
//! DSSE envelope) and an imported claim's origin, in place (neither recurses).

use serde_json::{json, Value};

use super::{array_of, object, string};

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
