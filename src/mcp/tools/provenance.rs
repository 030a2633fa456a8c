//! Input schemas of the provenance profile's tools (SPEC §18).

use serde_json::{json, Value};

use super::ManifestFacts;

impl ManifestFacts {
    /// The input schema of a provenance tool, or `None` for another operation.
    pub(super) fn provenance_input(&self, operation: &str) -> Option<Value> {
        let object = |properties: Value, required: &[&str]| json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false });
        let max = self.limits.artifact_max_bytes;
        Some(match operation {
            "put_artifact" => object(
                json!({
                    "content_base64": {
                        "type": "string",
                        // 4 characters per 3 bytes, padded.
                        "maxLength": max.div_ceil(3) * 4,
                        "pattern": "^[A-Za-z0-9+/]*={0,2}$",
                        "description": format!("The bytes, base64-encoded with the standard alphabet and `=` padding (no line breaks): at most {max} bytes once decoded."),
                    },
                    "media_type": {
                        "type": "string", "minLength": 1, "maxLength": 100,
                        "description": "Optional: what the bytes are, such as \"text/plain\" or \"application/json\"; default application/octet-stream.",
                    },
                }),
                &["content_base64"],
            ),
            "get_artifact" => object(
                json!({ "ref": {
                    "type": "string", "pattern": "^sha256:[0-9a-f]{64}$",
                    "description": "The artifact's ref, `sha256:` and 64 lowercase hex digits, as put_artifact returned it or as evidence names it.",
                } }),
                &["ref"],
            ),
            _ => return None,
        })
    }
}
