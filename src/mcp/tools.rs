//! The tools: one per operation of SPEC §11, in the fixed order of
//! [`OPERATIONS`](crate::OPERATIONS), each with a description written for a model
//! that has never seen Parley, a JSON Schema for its input and one for its output.
//!
//! Input schemas are generated from the forum's manifest (its acts, their fields,
//! the states, the evidence kinds and the limits), so a tool list can never
//! advertise a kind, a field or a limit the engine does not have.

use serde_json::{json, Map, Value};

use super::schemas;

mod coordination;
mod descriptions;
mod provenance;

use descriptions::description;

/// The forum facts the schemas and descriptions are generated from.
pub(crate) struct Settings {
    /// The longest wait, when the listen profile is on.
    wait_max_ms: Option<u64>,
    realm: String,
    body_max_chars: u64,
    provenance_max_chars: u64,
    extension_max_chars: u64,
    evidence_max: u64,
    evidence_ref_max_chars: u64,
    supersedes_max: u64,
    page_max: u64,
    /// `progress_max_messages` and `echo_window`, when the guards profile is on.
    guards: Option<(u64, u64)>,
    /// The longest lease (the coordination profile).
    lease_ttl_max_s: u64,
    /// The largest artifact, in bytes (the provenance profile).
    artifact_max_bytes: u64,
}

/// What the input schemas need from the manifest.
pub(crate) struct ManifestFacts {
    limits: Settings,
    /// Every enabled kind, with its summary and its envelope fields.
    acts: Vec<(String, String, Vec<String>)>,
    states: Vec<String>,
    evidence_kinds: Vec<String>,
    dialectic: bool,
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

impl ManifestFacts {
    /// Reads the facts from a manifest (SPEC §13).
    pub(crate) fn from_manifest(manifest: &Value) -> ManifestFacts {
        let limit = |name: &str| manifest["limits"][name].as_u64().unwrap_or(0);
        let listen = manifest["profiles"]
            .get("listen")
            .is_some_and(Value::is_object);
        let limits = Settings {
            wait_max_ms: listen.then(|| limit("wait_max_ms")),
            realm: manifest["realm"].as_str().unwrap_or("ainotes").to_string(),
            body_max_chars: limit("body_max_chars"),
            provenance_max_chars: limit("provenance_max_chars"),
            extension_max_chars: limit("extension_max_chars"),
            evidence_max: limit("evidence_max"),
            evidence_ref_max_chars: limit("evidence_ref_max_chars"),
            supersedes_max: limit("supersedes_max"),
            page_max: limit("page_max"),
            guards: manifest["profiles"]
                .get("guards")
                .filter(|p| p.is_object())
                .map(|_| (limit("progress_max_messages"), limit("echo_window"))),
            lease_ttl_max_s: limit("lease_ttl_max_s"),
            artifact_max_bytes: limit("artifact_max_bytes"),
        };
        let dialectic_profile = manifest["profiles"]
            .get("dialectic")
            .filter(|p| p.is_object());
        let mut acts = Vec::new();
        let profile_acts = dialectic_profile
            .and_then(|p| p["acts"].as_array())
            .into_iter()
            .flatten();
        for act in manifest["acts"]
            .as_array()
            .into_iter()
            .flatten()
            .chain(profile_acts)
        {
            let Some(kind) = act["kind"].as_str() else {
                continue;
            };
            let summary = act["summary"].as_str().unwrap_or_default().to_string();
            let mut fields = strings(act["fields"].get("required"));
            fields.extend(strings(act["fields"].get("optional")));
            acts.push((kind.to_string(), summary, fields));
        }
        let mut states = strings(manifest["states"].get("forward"));
        states.extend(strings(manifest["states"].get("side")));
        let evidence_kinds = dialectic_profile
            .map(|p| strings(p.get("evidence_kinds")))
            .unwrap_or_default();
        ManifestFacts {
            limits,
            acts,
            states,
            evidence_kinds,
            dialectic: dialectic_profile.is_some(),
        }
    }

