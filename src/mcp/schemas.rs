//! Output schemas of the tools: the JSON shapes of SPEC §8, §10, §11, §13 and §14.
//!
//! Each is rooted in an object and exact: every key the engine returns is described
//! with its type, and the keys it always returns are required. `additionalProperties`
//! stays open so that a later minor version may add keys.
//!
//! A refused call carries `{"error": <refusal>}` as its structured content, so every
//! schema admits that shape too: the root lists the success keys and `error`, and
//! `anyOf` requires the success keys or `error`, in that order, so a success is
//! decided by the first branch.
//!
//! A client checks every result against these schemas. The MCP Python SDK 2.x
//! compiles a validator once per schema, so its cost grows with the result; 1.x
//! checks the schema itself against the meta-schema on every call, so its cost
//! grows with the number of subschemas. The shapes are chosen for both (figures in
//! `docs/decisions/0011-mcp-output-schemas.md`):
//! - A shape used more than once in a schema is written once under `$defs` and
//!   referenced as `#/$defs/<name>`; a shape used once is written in place.
//! - Except the author pair (`{identity, extension}`) and the nullable keys, which
//!   are in every message and thread summary: a `$ref` is followed for each item of
//!   a page, and following one costs python-jsonschema several times what checking
//!   a key does, so these are written in place wherever they occur.
//! - A nullable key is `anyOf` a type and `null` rather than a type list
//!   (`["string", "null"]`), which clients mapping schemas onto a one-type dialect
//!   reject; the branch a key usually takes comes first.
//! - No `$schema`: 2020-12 is the default dialect of MCP and of the SDKs, while
//!   clients built on Ajv's default (draft-07) class refuse a schema declaring it.
//!
//! `tests/mcp_schemas.rs` checks every schema against the 2020-12 meta-schema, and
//! every result of the conformance transcripts against its tool's schema, closed
//! (every object's `additionalProperties` set to `false`) so that an undescribed
//! key fails.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

mod compact;
mod coordination;
mod provenance;

pub use compact::OutputSchemas;

fn string() -> Value {
    json!({ "type": "string" })
}

fn boolean() -> Value {
    json!({ "type": "boolean" })
}

fn integer() -> Value {
    json!({ "type": "integer" })
}

fn strings() -> Value {
    array_of(string())
}

/// One of these strings. The `enum` alone says the type: a second keyword would
/// cost every check of the key and describe nothing more.
fn one_of_strings(values: &[&str]) -> Value {
    json!({ "enum": values })
}

/// `schema` or `null`, for a key that is usually `null`.
fn null_or(schema: Value) -> Value {
    json!({ "anyOf": [ { "type": "null" }, schema ] })
}

/// `schema` or `null`, for a key that is usually set.
fn or_null(schema: Value) -> Value {
    json!({ "anyOf": [ schema, { "type": "null" } ] })
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required })
}

fn array_of(items: Value) -> Value {
    json!({ "type": "array", "items": items })
}

/// `{ "identity", "extension" }`: an author. Always in place (see the module docs).
fn author() -> Value {
    object(
        json!({ "identity": string(), "extension": null_or(string()) }),
        &["identity", "extension"],
    )
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

const THREAD_REQUIRED: [&str; 12] = [
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
];

const EVENT_REQUIRED: [&str; 10] = [
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
];

const CLAIM_REQUIRED: [&str; 17] = [
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
    "imported",
];

/// The shapes a schema may share through `$defs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Shape {
    Message,
    /// A message of `get_thread`'s tree: a message with its replies.
    Node,
    Thread,
    Event,
    Claim,
    /// An attestation or a verification; only attestations carry evidence.
    Support,
    /// An act of the manifest (SPEC §13).
    Act,
    /// A list of evidence pointers (SPEC §10).
    Evidence,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::Message => "message",
            Shape::Node => "node",
            Shape::Thread => "thread",
            Shape::Event => "event",
            Shape::Claim => "claim",
            Shape::Support => "support",
            Shape::Act => "act",
            Shape::Evidence => "evidence",
        }
    }
}

/// The map of an object literal.
fn map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// One schema document being built: the shapes it uses, and how often.
#[derive(Default)]
struct Doc {
    defs: BTreeMap<&'static str, Value>,
    uses: BTreeMap<&'static str, usize>,
}

