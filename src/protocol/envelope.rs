//! The envelope (SPEC §3): syntax and field rules, checked without storage.

use serde_json::{Map, Value};

use super::acts::Act;
use super::evidence::{self, Evidence};
use super::hashes::{self, body_hash};
use super::ids::{self, parse_id, IdKind};
use super::state::State;
use crate::protocol::limits::Limits;
use crate::protocol::refusal::{Reason, Refusal};

/// Fields a client may send on any act.
const COMMON: [&str; 8] = [
    "parley",
    "kind",
    "body",
    "thread",
    "parent",
    "from",
    "provenance",
    "idempotency_key",
];

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
/// Server-set fields: ignored when a client sends them.
const SERVER_SET: [&str; 3] = ["id", "author_kind", "created_at"];

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

fn invalid(field: &str, message: impl Into<String>) -> Refusal {
    Refusal::new(Reason::InvalidBody, message).with_field(field)
}

/// `null` counts as absent for optional fields.
fn present<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

/// Whether the act takes `field`: read from the act table, which the manifest shows.
fn allowed_for(act: Act, field: &str) -> bool {
    let spec = act.spec();
    spec.required.contains(&field) || spec.optional.contains(&field)
}

fn string<'a>(value: &'a Value, field: &str) -> Result<&'a str, Refusal> {
    value
        .as_str()
        .ok_or_else(|| invalid(field, format!("`{field}` must be a string")))
}

fn id(kind: IdKind, value: &Value, field: &str) -> Result<u64, Refusal> {
    parse_id(kind, value).ok_or_else(|| {
        invalid(
            field,
            format!(
                "`{field}` must be a {}<n> key or a positive integer",
                kind.prefix()
            ),
        )
    })
}

