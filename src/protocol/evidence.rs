//! Evidence pointers of the dialectic profile (SPEC §10).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an evidence item points at. Stored and shown by its wire name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EvidenceKind {
    /// An absolute URL.
    Url,
    /// `<algorithm>:<hex digits>`.
    Hash,
    /// A build or test artifact.
    Artifact,
    /// A commit id (7–64 hex digits).
    Commit,
    /// A log.
    Log,
    /// A reproducer.
    Reproducer,
    /// A note.
    Note,
    /// Anything else.
    Other,
}

impl EvidenceKind {
    /// Every kind, in manifest order.
    pub const ALL: [EvidenceKind; 8] = [
        EvidenceKind::Url,
        EvidenceKind::Hash,
        EvidenceKind::Artifact,
        EvidenceKind::Commit,
        EvidenceKind::Log,
        EvidenceKind::Reproducer,
        EvidenceKind::Note,
        EvidenceKind::Other,
    ];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            EvidenceKind::Url => "url",
            EvidenceKind::Hash => "hash",
            EvidenceKind::Artifact => "artifact",
            EvidenceKind::Commit => "commit",
            EvidenceKind::Log => "log",
            EvidenceKind::Reproducer => "reproducer",
            EvidenceKind::Note => "note",
            EvidenceKind::Other => "other",
        }
    }

    /// The kind with this wire name.
    pub fn from_name(name: &str) -> Option<EvidenceKind> {
        EvidenceKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// The kinds of evidence by wire name, in manifest order.
pub(crate) const EVIDENCE_KINDS: [&str; 8] = [
    EvidenceKind::ALL[0].as_str(),
    EvidenceKind::ALL[1].as_str(),
    EvidenceKind::ALL[2].as_str(),
    EvidenceKind::ALL[3].as_str(),
    EvidenceKind::ALL[4].as_str(),
    EvidenceKind::ALL[5].as_str(),
    EvidenceKind::ALL[6].as_str(),
    EvidenceKind::ALL[7].as_str(),
];

/// One evidence item: a pointer, never an opinion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// What it is.
    pub kind: EvidenceKind,
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
pub(crate) fn parse(value: &Value, ref_max: usize) -> Result<Evidence, String> {
    let obj = value
        .as_object()
        .ok_or("an evidence item must be an object")?;
    for key in obj.keys() {
        if !matches!(key.as_str(), "kind" | "ref" | "note") {
            return Err(format!("unknown field `{key}` in an evidence item"));
        }
    }
    let name = obj
        .get("kind")
        .and_then(Value::as_str)
        .ok_or("evidence needs a string `kind`")?;
    let kind = kind_named(name)?;
    let reference = obj
        .get("ref")
        .and_then(Value::as_str)
        .ok_or("evidence needs a string `ref`")?;
    check_reference(kind, name, reference, ref_max)?;
    let note = match obj.get("note") {
        None | Some(Value::Null) => None,
        Some(Value::String(n)) => Some(check_note(n, ref_max)?),
        Some(_) => return Err("evidence `note` must be a string".into()),
    };
    Ok(Evidence {
        kind,
        reference: reference.to_string(),
        note,
    })
}

/// An evidence item given as text (the typed API's), checked as [`parse`]
/// checks the same item sent as JSON.
pub(crate) fn from_parts(
    name: &str,
    reference: &str,
    note: Option<&str>,
    ref_max: usize,
) -> Result<Evidence, String> {
    let kind = kind_named(name)?;
    check_reference(kind, name, reference, ref_max)?;
    Ok(Evidence {
        kind,
        reference: reference.to_string(),
        note: note.map(|n| check_note(n, ref_max)).transpose()?,
    })
}

fn kind_named(name: &str) -> Result<EvidenceKind, String> {
    EvidenceKind::from_name(name).ok_or_else(|| {
        format!(
            "evidence kind `{name}` is not one of {}",
            EVIDENCE_KINDS.join(", ")
        )
    })
}

fn check_reference(
    kind: EvidenceKind,
    name: &str,
    reference: &str,
    ref_max: usize,
) -> Result<(), String> {
    if reference.trim().is_empty() {
        return Err("evidence `ref` must not be empty".into());
    }
    if reference.chars().count() > ref_max {
        return Err(format!(
            "evidence `ref` is longer than {ref_max} characters"
        ));
    }
    let well_formed = match kind {
        EvidenceKind::Url => is_url(reference),
        EvidenceKind::Hash => is_hash(reference),
        EvidenceKind::Commit => is_commit(reference),
        _ => true,
    };
    if !well_formed {
        let shape = match kind {
            EvidenceKind::Url => "an absolute URL with a scheme",
            EvidenceKind::Hash => "<algorithm>:<hex digits>",
            _ => "7-64 hex digits",
        };
        return Err(format!("a `{name}` evidence ref must be {shape}"));
    }
    Ok(())
}

fn check_note(note: &str, ref_max: usize) -> Result<String, String> {
    if note.chars().count() <= ref_max {
        Ok(note.to_string())
    } else {
        Err(format!(
            "evidence `note` is longer than {ref_max} characters"
        ))
    }
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
