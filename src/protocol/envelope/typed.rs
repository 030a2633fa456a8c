//! The envelope as the typed API builds it: each field text or a list of texts,
//! as the wire has them, so that a field can be of no wrong type.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::{checked, id_text, provenance_entry, Checked, Source};
use crate::protocol::evidence::{self, Evidence};
use crate::protocol::hashes;
use crate::protocol::ids::IdKind;
use crate::protocol::limits::Limits;
use crate::protocol::refusal::Refusal;

/// An envelope built field by field: the typed `Envelope` of the session, or
/// the `assert` an import posts.
///
/// Its fields are declared in the order of their names, and an absent one is
/// not written, so that serde_json writes it as the canonical JSON of the same
/// envelope as a map (keys sorted): the idempotency digest of a post is the
/// same whichever way it came, and a retry of it either way replays it.
/// `idempotency_key` is left out of that text, as the digest leaves it out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Draft {
    pub(crate) body: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) claim: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) evidence: Vec<Pointer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) from: Option<Sender>,
    #[serde(skip)]
    pub(crate) idempotency_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) if_state: Option<String>,
    pub(crate) kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) parent: Option<String>,
    pub(crate) parley: Version,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) provenance: Option<Provenance>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) state: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) supersedes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) thread: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) to: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) valid_until: Option<String>,
}

/// `parley`: a typed envelope is always of version 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Version;

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("1")
    }
}

/// One evidence item, its fields in the order of their names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Pointer {
    pub(crate) kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) note: Option<String>,
    #[serde(rename = "ref")]
    pub(crate) reference: String,
}

/// `from`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Sender {
    pub(crate) extension: String,
}

/// `provenance`, its fields in the order of their names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Provenance {
    pub(crate) client: String,
    pub(crate) model: String,
}

impl Draft {
    /// An envelope of `kind` with `body`, and nothing else.
    pub(crate) fn new(kind: &str, body: &str) -> Draft {
        Draft {
            body: body.to_string(),
            claim: None,
            evidence: Vec::new(),
            from: None,
            idempotency_key: None,
            if_state: None,
            kind: kind.to_string(),
            parent: None,
            parley: Version,
            provenance: None,
            state: None,
            supersedes: Vec::new(),
            thread: None,
            to: None,
            valid_until: None,
        }
    }

    /// The envelope as a JSON object, `idempotency_key` included.
    pub(crate) fn to_json(&self) -> Map<String, Value> {
        let mut map = match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            // A struct of strings always serializes to an object.
            _ => unreachable!("an envelope serializes to an object"),
        };
        if let Some(key) = &self.idempotency_key {
            map.insert("idempotency_key".into(), Value::String(key.clone()));
        }
        map
    }
}

/// Checks a typed envelope by the rules and in the order [`check`](super::check)
/// checks the same envelope sent as JSON, with the same refusals.
pub(crate) fn check_draft(
    draft: &Draft,
    limits: &Limits,
    dialectic: bool,
) -> Result<Checked, Refusal> {
    checked(draft, limits, dialectic)
}

impl Source for Draft {
    fn version(&self) -> Result<(), Refusal> {
        Ok(())
    }

    fn kind(&self) -> Result<&str, Refusal> {
        Ok(&self.kind)
    }

    fn known_fields(&self) -> Result<(), Refusal> {
        Ok(())
    }

    fn has(&self, field: &str) -> bool {
        match field {
            "body" | "kind" | "parley" => true,
            "evidence" => !self.evidence.is_empty(),
            "supersedes" => !self.supersedes.is_empty(),
            "from" => self.from.is_some(),
            "provenance" => self.provenance.is_some(),
            _ => self.text(field).is_ok_and(|t| t.is_some()),
        }
    }

    fn text(&self, field: &str) -> Result<Option<&str>, Refusal> {
        let text = match field {
            "thread" => &self.thread,
            "parent" => &self.parent,
            "to" => &self.to,
            "state" => &self.state,
            "if_state" => &self.if_state,
            "claim" => &self.claim,
            "valid_until" => &self.valid_until,
            "idempotency_key" => &self.idempotency_key,
            _ => &None,
        };
        Ok(text.as_deref())
    }

    fn id(&self, kind: IdKind, field: &str) -> Result<Option<u64>, Refusal> {
        self.text(field)?
            .map(|t| id_text(kind, t, field))
            .transpose()
    }

    fn extension(&self) -> Result<Option<&str>, Refusal> {
        Ok(self.from.as_ref().map(|f| f.extension.as_str()))
    }

    fn provenance(&self, limits: &Limits) -> Result<Option<Map<String, Value>>, Refusal> {
        let Some(p) = &self.provenance else {
            return Ok(None);
        };
        // In key order, as the JSON object's entries are read.
        provenance_entry("provenance.client", &p.client, limits)?;
        provenance_entry("provenance.model", &p.model, limits)?;
        // The record keeps provenance as the object it is on the wire.
        let mut kept = Map::new();
        kept.insert("client".into(), Value::String(p.client.clone()));
        kept.insert("model".into(), Value::String(p.model.clone()));
        Ok(Some(kept))
    }

    fn evidence_len(&self) -> Result<Option<usize>, Refusal> {
        Ok(Some(self.evidence.len()).filter(|n| *n > 0))
    }

    fn evidence_item(&self, i: usize, ref_max: usize) -> Result<Evidence, String> {
        let p = &self.evidence[i];
        evidence::from_parts(&p.kind, &p.reference, p.note.as_deref(), ref_max)
    }

    fn supersedes_len(&self) -> Result<Option<usize>, Refusal> {
        Ok(Some(self.supersedes.len()).filter(|n| *n > 0))
    }

    fn supersedes_item(&self, i: usize) -> Result<u64, Refusal> {
        id_text(IdKind::Claim, &self.supersedes[i], "supersedes")
    }

    fn body(&self) -> Result<&str, Refusal> {
        Ok(&self.body)
    }

    fn digest(&self) -> [u8; 32] {
        hashes::digest_of(self).into()
    }
}