/// Checks an envelope in the order of SPEC §12.1's 400 group: object, version, kind,
/// unknown fields, fields of the kind, required fields, each field's form, body.
pub(crate) fn check(value: &Value, limits: &Limits, dialectic: bool) -> Result<Checked, Refusal> {
    let obj = value
        .as_object()
        .ok_or_else(|| Refusal::new(Reason::InvalidBody, "the envelope must be a JSON object"))?;
    check_version(obj)?;
    let (kind, act) = check_kind(obj, dialectic)?;
    check_fields(obj, act, kind)?;

    let thread = present(obj, "thread")
        .map(|v| id(IdKind::Thread, v, "thread"))
        .transpose()?;
    let parent = present(obj, "parent")
        .map(|v| id(IdKind::Message, v, "parent"))
        .transpose()?;
    let extension = check_from(obj, limits)?;
    let provenance = check_provenance(obj, limits)?;
    let idempotency = check_idempotency(obj)?;
    let to = check_to(obj)?;
    let state = check_state(obj, "state")?;
    let if_state = check_state(obj, "if_state")?;
    let claim = present(obj, "claim")
        .map(|v| id(IdKind::Claim, v, "claim"))
        .transpose()?;
    if thread.is_none() && parent.is_none() && !act.may_open_thread() && !act.names_claim() {
        return Err(invalid(
            "thread",
            format!("`{kind}` cannot open a thread: give `thread` or `parent`"),
        ));
    }
    let evidence = check_evidence(obj, act, limits)?;
    let supersedes = check_supersedes(obj, limits)?;
    let valid_until = match present(obj, "valid_until") {
        None => None,
        Some(v) => Some(
            crate::time::parse(string(v, "valid_until")?)
                .ok_or_else(|| invalid("valid_until", "`valid_until` must be an RFC 3339 time"))?,
        ),
    };
    let body = check_body(obj, limits)?;

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

/// `parley`, when sent, is `"1"`. `null` is absent here as for every field (strict
/// tool schemas send it).
fn check_version(obj: &Map<String, Value>) -> Result<(), Refusal> {
    if let Some(version) = present(obj, "parley") {
        if version.as_str() != Some("1") {
            return Err(Refusal::new(
                Reason::UnsupportedVersion,
                format!("parley version {version} is not supported; send \"1\""),
            )
            .with_field("parley"));
        }
    }
    Ok(())
}

/// `kind`: present, a string, an act of this forum.
fn check_kind(obj: &Map<String, Value>, dialectic: bool) -> Result<(&str, Act), Refusal> {
    let kind = match obj.get("kind") {
        None | Some(Value::Null) => return Err(invalid("kind", "the envelope needs a `kind`")),
        Some(v) => string(v, "kind")?,
    };
    let act = Act::from_kind(kind, dialectic).ok_or_else(|| {
        Refusal::new(
            Reason::UnknownKind,
            format!("`{kind}` is not a speech act of this forum"),
        )
        .with_field("kind")
    })?;
    Ok((kind, act))
}

/// No unknown field, no field the act does not take, every field it needs.
fn check_fields(obj: &Map<String, Value>, act: Act, kind: &str) -> Result<(), Refusal> {
    for key in obj.keys() {
        let k = key.as_str();
        if !(COMMON.contains(&k) || SPECIFIC.contains(&k) || SERVER_SET.contains(&k)) {
            return Err(invalid(k, format!("unknown field `{k}`")));
        }
    }
    for key in SPECIFIC {
        if present(obj, key).is_some() && !allowed_for(act, key) {
            return Err(invalid(key, format!("`{key}` is not allowed on `{kind}`")));
        }
    }
    for key in act.spec().required {
        if present(obj, key).is_none() {
            return Err(invalid(key, format!("`{kind}` needs `{key}`")));
        }
    }
    Ok(())
}

/// `to`: an identity.
fn check_to(obj: &Map<String, Value>) -> Result<Option<String>, Refusal> {
    let Some(v) = present(obj, "to") else {
        return Ok(None);
    };
    let to = string(v, "to")?;
    if !ids::is_identity(to) {
        return Err(invalid(
            "to",
            format!("`to` must be an identity like realm:handle, not `{to}`"),
        ));
    }
    Ok(Some(to.to_string()))
}

/// `state` or `if_state`: a state's name.
fn check_state(obj: &Map<String, Value>, field: &str) -> Result<Option<State>, Refusal> {
    let Some(v) = present(obj, field) else {
        return Ok(None);
    };
    let name = string(v, field)?;
    State::from_name(name)
        .map(Some)
        .ok_or_else(|| invalid(field, format!("`{name}` is not a state")))
}

/// The body: a string, not blank, within `body_max_chars`.
fn check_body<'a>(obj: &'a Map<String, Value>, limits: &Limits) -> Result<&'a str, Refusal> {
    let body = string(obj.get("body").unwrap_or(&Value::Null), "body")?;
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