    fn id(&self, what: &str, prefix: &str) -> Value {
        // Declared as a string only: a type list (`["string", "integer"]`) is valid JSON
        // Schema, but several tool-calling frameworks reject it. The engine still
        // accepts the plain number.
        json!({
            "type": "string",
            "description": format!("The {what}'s id: \"{prefix}_<n>\" (the plain number <n> is accepted too)."),
            "pattern": format!("^({prefix}_)?[1-9][0-9]*$"),
        })
    }

    fn cursor(&self) -> Value {
        json!({ "type": "string", "description": "A `cursor` returned by an earlier call of this operation; only what came after it is returned." })
    }

    fn limit(&self) -> Value {
        json!({ "type": "integer", "minimum": 1, "maximum": self.limits.page_max, "description": "Most items to return." })
    }

    fn wait(&self) -> Option<Value> {
        self.limits.wait_max_ms.map(|max| {
            json!({
                "type": "integer", "minimum": 0, "maximum": max,
                "description": "Milliseconds to wait for a first item when there is none yet; 0 or absent returns at once.",
            })
        })
    }

    fn extension(&self) -> Value {
        json!({
            "type": "string",
            "pattern": format!("^[A-Za-z0-9._-]{{1,{}}}$", self.limits.extension_max_chars),
            "description": "Names a sub-agent sharing this token; rights stay with the token.",
        })
    }

    fn state(&self, description: &str) -> Value {
        json!({ "type": "string", "enum": self.states, "description": description })
    }

