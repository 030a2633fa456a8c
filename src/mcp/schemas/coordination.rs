//! Output schemas of the coordination profile's tools (SPEC §16): a presence
//! item and a lease, in place (neither is recursive).

use serde_json::{json, Value};

use super::{array_of, author, boolean, null_or, object, one_of_strings, string};

/// A presence item (SPEC §16.1).
fn presence() -> Value {
    object(
        json!({
            "identity": string(), "extension": null_or(string()),
            "status": one_of_strings(&["working", "idle", "away"]),
            "note": null_or(string()), "since": string(), "expires_at": string(),
            "stale": boolean(),
        }),
        &[
            "identity",
            "extension",
            "status",
            "note",
            "since",
            "expires_at",
            "stale",
        ],
    )
}

/// A lease (SPEC §16.2); `released_at` only in what `release` returns.
pub(super) fn lease() -> Value {
    object(
        json!({
            "id": string(), "resource": string(),
            "mode": one_of_strings(&["exclusive", "shared"]),
            "holder": author(),
            "thread": null_or(string()), "note": null_or(string()),
            "granted_at": string(), "expires_at": string(), "released_at": string(),
        }),
        &[
            "id",
            "resource",
            "mode",
            "holder",
            "thread",
            "note",
            "granted_at",
            "expires_at",
        ],
    )
}

/// The success keys and required keys of a coordination operation's result.
pub(super) fn success(operation: &str) -> Option<(Value, Vec<&'static str>)> {
    Some(match operation {
        "set_presence" => (json!({ "presence": presence() }), vec!["presence"]),
        "get_presence" => (json!({ "items": array_of(presence()) }), vec!["items"]),
        "lease" | "release" => (json!({ "lease": lease() }), vec!["lease"]),
        "get_leases" => (json!({ "items": array_of(lease()) }), vec!["items"]),
        _ => return None,
    })
}
