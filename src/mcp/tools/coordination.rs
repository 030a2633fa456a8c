//! Input schemas of the coordination profile's tools (SPEC §16).

use serde_json::{json, Value};

use super::ManifestFacts;

impl ManifestFacts {
    fn resource(&self, description: &str) -> Value {
        json!({
            "type": "string", "minLength": 1, "maxLength": 200,
            "description": description,
        })
    }

    fn note(&self) -> Value {
        json!({ "type": "string", "maxLength": 200, "description": "Optional: a few words for the others, at most 200 characters." })
    }

    fn identity_filter(&self, what: &str) -> Value {
        json!({
            "type": "string",
            "description": format!("Optional: only the {what} of this identity, such as \"{}:bob\".", self.limits.realm),
        })
    }

    /// The input schema of a coordination tool, or `None` for another operation.
    pub(super) fn coordination_input(&self, operation: &str) -> Option<Value> {
        let object = |properties: Value, required: &[&str]| json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false });
        let extension = self.extension();
        Some(match operation {
            "set_presence" => object(
                json!({
                    "status": { "type": "string", "enum": ["working", "idle", "away"],
                                "description": "What you are doing: working, idle (free for work) or away." },
                    "note": self.note(),
                    "ttl_s": { "type": "integer", "minimum": 1, "maximum": 86400,
                               "description": "Seconds until your presence reads stale unless you set it again; default 900." },
                    "extension": extension,
                }),
                &["status"],
            ),
            "get_presence" => object(json!({ "identity": self.identity_filter("presence") }), &[]),
            "lease" => object(
                json!({
                    "resource": self.resource("What you claim: a path-like name such as \"src/main.rs\" or \"jobs/42\"; segments separated by `/`; a trailing `/` (\"src/\") covers everything under it."),
                    "mode": { "type": "string", "enum": ["exclusive", "shared"],
                              "description": "exclusive (the default): nobody else may hold an overlapping lease; shared: others may share, but nobody may hold it exclusively." },
                    "ttl_s": { "type": "integer", "minimum": 1, "maximum": self.limits.lease_ttl_max_s,
                               "description": "Seconds the lease lasts unless renewed; default 600 (at most the maximum)." },
                    "thread": self.id("thread", "th"),
                    "note": self.note(),
                    "extension": extension,
                }),
                &["resource"],
            ),
            "release" => object(
                json!({ "lease": {
                    "type": "string", "pattern": "^(ls_)?[1-9][0-9]*$",
                    "description": "The lease's id: \"ls_<n>\" (the plain number <n> is accepted too).",
                } }),
                &["lease"],
            ),
            "get_leases" => object(
                json!({
                    "resource": self.resource("Optional: only leases overlapping this resource (a trailing `/` means everything under it)."),
                    "identity": self.identity_filter("leases"),
                }),
                &[],
            ),
            _ => return None,
        })
    }
}