    /// The schema of one envelope field (SPEC §3), or `None` for a field this
    /// module does not know (a unit test keeps that from happening).
    fn field(&self, name: &str) -> Option<Value> {
        let l = &self.limits;
        Some(match name {
            "parley" => {
                json!({ "type": "string", "enum": ["1"], "description": "The protocol version; \"1\" if given." })
            }
            "thread" => self.id("thread", "th"),
            "parent" => self.id("message", "msg"),
            "claim" => self.id("claim", "cl"),
            "from" => json!({
                "type": "object",
                "properties": { "extension": self.extension() },
                "additionalProperties": false,
                "description": "Optional: `{\"extension\": \"worker-2\"}` when a sub-agent writes. Your identity is set by the server, never here.",
            }),
            "body" => json!({
                "type": "string", "minLength": 1, "maxLength": l.body_max_chars,
                "description": format!("The text: at least one non-space character, at most {} characters.", l.body_max_chars),
            }),
            "provenance" => json!({
                "type": "object",
                "properties": {
                    "model": { "type": "string", "maxLength": l.provenance_max_chars },
                    "client": { "type": "string", "maxLength": l.provenance_max_chars },
                },
                "additionalProperties": false,
                "description": "Optional: which model and client wrote this.",
            }),
            "to" => json!({
                "type": "string",
                "description": format!("An identity the forum knows, such as \"{}:bob\" or \"human:ann\": who is due to reply.", l.realm),
            }),
            "state" => self.state("For `mark`: the state to set."),
            "if_state" => self.state("Optional, for `decide`, `mark` and `reopen`: the state you saw the thread in. If it is in another state now, nothing is written and the refusal (`state_changed`) carries the current `state`: look again before you act."),
            "evidence" => json!({
                "type": "array",
                "maxItems": l.evidence_max,
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": { "type": "string", "enum": self.evidence_kinds },
                        "ref": { "type": "string", "minLength": 1, "maxLength": l.evidence_ref_max_chars,
                                 "description": "A pointer: an absolute URL, `<algorithm>:<hex>` for a hash, 7-64 hex digits for a commit, …" },
                        "note": { "type": "string", "maxLength": l.evidence_ref_max_chars },
                    },
                    "required": ["kind", "ref"],
                    "additionalProperties": false,
                },
                "description": "Evidence pointers (never opinions).",
            }),
            "supersedes" => json!({
                "type": "array",
                "maxItems": l.supersedes_max,
                "items": self.id("claim", "cl"),
                "description": "For `assert`: the claims this new claim replaces.",
            }),
            "idempotency_key" => json!({
                "type": "string", "pattern": "^[A-Za-z0-9._:-]{1,128}$",
                "description": "Optional: a key of your choosing, new for each post. Send the same post again with the same key (after a time-out, say) and it is not posted twice: you get the first one back, with `replayed: true`.",
            }),
            "valid_until" => json!({
                "type": "string", "format": "date-time",
                "description": "For `assert`: when the claim expires, RFC 3339 in UTC, e.g. 2026-12-31T00:00:00.000Z.",
            }),
            _ => return None,
        })
    }

    fn envelope(&self) -> Value {
        let kinds: Vec<&str> = self.acts.iter().map(|(k, _, _)| k.as_str()).collect();
        let kind_help: Vec<String> = self
            .acts
            .iter()
            .map(|(k, s, _)| format!("{k}: {s}"))
            .collect();
        let mut properties = Map::new();
        properties.insert(
            "kind".into(),
            json!({ "type": "string", "enum": kinds, "description": kind_help.join("\n") }),
        );
        let mut names: Vec<&str> = vec!["parley"];
        for (_, _, fields) in &self.acts {
            for f in fields {
                if !names.contains(&f.as_str()) {
                    names.push(f);
                }
            }
        }
        for name in names {
            let schema = self
                .field(name)
                .unwrap_or_else(|| json!({ "description": "See get_manifest." }));
            properties.insert(name.to_string(), schema);
        }
        json!({ "type": "object", "properties": properties, "required": ["kind", "body"], "additionalProperties": false })
    }

    fn input_schema(&self, operation: &str) -> Value {
        let object = |properties: Value, required: &[&str]| json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false });
        // The reads of the listen profile also take `wait_ms`.
        let waiting = |mut properties: Value| {
            if let (Some(wait), Value::Object(map)) = (self.wait(), &mut properties) {
                map.insert("wait_ms".into(), wait);
            }
            object(properties, &[])
        };
        match operation {
            "post" => self.envelope(),
            "get_thread" => object(json!({ "thread": self.id("thread", "th") }), &["thread"]),
            "list_threads" => waiting(
                json!({ "state": self.state("Only threads in this state."), "since": self.cursor(), "limit": self.limit() }),
            ),
            "get_inbox" => waiting(
                json!({ "since": self.cursor(), "extension": self.extension(), "limit": self.limit() }),
            ),
            "get_events" => waiting(
                json!({ "thread": self.id("thread", "th"), "since": self.cursor(), "limit": self.limit() }),
            ),
            "get_messages" => waiting(
                json!({ "thread": self.id("thread", "th"), "since": self.cursor(), "limit": self.limit() }),
            ),
            "get_claim" => object(json!({ "claim": self.id("claim", "cl") }), &["claim"]),
            "search" => object(
                json!({
                    "q": { "type": "string", "minLength": 1, "maxLength": 200,
                           "description": "1 to 16 words; a message matches when its body holds every one (case does not matter)." },
                    "thread": self.id("thread", "th"), "since": self.cursor(), "limit": self.limit(),
                }),
                &["q"],
            ),
            "get_digest" => object(json!({ "thread": self.id("thread", "th") }), &["thread"]),
            "export_claim" => object(json!({ "claim": self.id("claim", "cl") }), &["claim"]),
            "import_claim" => object(
                json!({ "bundle": provenance_bundle(), "thread": self.id("thread", "th") }),
                &["bundle"],
            ),
            // `properties` even when empty: some clients (smolagents through
            // mcpadapt) read it without checking that it is there.
            other => self
                .coordination_input(other)
                .or_else(|| self.provenance_input(other))
                .unwrap_or_else(|| object(json!({}), &[])),
        }
    }
}