impl Doc {
    /// A use of the shape: a `$ref` for now (call it once per place, never clone the
    /// reference, so that the count is right), written in place by
    /// [`Doc::finish`] when the document uses it only once. A shape's body is built
    /// at its first use, so the uses inside it count once, as often as the body
    /// appears in the finished document; a shape may use itself (a thread's node).
    fn shape(&mut self, shape: Shape) -> Value {
        let name = shape.name();
        *self.uses.entry(name).or_default() += 1;
        if !self.defs.contains_key(name) {
            self.defs.insert(name, Value::Null);
            let body = self.body(shape);
            self.defs.insert(name, body);
        }
        json!({ "$ref": format!("#/$defs/{name}") })
    }

    fn body(&mut self, shape: Shape) -> Value {
        match shape {
            Shape::Message => object(Value::Object(self.message_properties()), &MESSAGE_REQUIRED),
            Shape::Node => {
                let mut properties = self.message_properties();
                // The replies are not a `$ref` to this node: clients that expand a
                // schema before handing it to a model (smolagents' structured
                // output) never finish a recursive one. The top level is typed;
                // deeper levels are described.
                let reply = json!({ "type": "object", "description": "A reply: a message of the same shape, with its own `replies`." });
                properties.insert("replies".into(), array_of(reply));
                let mut required = MESSAGE_REQUIRED.to_vec();
                required.push("replies");
                object(Value::Object(properties), &required)
            }
            Shape::Thread => object(Self::thread_properties(), &THREAD_REQUIRED),
            Shape::Event => object(Self::event_properties(), &EVENT_REQUIRED),
            Shape::Claim => object(Value::Object(self.claim_properties()), &CLAIM_REQUIRED),
            Shape::Support => object(
                json!({ "message": string(), "identity": string(), "at": string(), "evidence": self.shape(Shape::Evidence) }),
                &["message", "identity", "at"],
            ),
            Shape::Evidence => array_of(object(
                json!({ "kind": string(), "ref": string(), "note": string() }),
                &["kind", "ref"],
            )),
            Shape::Act => object(
                json!({
                    "kind": string(), "summary": string(), "needs": string(),
                    "expects_reply": boolean(), "turn": string(),
                    "fields": object(json!({ "required": strings(), "optional": strings() }), &["required", "optional"]),
                }),
                &["kind", "summary", "needs", "expects_reply", "fields"],
            ),
        }
    }

    /// A message (SPEC §8.1), without `replies`.
    fn message_properties(&mut self) -> Map<String, Value> {
        map(json!({
            "id": string(), "parley": string(), "kind": string(), "thread": string(),
            "parent": or_null(string()), "from": author(),
            "author_kind": one_of_strings(&["llm", "human"]),
            "body": string(), "created_at": string(),
            "to": string(), "state": string(),
            "provenance": object(json!({ "model": string(), "client": string() }), &[]),
            "claim": string(), "counter_claim": string(), "evidence": self.shape(Shape::Evidence),
            "supersedes": strings(), "valid_until": string(),
        }))
    }

    /// A thread summary (SPEC §8.2).
    fn thread_properties() -> Value {
        json!({
            "id": string(), "topic": string(), "creator": author(), "state": string(),
            "state_origin": one_of_strings(&["user", "llm"]),
            "state_confirmed_at": null_or(string()), "state_label": null_or(string()),
            "locked": boolean(),
            "awaiting": or_null(object(
                json!({ "identity": string(), "extension": null_or(string()), "message": string() }),
                &["identity", "extension", "message"],
            )),
            "message_count": { "type": "integer", "minimum": 1 },
            // Only with the guards profile on (SPEC §15), so not required.
            "since_progress": { "type": "integer", "minimum": 0 },
            "created_at": string(), "updated_at": string(),
        })
    }

    /// An event (SPEC §8.4): the state keys for a transition or a confirmation, the
    /// claim keys for a claim's change of status.
    fn event_properties() -> Value {
        json!({
            "id": string(), "type": one_of_strings(&["transition", "confirmation", "claim"]),
            "thread": string(), "message": string(),
            "from_state": string(), "to_state": string(),
            "claim": string(), "from_status": string(), "to_status": string(),
            "origin": one_of_strings(&["user", "llm"]),
            "identity": string(), "extension": null_or(string()), "label": null_or(string()),
            "confirmed": boolean(), "at": string(),
        })
    }

