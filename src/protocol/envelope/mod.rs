//! The envelope (SPEC §3): syntax and field rules, checked without storage.
//!
//! One function, [`checked`], holds the rules and their order. It reads the
//! envelope through [`Source`], of which there are two: the JSON object the
//! generic call receives (`json`), which may hold a field of the wrong type,
//! and the typed fields of a [`Draft`] (`typed`), which cannot. Both give the
//! same verdict for the same envelope, so a post may come either way.

mod json;
mod typed;

#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use super::acts::Act;
use super::evidence::Evidence;
use super::hashes::body_hash;
use super::ids::{self, parse_id, parse_id_str, IdKind};
use super::state::State;
use crate::protocol::limits::Limits;
use crate::protocol::refusal::{Reason, Refusal};

pub(crate) use json::check;
pub(crate) use typed::{check_draft, Draft, Pointer, Provenance, Sender};

/// Longest `idempotency_key` (SPEC §14.3).
const KEY_MAX: usize = 128;
/// Fields that exist only for some acts.
const SPECIFIC: [&str; 7] = [
    "to",
    "state",
    "if_state",
    "claim",
    "evidence",
    "supersedes",
    "valid_until",
];

/// An envelope that passed every syntax and field rule.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Checked {
    /// The act.
    pub act: Act,
    /// The thread named, if any.
    pub thread: Option<u64>,
    /// The parent named, if any.
    pub parent: Option<u64>,
    /// `from.extension`.
    pub extension: Option<String>,
    /// The body.
    pub body: String,
    /// The hash of the body with its whitespace runs collapsed, for the repeat guard.
    pub body_hash: u64,
    /// `provenance`, kept as sent (only `model` and `client`).
    pub provenance: Option<Map<String, Value>>,
    /// `to`.
    pub to: Option<String>,
    /// `state` (mark).
    pub state: Option<State>,
    /// `if_state` (decide, mark, reopen): the state the post is conditioned on
    /// (SPEC §14.5).
    pub if_state: Option<State>,
    /// `claim` (attest, refute, verify).
    pub claim: Option<u64>,
    /// `evidence`.
    pub evidence: Vec<Evidence>,
    /// `supersedes` (assert).
    pub supersedes: Vec<u64>,
    /// `valid_until` (assert), in ms since the epoch.
    pub valid_until: Option<i64>,
    /// `idempotency_key` (SPEC §14.3), and what identifies the envelope it came with.
    pub idempotency: Option<Idempotency>,
    /// The folded-body hash of the guards profile (SPEC §15), made on first use:
    /// judging the post and remembering it need it once between them, and with
    /// the profile off it is never made.
    pub folded: std::cell::OnceCell<u64>,
}

impl Checked {
    /// The folded-body hash of the body (SPEC §15, `guards::folded_hash`).
    pub(crate) fn folded_hash(&self) -> u64 {
        *self
            .folded
            .get_or_init(|| crate::protocol::guards::folded_hash(&self.body))
    }
}

/// An idempotency key and the digest of its envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Idempotency {
    /// The key as sent.
    pub key: String,
    /// The first 64 bits of the SHA-256 of the envelope without `idempotency_key`,
    /// as canonical JSON (keys sorted): equal envelopes, equal digests.
    pub digest: u64,
}

/// What the rules read of an envelope. A field the JSON object holds in the
/// wrong type is refused as it is read, so the refusals of form keep their
/// place among the others; the typed fields have none.
trait Source {
    /// `parley`, when sent, is `"1"`.
    fn version(&self) -> Result<(), Refusal>;
    /// `kind`, present and text.
    fn kind(&self) -> Result<&str, Refusal>;
    /// Refuses a field no envelope has.
    fn known_fields(&self) -> Result<(), Refusal>;
    /// Whether `field` is given (`null` is absent, for every field).
    fn has(&self, field: &str) -> bool;
    /// A text field (`to`, `state`, `if_state`, `valid_until`, `idempotency_key`).
    fn text(&self, field: &str) -> Result<Option<&str>, Refusal>;
    /// An id field (`thread`, `parent`, `claim`).
    fn id(&self, kind: IdKind, field: &str) -> Result<Option<u64>, Refusal>;
    /// `from.extension`, not yet checked against the limit.
    fn extension(&self) -> Result<Option<&str>, Refusal>;
    /// `provenance`, each entry checked by [`provenance_entry`] in key order.
    fn provenance(&self, limits: &Limits) -> Result<Option<Map<String, Value>>, Refusal>;
    /// How many evidence items, when `evidence` is given.
    fn evidence_len(&self) -> Result<Option<usize>, Refusal>;
    /// The `i`th evidence item; `Err` says what is wrong with it.
    fn evidence_item(&self, i: usize, ref_max: usize) -> Result<Evidence, String>;
    /// How many superseded claims, when `supersedes` is given.
    fn supersedes_len(&self) -> Result<Option<usize>, Refusal>;
    /// The `i`th superseded claim.
    fn supersedes_item(&self, i: usize) -> Result<u64, Refusal>;
    /// The body, as text.
    fn body(&self) -> Result<&str, Refusal>;
    /// SHA-256 of the envelope as canonical JSON without `idempotency_key`.
    fn digest(&self) -> [u8; 32];
}