/// `import_claim`'s `bundle`: a DSSE envelope as `export_claim` gives it, passed
/// on whole (an object, not its text).
fn provenance_bundle() -> Value {
    json!({
        "type": "object",
        "description": "The DSSE envelope that export_claim returned as `bundle`, unchanged.",
        "properties": {
            "payloadType": { "type": "string" },
            "payload": { "type": "string" },
            "signatures": { "type": "array", "items": {
                "type": "object",
                "properties": { "keyid": { "type": "string" }, "sig": { "type": "string" } },
                "required": ["keyid", "sig"],
            } },
        },
        "required": ["payloadType", "payload", "signatures"],
    })
}

/// Whether an operation only reads.
pub(crate) fn read_only(operation: &str) -> bool {
    !matches!(
        operation,
        "post" | "set_presence" | "lease" | "release" | "put_artifact" | "import_claim"
    )
}

fn title(operation: &str) -> &'static str {
    match operation {
        "get_manifest" => "Read the forum's manifest",
        "whoami" => "Show who you are",
        "post" => "Write a message",
        "get_thread" => "Read a thread",
        "list_threads" => "List threads",
        "get_inbox" => "List threads waiting for you",
        "get_events" => "List state changes",
        "get_claim" => "Read a claim",
        "search" => "Search messages by words",
        "get_messages" => "Read messages as a feed",
        "set_presence" => "Say what you are doing",
        "get_presence" => "See who is working, idle or away",
        "lease" => "Claim a resource (a file, a branch, a job)",
        "release" => "Release a lease",
        "get_leases" => "List active leases",
        "get_digest" => "Read a thread's digest",
        "put_artifact" => "Store an artifact (bytes that evidence can point at)",
        "get_artifact" => "Read an artifact",
        "export_claim" => "Export a claim as a signed bundle",
        "import_claim" => "Import a signed claim of another realm",
        _ => "",
    }
}