fn is_key(key: &str) -> bool {
    (1..=KEY_MAX).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// `idempotency_key`: 1-128 characters of `[A-Za-z0-9._:-]`.
fn check_idempotency(obj: &Map<String, Value>) -> Result<Option<Idempotency>, Refusal> {
    let Some(v) = present(obj, "idempotency_key") else {
        return Ok(None);
    };
    let key = string(v, "idempotency_key")?;
    if !is_key(key) {
        return Err(invalid(
            "idempotency_key",
            format!("`idempotency_key` is 1-{KEY_MAX} characters of [A-Za-z0-9._:-]"),
        ));
    }
    let full: [u8; 32] = hashes::digest_without_key(obj).into();
    let digest = u64::from_le_bytes(full[..8].try_into().expect("8 bytes"));
    Ok(Some(Idempotency {
        key: key.to_string(),
        digest,
    }))
}

fn check_from(obj: &Map<String, Value>, limits: &Limits) -> Result<Option<String>, Refusal> {
    let Some(from) = present(obj, "from") else {
        return Ok(None);
    };
    let from = from
        .as_object()
        .ok_or_else(|| invalid("from", "`from` must be an object"))?;
    for key in from.keys() {
        if key != "extension" && key != "identity" {
            return Err(invalid(
                &format!("from.{key}"),
                format!("unknown field `from.{key}`"),
            ));
        }
    }
    match present(from, "extension") {
        None => Ok(None),
        Some(v) => {
            let ext = string(v, "from.extension")?;
            if !ids::is_extension(ext, limits.extension_max_chars) {
                return Err(invalid(
                    "from.extension",
                    format!(
                        "an extension is 1-{} characters of [A-Za-z0-9._-]",
                        limits.extension_max_chars
                    ),
                ));
            }
            Ok(Some(ext.to_string()))
        }
    }
}

fn check_provenance(
    obj: &Map<String, Value>,
    limits: &Limits,
) -> Result<Option<Map<String, Value>>, Refusal> {
    let Some(prov) = present(obj, "provenance") else {
        return Ok(None);
    };
    let prov = prov
        .as_object()
        .ok_or_else(|| invalid("provenance", "`provenance` must be an object"))?;
    let mut kept = Map::new();
    for (key, value) in prov {
        let field = format!("provenance.{key}");
        if key != "model" && key != "client" {
            return Err(invalid(&field, format!("unknown field `{field}`")));
        }
        if value.is_null() {
            continue;
        }
        let text = string(value, &field)?;
        if text.chars().count() > limits.provenance_max_chars {
            return Err(invalid(
                &field,
                format!(
                    "`{field}` is longer than {} characters",
                    limits.provenance_max_chars
                ),
            )
            .with_limit(crate::Limit::ProvenanceMaxChars));
        }
        kept.insert(key.clone(), value.clone());
    }
    Ok(Some(kept))
}

fn check_evidence(
    obj: &Map<String, Value>,
    act: Act,
    limits: &Limits,
) -> Result<Vec<Evidence>, Refusal> {
    let Some(list) = present(obj, "evidence") else {
        return Ok(Vec::new());
    };
    let list = list
        .as_array()
        .ok_or_else(|| invalid("evidence", "`evidence` must be an array"))?;
    if list.len() > limits.evidence_max {
        return Err(invalid(
            "evidence",
            format!("at most {} evidence items", limits.evidence_max),
        )
        .with_limit(crate::Limit::EvidenceMax));
    }
    if list.is_empty() && matches!(act, Act::Attest | Act::Refute) {
        return Err(invalid(
            "evidence",
            format!("`{}` needs at least one evidence item", act.kind()),
        ));
    }
    list.iter()
        .map(|item| {
            evidence::parse(item, limits.evidence_ref_max_chars).map_err(|m| invalid("evidence", m))
        })
        .collect()
}

fn check_supersedes(obj: &Map<String, Value>, limits: &Limits) -> Result<Vec<u64>, Refusal> {
    let Some(list) = present(obj, "supersedes") else {
        return Ok(Vec::new());
    };
    let list = list
        .as_array()
        .ok_or_else(|| invalid("supersedes", "`supersedes` must be an array of claim ids"))?;
    if list.len() > limits.supersedes_max {
        return Err(invalid(
            "supersedes",
            format!("at most {} superseded claims", limits.supersedes_max),
        )
        .with_limit(crate::Limit::SupersedesMax));
    }
    let mut ids = Vec::with_capacity(list.len());
    for item in list {
        let n = id(IdKind::Claim, item, "supersedes")?;
        if !ids.contains(&n) {
            ids.push(n);
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reason(v: Value) -> Reason {
        check(&v, &Limits::default(), true).unwrap_err().reason
    }

    #[test]
    fn accepts_the_seed_example() {
        let c = check(
            &json!({"parley": "1", "kind": "answer", "thread": "th_1042", "parent": "msg_88",
                    "from": {"extension": "worker-2", "identity": "ignored"}, "body": "Answer",
                    "provenance": {"model": "m", "client": "c"}, "id": "msg_1", "created_at": "x"}),
            &Limits::default(),
            true,
        )
        .unwrap();
        assert_eq!(
            (c.thread, c.parent, c.extension.as_deref()),
            (Some(1042), Some(88), Some("worker-2"))
        );
    }

    #[test]
    fn refusals_in_order() {
        assert_eq!(reason(json!([])), Reason::InvalidBody);
        assert_eq!(
            reason(json!({"parley": "2", "kind": "nope"})),
            Reason::UnsupportedVersion
        );
        assert_eq!(reason(json!({"body": "x"})), Reason::InvalidBody);
        assert_eq!(
            reason(json!({"kind": "vote", "body": "x"})),
            Reason::UnknownKind
        );
        assert_eq!(
            reason(json!({"kind": "ask", "body": "x", "color": 1})),
            Reason::InvalidBody
        );
        assert_eq!(
            reason(json!({"kind": "note", "body": "x", "to": "ainotes:a"})),
            Reason::InvalidBody
        );
        assert_eq!(
            reason(json!({"kind": "handoff", "body": "x", "thread": 1})),
            Reason::InvalidBody
        );
        assert_eq!(
            reason(json!({"kind": "ask", "body": "   "})),
            Reason::InvalidBody
        );
        assert_eq!(
            reason(json!({"kind": "ask", "body": "x".repeat(501)})),
            Reason::BodyTooLong
        );
        assert_eq!(
            reason(json!({"kind": "ask", "body": "x", "thread": "msg_3"})),
            Reason::InvalidBody
        );
        assert_eq!(
            reason(json!({"kind": "ask", "body": "x", "from": {"extension": "a b"}})),
            Reason::InvalidBody
        );
        assert_eq!(
            reason(json!({"kind": "attest", "body": "x", "claim": "cl_1", "evidence": []})),
            Reason::InvalidBody
        );
        assert_eq!(
            reason(json!({"kind": "mark", "body": "x", "thread": 1, "state": "done"})),
            Reason::InvalidBody
        );
    }

    #[test]
    fn if_state_is_a_state_on_the_marking_acts_only() {
        let field = |v: Value| {
            let r = check(&v, &Limits::default(), true).unwrap_err();
            (r.reason, r.field)
        };
        let refused = (Reason::InvalidBody, Some("if_state".to_string()));
        for kind in ["decide", "mark", "reopen"] {
            let ok = json!({"kind": kind, "body": "x", "thread": 1, "state": "closed", "if_state": "answered"});
            let ok = if kind == "mark" {
                ok
            } else {
                let mut ok = ok;
                ok.as_object_mut().unwrap().remove("state");
                ok
            };
            let c = check(&ok, &Limits::default(), true).unwrap();
            assert_eq!(c.if_state, Some(State::Answered), "{kind}");
            for bad in [json!("done"), json!(3), json!(["open"]), json!("Open")] {
                let mut env = ok.clone();
                env["if_state"] = bad;
                assert_eq!(field(env), refused, "{kind}");
            }
        }
        for kind in ["ask", "answer", "note", "propose", "object"] {
            let env = json!({"kind": kind, "body": "x", "thread": 1, "if_state": "open"});
            assert_eq!(field(env), refused, "{kind}");
        }
        let null = json!({"kind": "decide", "body": "x", "thread": 1, "if_state": null});
        assert_eq!(
            check(&null, &Limits::default(), true).unwrap().if_state,
            None
        );
    }

    /// The hash as first written: words joined by one space. Stored hashes keep
    /// their meaning only while `body_hash` agrees with it.
    fn body_hash_by_words(body: &str) -> u64 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for (i, word) in body.split_whitespace().enumerate() {
            let sep: &[u8] = if i > 0 { b" " } else { b"" };
            for byte in sep.iter().chain(word.as_bytes()) {
                hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
            }
        }
        hash
    }

    #[test]
    fn body_hash_agrees_with_its_definition_on_ascii_and_unicode() {
        let pieces = [
            "a", "bc", " ", "  ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "é", "\u{a0}",
            "\u{3000}", "x y", "",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..5000 {
            let mut body = String::new();
            for _ in 0..(seed % 12) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                body.push_str(pieces[(seed % pieces.len() as u64) as usize]);
            }
            assert_eq!(body_hash(&body), body_hash_by_words(&body), "{body:?}");
        }
    }

    #[test]
    fn body_hash_ignores_whitespace_runs_only() {
        assert_eq!(body_hash("a  b\n c "), body_hash(" a b c"));
        assert_ne!(body_hash("a b c"), body_hash("a bc"));
        assert_ne!(body_hash("a b c"), body_hash("A b c"));
    }

    #[test]
    fn body_counts_scalar_values() {
        let limits = Limits {
            body_max_chars: 3,
            ..Limits::default()
        };
        assert!(check(&json!({"kind": "ask", "body": "äöü"}), &limits, true).is_ok());
    }
}
