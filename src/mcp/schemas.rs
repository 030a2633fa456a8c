//! Output schemas of the tools: the JSON shapes of SPEC §8, §10, §11 and §13.
//!
//! Each is rooted in an object. A refused call carries `{"error": <refusal>}` as its
//! structured content, so every schema admits that shape too: the root lists the
//! success keys and `error`, and `anyOf` requires one set or the other. Schemas
//! leave `additionalProperties` open so a later minor version may add keys.

use serde_json::{json, Value};

fn string() -> Value {
    json!({ "type": "string" })
}

fn nullable_string() -> Value {
    json!({ "type": ["string", "null"] })
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required })
}

fn array_of(items: Value) -> Value {
    json!({ "type": "array", "items": items })
}

/// `{ "identity", "extension" }`: an author.
fn author() -> Value {
    object(
        json!({ "identity": string(), "extension": nullable_string() }),
        &["identity", "extension"],
    )
}

/// A message (SPEC §8.1), without `replies`.
fn message_properties() -> Value {
    json!({
        "id": string(), "parley": string(), "kind": string(), "thread": string(),
        "parent": nullable_string(), "from": author(), "author_kind": { "type": "string", "enum": ["llm", "human"] },
        "body": string(), "created_at": string(),
        "to": string(), "state": string(), "provenance": { "type": "object" },
        "claim": string(), "counter_claim": string(), "evidence": array_of(json!({ "type": "object" })),
        "supersedes": array_of(string()), "valid_until": string(),
    })
}

const MESSAGE_REQUIRED: [&str; 9] = [
    "id",
    "parley",
    "kind",
    "thread",
    "parent",
    "from",
    "author_kind",
    "body",
    "created_at",
];

fn message() -> Value {
    object(message_properties(), &MESSAGE_REQUIRED)
}

/// A thread summary (SPEC §8.2).
fn thread() -> Value {
    object(
        json!({
            "id": string(), "topic": string(), "creator": author(), "state": string(),
            "state_origin": { "type": "string", "enum": ["user", "llm"] },
            "state_confirmed_at": nullable_string(), "state_label": nullable_string(),
            "locked": { "type": "boolean" },
            "awaiting": {
                "type": ["object", "null"],
                "properties": { "identity": string(), "extension": nullable_string(), "message": string() },
                "required": ["identity", "extension", "message"],
            },
            "message_count": { "type": "integer", "minimum": 1 },
            "created_at": string(), "updated_at": string(),
        }),
        &[
            "id",
            "topic",
            "creator",
            "state",
            "state_origin",
            "state_confirmed_at",
            "state_label",
            "locked",
            "awaiting",
            "message_count",
            "created_at",
            "updated_at",
        ],
    )
}

/// An event (SPEC §8.4).
fn event() -> Value {
    object(
        json!({
            "id": string(), "type": { "type": "string", "enum": ["transition", "confirmation", "claim"] },
            "thread": string(), "message": string(),
            "from_state": string(), "to_state": string(),
            "claim": string(), "from_status": string(), "to_status": string(),
            "origin": { "type": "string", "enum": ["user", "llm"] },
            "identity": string(), "extension": nullable_string(), "label": nullable_string(),
            "confirmed": { "type": "boolean" }, "at": string(),
        }),
        &[
            "id",
            "type",
            "thread",
            "message",
            "origin",
            "identity",
            "extension",
            "label",
            "confirmed",
            "at",
        ],
    )
}

const CLAIM_REQUIRED: [&str; 16] = [
    "id",
    "message",
    "thread",
    "author",
    "text",
    "status",
    "evidence",
    "attestations",
    "verifications",
    "refutations",
    "refutes",
    "supersedes",
    "superseded_by",
    "valid_until",
    "expired",
    "created_at",
];

/// A claim (SPEC §10).
fn claim() -> Value {
    let support = object(
        json!({ "message": string(), "identity": string(), "at": string() }),
        &["message", "identity", "at"],
    );
    object(
        json!({
            "id": string(), "message": string(), "thread": string(), "author": author(), "text": string(),
            "status": { "type": "string", "enum": ["unverified", "supported", "verified", "refuted", "superseded"] },
            "evidence": array_of(json!({ "type": "object" })),
            "attestations": array_of(support.clone()),
            "verifications": array_of(support),
            "refutations": array_of(object(
                json!({ "claim": string(), "message": string(), "status": string() }),
                &["claim", "message", "status"],
            )),
            "refutes": nullable_string(),
            "supersedes": array_of(string()),
            "superseded_by": nullable_string(),
            "valid_until": nullable_string(),
            "expired": { "type": "boolean" },
            "created_at": string(),
        }),
        &CLAIM_REQUIRED,
    )
}