/// The tool list for a forum whose manifest is `manifest`: every operation of
/// `operations`, in order, except `get_claim` when the dialectic profile is off.
pub(crate) fn list(manifest: &Value, operations: &[&str]) -> Vec<Value> {
    let facts = ManifestFacts::from_manifest(manifest);
    operations
        .iter()
        .filter(|op| facts.dialectic || **op != "get_claim")
        .map(|op| {
            let read_only = read_only(op);
            json!({
                "name": op,
                "title": title(op),
                "description": description(op, facts.dialectic, &facts.limits),
                "inputSchema": facts.input_schema(op),
                "outputSchema": schemas::output(op),
                "annotations": {
                    "title": title(op),
                    "readOnlyHint": read_only,
                    "destructiveHint": false,
                    "idempotentHint": read_only,
                    "openWorldHint": false,
                },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::acts::ACTS;
    use crate::{Config, Forum, OPERATIONS};

    fn manifest(settings: Value) -> Value {
        Forum::in_memory(Config::from_json(&settings).unwrap())
            .unwrap()
            .manifest()
    }

    #[test]
    fn every_manifest_field_has_a_schema() {
        let facts = ManifestFacts::from_manifest(&manifest(json!({})));
        assert_eq!(facts.acts.len(), ACTS.len());
        for (kind, _, fields) in &facts.acts {
            for f in fields {
                assert!(facts.field(f).is_some(), "{kind}: field {f} has no schema");
            }
        }
        for spec in ACTS {
            for f in spec.required.iter().chain(spec.optional) {
                assert!(
                    facts.field(f).is_some(),
                    "{}: field {f} has no schema",
                    spec.kind
                );
            }
        }
        assert_eq!(facts.states.len(), 7);
        assert_eq!(facts.evidence_kinds.len(), 8);
    }

    #[test]
    fn the_envelope_schema_follows_the_forum() {
        let tools = list(
            &manifest(json!({"limits": {"body_max_chars": 77}})),
            &OPERATIONS,
        );
        let post = tools.iter().find(|t| t["name"] == "post").unwrap();
        let schema = &post["inputSchema"];
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["properties"]["body"]["maxLength"], 77);
        let kinds = schema["properties"]["kind"]["enum"].as_array().unwrap();
        let expected: Vec<&str> = ACTS.iter().map(|a| a.kind).collect();
        assert_eq!(
            kinds,
            &expected.iter().map(|k| json!(k)).collect::<Vec<_>>()
        );
        assert!(schema["properties"]["evidence"].is_object());
        assert!(post["description"]
            .as_str()
            .unwrap()
            .contains("77 characters"));

        let off = list(&manifest(json!({"profiles": []})), &OPERATIONS);
        assert!(off.iter().all(|t| t["name"] != "get_claim"));
        let post = off.iter().find(|t| t["name"] == "post").unwrap();
        let kinds = post["inputSchema"]["properties"]["kind"]["enum"]
            .as_array()
            .unwrap();
        assert_eq!(kinds.len(), 9);
        assert!(post["inputSchema"]["properties"].get("evidence").is_none());
        assert!(post["inputSchema"]["properties"].get("claim").is_none());
    }

    #[test]
    fn every_input_schema_declares_one_type() {
        fn walk(tool: &Value, schema: &Value) {
            assert!(!schema["type"].is_array(), "{}: {schema}", tool["name"]);
            for sub in schema["properties"]
                .as_object()
                .into_iter()
                .flat_map(|p| p.values())
            {
                walk(tool, sub);
            }
            if schema["items"].is_object() {
                walk(tool, &schema["items"]);
            }
        }
        for tool in list(&manifest(json!({})), &OPERATIONS) {
            walk(&tool, &tool["inputSchema"]);
        }
    }

    /// What agent frameworks' MCP clients assume of a tool: smolagents (through
    /// mcpadapt) reads `inputSchema.properties` unchecked, and LlamaIndex's
    /// `to_openai_tool()` refuses a description over 1,024 characters.
    #[test]
    fn every_tool_fits_the_frameworks_clients() {
        let settings = json!({"limits": {"body_max_chars": 1_000_000, "wait_max_ms": 1_000_000,
            "progress_max_messages": 1_000_000, "echo_window": 1_000_000},
            "realm": "a-realm-name-of-forty-characters-long-xx"});
        for tool in list(&manifest(settings), &OPERATIONS) {
            let name = &tool["name"];
            assert!(tool["inputSchema"]["properties"].is_object(), "{name}");
            let description = tool["description"].as_str().unwrap();
            assert!(
                description.chars().count() <= 1024,
                "{name}: {} characters: {description}",
                description.chars().count()
            );
        }
    }

    #[test]
    fn the_guards_rules_are_described_only_when_the_profile_is_on() {
        let post = |settings: Value| {
            list(&manifest(settings), &OPERATIONS)
                .into_iter()
                .find(|t| t["name"] == "post")
                .unwrap()["description"]
                .as_str()
                .unwrap()
                .to_string()
        };
        let on = post(json!({"limits": {"progress_max_messages": 5}}));
        assert!(on.contains("after 5 agent messages"), "{on}");
        let off = post(json!({"guards": false}));
        assert!(!off.contains("no_progress") && !off.contains("echoed_body"));
    }

    #[test]
    fn descriptions_name_the_key_rules() {
        let tools = list(&manifest(json!({})), &OPERATIONS);
        let post = tools.iter().find(|t| t["name"] == "post").unwrap()["description"]
            .as_str()
            .unwrap()
            .to_string();
        for rule in [
            "self_reply",
            "repeated_body",
            "echoed_body",
            "no_progress",
            "awaiting",
            "lock",
            "get_manifest",
            "thread_closed",
        ] {
            assert!(post.contains(rule), "post description lacks {rule}");
        }
        for tool in &tools {
            assert!(
                tool["description"].as_str().unwrap().len() > 80,
                "{}",
                tool["name"]
            );
        }
    }
}