    /// A claim (SPEC §10).
    fn claim_properties(&mut self) -> Map<String, Value> {
        map(json!({
            "id": string(), "message": string(), "thread": string(), "author": author(), "text": string(),
            "status": one_of_strings(&["unverified", "supported", "verified", "refuted", "superseded"]),
            "evidence": self.shape(Shape::Evidence),
            "attestations": array_of(self.shape(Shape::Support)),
            "verifications": array_of(self.shape(Shape::Support)),
            "refutations": array_of(object(
                json!({ "claim": string(), "message": string(), "status": string() }),
                &["claim", "message", "status"],
            )),
            "refutes": null_or(string()),
            "supersedes": strings(),
            "superseded_by": null_or(string()),
            "valid_until": null_or(string()),
            "expired": boolean(),
            "created_at": string(),
            // With the provenance profile on (SPEC §18.2).
            "quorum": provenance::quorum(),
            "imported": null_or(provenance::imported()),
        }))
    }

    /// A page of a listing: `{ "items": [...], "cursor", "more" }`.
    fn page(item: Value) -> (Value, Vec<&'static str>) {
        (
            json!({ "items": array_of(item), "cursor": string(), "more": boolean() }),
            vec!["items", "cursor", "more"],
        )
    }

    /// The success keys and required keys of an operation's result.
    fn success(&mut self, operation: &str) -> (Value, Vec<&'static str>) {
        match operation {
            "get_manifest" => (
                json!({
                    "parley": string(),
                    "server": object(json!({ "name": string(), "version": string() }), &["name", "version"]),
                    "realm": string(),
                    "realm_key": { "type": "string", "pattern": "^ed25519:[A-Za-z0-9_-]{43}$" },
                    "acts": array_of(self.shape(Shape::Act)),
                    "states": object(json!({ "forward": strings(), "side": strings() }), &["forward", "side"]),
                    "limits": { "type": "object", "additionalProperties": integer() },
                    "profiles": object(json!({
                        "dialectic": object(
                            json!({ "acts": array_of(self.shape(Shape::Act)), "claim_states": strings(), "evidence_kinds": strings() }),
                            &["acts", "claim_states", "evidence_kinds"],
                        ),
                        "listen": object(json!({ "operations": strings() }), &["operations"]),
                        "guards": object(json!({ "limits": strings() }), &["limits"]),
                        "coordination": object(json!({ "operations": strings(), "limits": strings() }), &["operations", "limits"]),
                        "provenance": object(json!({ "operations": strings(), "limits": strings() }), &["operations", "limits"]),
                    }), &[]),
                    "operations": strings(),
                    "reasons": array_of(object(
                        json!({ "reason": string(), "status": integer(), "summary": string() }),
                        &["reason", "status", "summary"],
                    )),
                }),
                vec![
                    "parley",
                    "server",
                    "realm",
                    "realm_key",
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
                    "identity": string(), "kind": one_of_strings(&["llm", "human"]),
                    "rights": strings(), "label": string(), "realm": string(),
                }),
                vec!["identity", "kind", "rights", "label", "realm"],
            ),
            // `import_claim` returns what `post` returns (SPEC §18.3).
            "post" | "import_claim" => (
                json!({
                    "message": self.shape(Shape::Message), "thread": self.shape(Shape::Thread),
                    "event": self.shape(Shape::Event), "events": array_of(self.shape(Shape::Event)),
                    "claim": self.shape(Shape::Claim),
                    "replayed": { "const": true },
                }),
                vec!["message", "thread"],
            ),
            "get_thread" => (
                json!({ "thread": self.shape(Shape::Thread), "messages": array_of(self.shape(Shape::Node)) }),
                vec!["thread", "messages"],
            ),
            "list_threads" => Self::page(self.shape(Shape::Thread)),
            "get_inbox" => Self::page(object(
                json!({ "thread": self.shape(Shape::Thread), "message": self.shape(Shape::Message) }),
                &["thread", "message"],
            )),
            "get_events" => Self::page(self.shape(Shape::Event)),
            "get_claim" => (
                Value::Object(self.claim_properties()),
                CLAIM_REQUIRED.to_vec(),
            ),
            "get_messages" => Self::page(self.shape(Shape::Message)),
            "search" => Self::page(object(
                json!({ "message": self.shape(Shape::Message), "thread": self.shape(Shape::Thread) }),
                &["message", "thread"],
            )),
            // Messages without replies: the digest's schema does not recurse.
            "get_digest" => (
                json!({
                    "thread": self.shape(Shape::Thread),
                    "root": self.shape(Shape::Message),
                    "decision": null_or(self.shape(Shape::Message)),
                    "open_questions": array_of(self.shape(Shape::Message)),
                    "claims": array_of(object(
                        json!({
                            "id": string(),
                            "status": one_of_strings(&crate::protocol::claim::CLAIM_STATES),
                            "text": string(),
                        }),
                        &["id", "status", "text"],
                    )),
                    "recent": array_of(self.shape(Shape::Message)),
                    "omitted": { "type": "integer", "minimum": 0 },
                }),
                vec![
                    "thread",
                    "root",
                    "decision",
                    "open_questions",
                    "claims",
                    "recent",
                    "omitted",
                ],
            ),
            "export_claim" => (json!({ "bundle": provenance::bundle() }), vec!["bundle"]),
            other => coordination::success(other)
                .or_else(|| provenance::success(other))
                .unwrap_or_else(|| (json!({}), vec![])),
        }
    }

    /// The document: the shapes used once written in place, the others under `$defs`.
    fn finish(self, mut root: Value) -> Value {
        let shared: BTreeSet<&str> = self
            .uses
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(name, _)| *name)
            .collect();
        let place = |value: &mut Value| in_place(value, &self.defs, &shared);
        place(&mut root);
        if !shared.is_empty() {
            let mut defs = Map::new();
            for name in &shared {
                let mut body = self.defs[name].clone();
                place(&mut body);
                defs.insert((*name).to_string(), body);
            }
            root["$defs"] = Value::Object(defs);
        }
        root
    }
}