fn invalid(field: &str, message: impl Into<String>) -> Refusal {
    Refusal::new(Reason::InvalidBody, message).with_field(field)
}

fn string<'a>(value: &'a Value, field: &str) -> Result<&'a str, Refusal> {
    value
        .as_str()
        .ok_or_else(|| invalid(field, format!("`{field}` must be a string")))
}

fn bad_id(kind: IdKind, field: &str) -> Refusal {
    invalid(
        field,
        format!(
            "`{field}` must be a {}<n> key or a positive integer",
            kind.prefix()
        ),
    )
}

/// An id sent as JSON (its key, or its number as a JSON number or text).
pub(crate) fn id_value(kind: IdKind, value: &Value, field: &str) -> Result<u64, Refusal> {
    parse_id(kind, value).ok_or_else(|| bad_id(kind, field))
}

/// An id given as text, refused as [`id_value`] refuses the same text.
pub(crate) fn id_text(kind: IdKind, text: &str, field: &str) -> Result<u64, Refusal> {
    parse_id_str(kind, text).ok_or_else(|| bad_id(kind, field))
}

/// Whether the act takes `field`: read from the act table, which the manifest shows.
fn allowed_for(act: Act, field: &str) -> bool {
    let spec = act.spec();
    spec.required.contains(&field) || spec.optional.contains(&field)
}

/// Checks an envelope in the order of SPEC §12.1's 400 group: object, version, kind,
/// unknown fields, fields of the kind, required fields, each field's form, body.
fn checked(src: &impl Source, limits: &Limits, dialectic: bool) -> Result<Checked, Refusal> {
    src.version()?;
    let kind = src.kind()?;
    let act = Act::from_kind(kind, dialectic).ok_or_else(|| {
        Refusal::new(
            Reason::UnknownKind,
            format!("`{kind}` is not a speech act of this forum"),
        )
        .with_field("kind")
    })?;
    src.known_fields()?;
    check_fields(src, act, kind)?;

    let thread = src.id(IdKind::Thread, "thread")?;
    let parent = src.id(IdKind::Message, "parent")?;
    let extension = src
        .extension()?
        .map(|e| check_extension(e, limits))
        .transpose()?;
    let provenance = src.provenance(limits)?;
    let idempotency = match src.text("idempotency_key")? {
        None => None,
        Some(key) => {
            check_key(key)?;
            let full = src.digest();
            Some(Idempotency {
                key: key.to_string(),
                digest: u64::from_le_bytes(full[..8].try_into().expect("8 bytes")),
            })
        }
    };
    let to = src.text("to")?.map(check_to).transpose()?;
    let state = src
        .text("state")?
        .map(|s| state_named(s, "state"))
        .transpose()?;
    let if_state = src
        .text("if_state")?
        .map(|s| state_named(s, "if_state"))
        .transpose()?;
    let claim = src.id(IdKind::Claim, "claim")?;
    if thread.is_none() && parent.is_none() && !act.may_open_thread() && !act.names_claim() {
        return Err(invalid(
            "thread",
            format!("`{kind}` cannot open a thread: give `thread` or `parent`"),
        ));
    }
    let evidence = check_evidence(src, act, limits)?;
    let supersedes = check_supersedes(src, limits)?;
    let valid_until = match src.text("valid_until")? {
        None => None,
        Some(v) => Some(
            crate::time::parse(v)
                .ok_or_else(|| invalid("valid_until", "`valid_until` must be an RFC 3339 time"))?,
        ),
    };
    let body = check_body(src.body()?, limits)?;

    Ok(Checked {
        act,
        thread,
        parent,
        extension,
        body: body.to_string(),
        body_hash: body_hash(body),
        provenance,
        to,
        state,
        if_state,
        claim,
        evidence,
        supersedes,
        valid_until,
        idempotency,
        folded: std::cell::OnceCell::new(),
    })
}

