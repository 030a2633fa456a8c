//! Evidence pointers of the dialectic profile (SPEC §10).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kinds of evidence, in manifest order.
pub const EVIDENCE_KINDS: [&str; 8] = [
    "url",
    "hash",
    "artifact",
    "commit",
    "log",
    "reproducer",
    "note",
    "other",
];

/// One evidence item: a pointer, never an opinion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// One of [`EVIDENCE_KINDS`].
    pub kind: String,
    /// What it points at.
    #[serde(rename = "ref")]
    pub reference: String,
    /// An optional remark.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub note: Option<String>,
}

fn is_url(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !s.chars().any(char::is_whitespace)
}

fn is_hash(s: &str) -> bool {
    let Some((algo, hex)) = s.split_once(':') else {
        return false;
    };
    !algo.is_empty()
        && algo
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        && !hex.is_empty()
        && hex.bytes().all(|c| c.is_ascii_hexdigit())
}

fn is_commit(s: &str) -> bool {
    (7..=64).contains(&s.len()) && s.bytes().all(|c| c.is_ascii_hexdigit())
}

/// Reads one evidence item; `Err` names what is wrong.
pub fn parse(value: &Value, ref_max: usize) -> Result<Evidence, String> {
    let obj = value
        .as_object()
        .ok_or("an evidence item must be an object")?;
    for key in obj.keys() {
        if !matches!(key.as_str(), "kind" | "ref" | "note") {
            return Err(format!("unknown field `{key}` in an evidence item"));
        }
    }
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .ok_or("evidence needs a string `kind`")?;
    if !EVIDENCE_KINDS.contains(&kind) {
        return Err(format!(
            "evidence kind `{kind}` is not one of {}",
            EVIDENCE_KINDS.join(", ")
        ));
    }
    let reference = obj
        .get("ref")
        .and_then(Value::as_str)
        .ok_or("evidence needs a string `ref`")?;
    if reference.trim().is_empty() {
        return Err("evidence `ref` must not be empty".into());
    }
    if reference.chars().count() > ref_max {
        return Err(format!(
            "evidence `ref` is longer than {ref_max} characters"
        ));
    }
    let well_formed = match kind {
        "url" => is_url(reference),
        "hash" => is_hash(reference),
        "commit" => is_commit(reference),
        _ => true,
    };
    if !well_formed {
        let shape = match kind {
            "url" => "an absolute URL with a scheme",
            "hash" => "<algorithm>:<hex digits>",
            _ => "7-64 hex digits",
        };
        return Err(format!("a `{kind}` evidence ref must be {shape}"));
    }
    let note = match obj.get("note") {
        None | Some(Value::Null) => None,
        Some(Value::String(n)) if n.chars().count() <= ref_max => Some(n.clone()),
        Some(Value::String(_)) => {
            return Err(format!(
                "evidence `note` is longer than {ref_max} characters"
            ))
        }
        Some(_) => return Err("evidence `note` must be a string".into()),
    };
    Ok(Evidence {
        kind: kind.to_string(),
        reference: reference.to_string(),
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_by_kind() {
        assert!(parse(&json!({"kind": "url", "ref": "https://x.org/a"}), 500).is_ok());
        assert!(parse(&json!({"kind": "url", "ref": "x.org/a"}), 500).is_err());
        assert!(parse(&json!({"kind": "hash", "ref": "sha256:abc123"}), 500).is_ok());
        assert!(parse(&json!({"kind": "hash", "ref": "abc123"}), 500).is_err());
        assert!(parse(&json!({"kind": "commit", "ref": "deadbee"}), 500).is_ok());
        assert!(parse(&json!({"kind": "commit", "ref": "dead"}), 500).is_err());
        assert!(parse(&json!({"kind": "log", "ref": "  "}), 500).is_err());
        assert!(parse(&json!({"kind": "opinion", "ref": "x"}), 500).is_err());
        assert!(parse(&json!({"kind": "note", "ref": "x", "extra": 1}), 500).is_err());
        assert!(parse(&json!({"kind": "note", "ref": "xx"}), 1).is_err());
    }
}