/// A page of a listing: `{ "items": [...], "cursor", "more" }`.
fn page(item: Value) -> (Value, Vec<&'static str>) {
    (
        json!({ "items": array_of(item), "cursor": string(), "more": { "type": "boolean" } }),
        vec!["items", "cursor", "more"],
    )
}

/// The refusal carried by a refused call (SPEC §12).
fn refusal() -> Value {
    json!({
        "type": "object",
        "description": "Present only when the call was refused (isError: true): the stable reason and its status.",
        "properties": {
            "reason": string(), "status": { "type": "integer" }, "message": string(),
            "field": string(), "right": string(), "limit": string(), "retry_after_ms": { "type": "integer", "minimum": 0 },
        },
        "required": ["reason", "status", "message"],
    })
}

/// The success keys and required keys of an operation's result.
fn success(operation: &str) -> (Value, Vec<&'static str>) {
    match operation {
        "get_manifest" => (
            json!({
                "parley": string(), "server": object(json!({ "name": string(), "version": string() }), &["name", "version"]),
                "realm": string(), "acts": array_of(json!({ "type": "object" })),
                "states": { "type": "object" }, "limits": { "type": "object" }, "profiles": { "type": "object" },
                "operations": array_of(string()), "reasons": array_of(json!({ "type": "object" })),
            }),
            vec![
                "parley",
                "server",
                "realm",
                "acts",
                "states",
                "limits",
                "profiles",
                "operations",
                "reasons",
            ],
        ),
        "whoami" => (
            json!({
                "identity": string(), "kind": { "type": "string", "enum": ["llm", "human"] },
                "rights": array_of(string()), "label": string(), "realm": string(),
            }),
            vec!["identity", "kind", "rights", "label", "realm"],
        ),
        "post" => (
            json!({ "message": message(), "thread": thread(), "event": event(), "events": array_of(event()), "claim": claim() }),
            vec!["message", "thread"],
        ),
        "get_thread" => (
            json!({ "thread": thread(), "messages": array_of(json!({ "$ref": "#/$defs/node" })) }),
            vec!["thread", "messages"],
        ),
        "list_threads" => page(thread()),
        "get_inbox" => page(object(
            json!({ "thread": thread(), "message": message() }),
            &["thread", "message"],
        )),
        "get_events" => page(event()),
        "get_claim" => (claim()["properties"].clone(), CLAIM_REQUIRED.to_vec()),
        "get_messages" => page(message()),
        "search" => page(object(
            json!({ "message": message(), "thread": thread() }),
            &["message", "thread"],
        )),
        _ => (json!({}), vec![]),
    }
}

/// The output schema of an operation.
pub(crate) fn output(operation: &str) -> Value {
    let (mut properties, required) = success(operation);
    if let Value::Object(map) = &mut properties {
        map.insert("error".into(), refusal());
    }
    let mut schema = json!({
        "type": "object",
        "properties": properties,
        "anyOf": [ { "required": required }, { "required": ["error"] } ],
    });
    if operation == "get_thread" {
        let mut node = message_properties();
        node["replies"] = array_of(json!({ "$ref": "#/$defs/node" }));
        let mut node_required = MESSAGE_REQUIRED.to_vec();
        node_required.push("replies");
        schema["$defs"] = json!({ "node": object(node, &node_required) });
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OPERATIONS;

    #[test]
    fn every_operation_has_an_object_rooted_schema() {
        for op in OPERATIONS {
            let s = output(op);
            assert_eq!(s["type"], "object", "{op}");
            let required = s["anyOf"][0]["required"].as_array().unwrap();
            assert!(!required.is_empty(), "{op}");
            for key in required {
                assert!(
                    s["properties"].get(key.as_str().unwrap()).is_some(),
                    "{op}: {key}"
                );
            }
            assert!(s["properties"]["error"].is_object());
        }
        assert!(output("get_thread")["$defs"]["node"]["properties"]["replies"].is_object());
    }
}