/// No field the act does not take, every field it needs.
fn check_fields(src: &impl Source, act: Act, kind: &str) -> Result<(), Refusal> {
    for key in SPECIFIC {
        if src.has(key) && !allowed_for(act, key) {
            return Err(invalid(key, format!("`{key}` is not allowed on `{kind}`")));
        }
    }
    for key in act.spec().required {
        if !src.has(key) {
            return Err(invalid(key, format!("`{kind}` needs `{key}`")));
        }
    }
    Ok(())
}

/// `to`: an identity.
fn check_to(to: &str) -> Result<String, Refusal> {
    if !ids::is_identity(to) {
        return Err(invalid(
            "to",
            format!("`to` must be an identity like realm:handle, not `{to}`"),
        ));
    }
    Ok(to.to_string())
}

/// `state` or `if_state`: a state's name.
fn state_named(name: &str, field: &str) -> Result<State, Refusal> {
    State::from_name(name).ok_or_else(|| invalid(field, format!("`{name}` is not a state")))
}

/// The body: not blank, within `body_max_chars`.
fn check_body<'a>(body: &'a str, limits: &Limits) -> Result<&'a str, Refusal> {
    if body.trim().is_empty() {
        return Err(invalid("body", "the body must not be empty"));
    }
    let chars = body.chars().count();
    if chars > limits.body_max_chars {
        return Err(Refusal::new(
            Reason::BodyTooLong,
            format!(
                "the body has {chars} characters; at most {} are allowed",
                limits.body_max_chars
            ),
        )
        .with_field("body")
        .with_limit(crate::Limit::BodyMaxChars));
    }
    Ok(body)
}

/// `idempotency_key`: 1-128 characters of `[A-Za-z0-9._:-]`.
fn check_key(key: &str) -> Result<(), Refusal> {
    let is_key = (1..=KEY_MAX).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
    if !is_key {
        return Err(invalid(
            "idempotency_key",
            format!("`idempotency_key` is 1-{KEY_MAX} characters of [A-Za-z0-9._:-]"),
        ));
    }
    Ok(())
}

/// `from.extension`: 1-`extension_max_chars` characters of `[A-Za-z0-9._-]`.
fn check_extension(ext: &str, limits: &Limits) -> Result<String, Refusal> {
    if !ids::is_extension(ext, limits.extension_max_chars) {
        return Err(invalid(
            "from.extension",
            format!(
                "an extension is 1-{} characters of [A-Za-z0-9._-]",
                limits.extension_max_chars
            ),
        ));
    }
    Ok(ext.to_string())
}

/// One entry of `provenance` (`field` is `provenance.model` or `provenance.client`):
/// within `provenance_max_chars`.
fn provenance_entry(field: &str, text: &str, limits: &Limits) -> Result<(), Refusal> {
    if text.chars().count() > limits.provenance_max_chars {
        return Err(invalid(
            field,
            format!(
                "`{field}` is longer than {} characters",
                limits.provenance_max_chars
            ),
        )
        .with_limit(crate::Limit::ProvenanceMaxChars));
    }
    Ok(())
}

fn check_evidence(src: &impl Source, act: Act, limits: &Limits) -> Result<Vec<Evidence>, Refusal> {
    let Some(len) = src.evidence_len()? else {
        return Ok(Vec::new());
    };
    if len > limits.evidence_max {
        return Err(invalid(
            "evidence",
            format!("at most {} evidence items", limits.evidence_max),
        )
        .with_limit(crate::Limit::EvidenceMax));
    }
    if len == 0 && matches!(act, Act::Attest | Act::Refute) {
        return Err(invalid(
            "evidence",
            format!("`{}` needs at least one evidence item", act.kind()),
        ));
    }
    (0..len)
        .map(|i| {
            src.evidence_item(i, limits.evidence_ref_max_chars)
                .map_err(|m| invalid("evidence", m))
        })
        .collect()
}

fn check_supersedes(src: &impl Source, limits: &Limits) -> Result<Vec<u64>, Refusal> {
    let Some(len) = src.supersedes_len()? else {
        return Ok(Vec::new());
    };
    if len > limits.supersedes_max {
        return Err(invalid(
            "supersedes",
            format!("at most {} superseded claims", limits.supersedes_max),
        )
        .with_limit(crate::Limit::SupersedesMax));
    }
    let mut ids = Vec::with_capacity(len);
    for i in 0..len {
        let n = src.supersedes_item(i)?;
        if !ids.contains(&n) {
            ids.push(n);
        }
    }
    Ok(ids)
}