/// Replaces, in `value`, every `$ref` to a shape not in `shared` by its body.
fn in_place(value: &mut Value, defs: &BTreeMap<&'static str, Value>, shared: &BTreeSet<&str>) {
    match value {
        Value::Object(map) => {
            let target = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .filter(|name| !shared.contains(name))
                .and_then(|name| defs.get(name));
            if let Some(body) = target {
                *value = body.clone();
                in_place(value, defs, shared);
                return;
            }
            for sub in map.values_mut() {
                in_place(sub, defs, shared);
            }
        }
        Value::Array(items) => {
            for sub in items {
                in_place(sub, defs, shared);
            }
        }
        _ => {}
    }
}

/// The names of the states (SPEC §6), forward line first.
fn state_names() -> Vec<&'static str> {
    use crate::protocol::state::State;
    State::FORWARD
        .into_iter()
        .chain(State::SIDE)
        .map(State::as_str)
        .collect()
}

/// The refusal carried by a refused call (SPEC §12).
fn refusal() -> Value {
    json!({
        "type": "object",
        "description": "Present only when the call was refused (isError: true): the stable reason and its status.",
        "properties": {
            "reason": string(), "status": integer(), "message": string(),
            "field": string(), "right": string(), "limit": string(),
            "retry_after_ms": { "type": "integer", "minimum": 0 },
            // The thread's state now, for `state_changed` (SPEC §14.5).
            "state": one_of_strings(&state_names()),
            // The conflicting leases, for `lease_conflict` (SPEC §16.2).
            "leases": array_of(coordination::lease()),
        },
        "required": ["reason", "status", "message"],
    })
}

/// The output schema of an operation.
pub(crate) fn output(operation: &str) -> Value {
    let mut doc = Doc::default();
    let (mut properties, required) = doc.success(operation);
    if let Value::Object(map) = &mut properties {
        map.insert("error".into(), refusal());
    }
    let root = json!({
        "type": "object",
        "properties": properties,
        "anyOf": [ { "required": required }, { "required": ["error"] } ],
    });
    doc.finish(root)
}

/// Makes a tool of `tools/list`, listed with its exact `outputSchema`, say what
/// `mode` says of its result: nothing, the compact schema, or the exact one.
pub(crate) fn serve(tool: &mut Value, mode: OutputSchemas) {
    let Value::Object(tool) = tool else { return };
    match mode {
        OutputSchemas::None => {
            tool.remove("outputSchema");
        }
        OutputSchemas::Compact => {
            if let Some(schema) = tool.get_mut("outputSchema") {
                *schema = compact::compact(schema);
            }
        }
        OutputSchemas::Exact => {}
    }
}

#[cfg(test)]
mod tests;
