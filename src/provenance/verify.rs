//! [`verify_bundle`]: every check of SPEC §18.3 in its order, form first
//! (`bundle_invalid`), then the realm and its signature (`realm_untrusted`).

use super::bundle::{signed_by, Envelope, PAYLOAD_TYPE, PREDICATE_TYPE, STATEMENT_TYPE};
use super::canonical::{canonical_json, claim_digest};
use super::key::{KeyError, RealmKey};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::Value;
use std::collections::BTreeMap;

/// The realms a forum trusts, each with its key (SPEC §18.3 `trusted_realms`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedRealms(BTreeMap<String, RealmKey>);

impl TrustedRealms {
    /// No realm trusted.
    pub fn new() -> TrustedRealms {
        TrustedRealms::default()
    }

    /// Trusts `realm` with `key` (replacing a key given before).
    pub fn insert(&mut self, realm: impl Into<String>, key: RealmKey) {
        self.0.insert(realm.into(), key);
    }

    /// Parses a map from realm to key text (`ed25519:…`); the error names the
    /// realm whose key is malformed.
    pub fn parse<'a>(
        map: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<TrustedRealms, (String, KeyError)> {
        let mut out = TrustedRealms::new();
        for (realm, text) in map {
            let key = RealmKey::parse(text).map_err(|e| (realm.to_owned(), e))?;
            out.insert(realm, key);
        }
        Ok(out)
    }

    /// The key of `realm`, if trusted.
    pub fn get(&self, realm: &str) -> Option<&RealmKey> {
        self.0.get(realm)
    }

    /// The trusted realms and their keys, by realm.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &RealmKey)> {
        self.0.iter().map(|(r, k)| (r.as_str(), k))
    }

    /// How many realms are trusted.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no realm is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Why a bundle was refused: its form (`bundle_invalid`, 400) or its realm or
/// signature (`realm_untrusted`, 403). The text is one line for a person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    /// Not a DSSE envelope of an in-toto statement of a claim, not canonical, or
    /// its subject digest does not match its claim.
    #[error("bundle_invalid: {0}")]
    Invalid(String),
    /// Its realm is not trusted here, or no signature verifies with its key.
    #[error("realm_untrusted: {0}")]
    Untrusted(String),
}

impl BundleError {
    /// The refusal's reason: `bundle_invalid` or `realm_untrusted`.
    pub fn reason(&self) -> &'static str {
        match self {
            BundleError::Invalid(_) => "bundle_invalid",
            BundleError::Untrusted(_) => "realm_untrusted",
        }
    }

    /// The human message, without the reason.
    pub fn message(&self) -> &str {
        match self {
            BundleError::Invalid(m) | BundleError::Untrusted(m) => m,
        }
    }
}

/// A bundle that passed every check: what it says, and who signed it.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedClaim {
    /// The exporting realm.
    pub realm: String,
    /// The claim's id in that realm (`cl_…`).
    pub claim_id: String,
    /// Its text.
    pub text: String,
    /// Its status at export (`unverified`, `supported`, `verified`, …).
    pub status: String,
    /// When it was exported (the exporting forum's clock).
    pub exported_at: String,
    /// The key that signed it (`ed25519:…`).
    pub key: String,
    /// The subject digest (hex SHA-256 of the claim's canonical JSON).
    pub digest: String,
    /// The claim as exported: `get_claim`'s result in that realm.
    pub claim: Value,
}

/// What [`verify_bundle`] reads: the bundle's bytes (as a file or a fuzzer holds
/// them) or an already parsed JSON value (as a call's argument arrives).
#[derive(Debug, Clone, Copy)]
pub enum BundleInput<'a> {
    /// The envelope's JSON text.
    Bytes(&'a [u8]),
    /// The envelope as a JSON value.
    Value(&'a Value),
}

impl<'a> From<&'a [u8]> for BundleInput<'a> {
    fn from(b: &'a [u8]) -> Self {
        BundleInput::Bytes(b)
    }
}

impl<'a> From<&'a Vec<u8>> for BundleInput<'a> {
    fn from(b: &'a Vec<u8>) -> Self {
        BundleInput::Bytes(b)
    }
}

impl<'a> From<&'a str> for BundleInput<'a> {
    fn from(s: &'a str) -> Self {
        BundleInput::Bytes(s.as_bytes())
    }
}

impl<'a> From<&'a Value> for BundleInput<'a> {
    fn from(v: &'a Value) -> Self {
        BundleInput::Value(v)
    }
}

fn invalid(m: impl Into<String>) -> BundleError {
    BundleError::Invalid(m.into())
}

/// Checks a bundle, in SPEC §18.3's order, and never panics on any input:
/// 1. form (`bundle_invalid`): a DSSE envelope (no other fields) of payload type
///    `application/vnd.in-toto+json`, its payload standard base64 of a statement
///    that is byte-equal to its own RFC 8785 form, with `_type` in-toto Statement
///    v1, predicate type `https://parley.dev/claim/v1`, a predicate with `realm`,
///    `claim` (an object with string `id`, `text`, `status`) and `exported_at`,
///    and one subject named `<realm>/<claim id>` whose `sha256` digest is that of
///    the claim's canonical JSON; each signature a `keyid` and a base64 `sig` of
///    64 bytes;
/// 2. realm (`realm_untrusted`): the realm is in `trusted`, and a signature whose
///    `keyid` is that realm's key verifies (`verify_strict`) over the PAE.
pub fn verify_bundle<'a>(
    input: impl Into<BundleInput<'a>>,
    trusted: &TrustedRealms,
) -> Result<VerifiedClaim, BundleError> {
    let envelope = read_bundle(input).map_err(BundleError::Invalid)?;
    verify_envelope(&envelope, trusted)
}

/// The first check of [`verify_bundle`]: the input is a DSSE envelope. `Err`
/// says why not (a `bundle_invalid`).
pub(crate) fn read_bundle<'a>(input: impl Into<BundleInput<'a>>) -> Result<Envelope, String> {
    match input.into() {
        BundleInput::Bytes(b) => serde_json::from_slice(b),
        BundleInput::Value(v) => Envelope::deserialize_value(v),
    }
    .map_err(|e| format!("not a DSSE envelope: {e}"))
}

/// The checks of [`verify_bundle`] after [`read_bundle`], in their order.
pub(crate) fn verify_envelope(
    envelope: &Envelope,
    trusted: &TrustedRealms,
) -> Result<VerifiedClaim, BundleError> {
    if envelope.payload_type != PAYLOAD_TYPE {
        return Err(invalid(format!("payloadType is not `{PAYLOAD_TYPE}`")));
    }
    if envelope.signatures.is_empty() {
        return Err(invalid("no signature"));
    }
    for s in &envelope.signatures {
        if STANDARD.decode(&s.sig).map(|b| b.len()) != Ok(64) {
            return Err(invalid("a signature is not base64 of 64 bytes"));
        }
    }
    let payload = STANDARD
        .decode(&envelope.payload)
        .map_err(|_| invalid("payload is not base64"))?;
    let statement: Value =
        serde_json::from_slice(&payload).map_err(|_| invalid("payload is not a JSON statement"))?;
    if canonical_json(&statement) != payload {
        return Err(invalid("the statement is not in RFC 8785 canonical form"));
    }
    let found = read_statement(&statement)?;
    if found.subject_digest != claim_digest(found.claim) {
        return Err(invalid("the subject digest does not match the claim"));
    }
    let Some(key) = trusted.get(found.realm) else {
        return Err(BundleError::Untrusted(format!(
            "realm `{}` is not trusted here",
            found.realm
        )));
    };
    if !signed_by(envelope, &payload, key) {
        return Err(BundleError::Untrusted(format!(
            "no signature verifies with the key of realm `{}`",
            found.realm
        )));
    }
    Ok(VerifiedClaim {
        realm: found.realm.to_owned(),
        claim_id: found.claim_id.to_owned(),
        text: found.text.to_owned(),
        status: found.status.to_owned(),
        exported_at: found.exported_at.to_owned(),
        key: key.to_string(),
        digest: found.subject_digest.to_owned(),
        claim: found.claim.clone(),
    })
}

impl Envelope {
    fn deserialize_value(v: &Value) -> Result<Envelope, serde_json::Error> {
        use serde::Deserialize as _;
        Envelope::deserialize(v)
    }
}

struct Found<'v> {
    realm: &'v str,
    claim: &'v Value,
    claim_id: &'v str,
    text: &'v str,
    status: &'v str,
    exported_at: &'v str,
    subject_digest: &'v str,
}

fn field<'v>(v: &'v Value, name: &str) -> Result<&'v str, BundleError> {
    v.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("`{name}` is missing or not a string")))
}

/// The statement's shape (its bytes were already found canonical).
fn read_statement(st: &Value) -> Result<Found<'_>, BundleError> {
    let obj = st
        .as_object()
        .ok_or_else(|| invalid("the statement is not an object"))?;
    if obj.len() != 4 {
        return Err(invalid(
            "the statement has other fields than in-toto's four",
        ));
    }
    if field(st, "_type")? != STATEMENT_TYPE {
        return Err(invalid(format!("_type is not `{STATEMENT_TYPE}`")));
    }
    if field(st, "predicateType")? != PREDICATE_TYPE {
        return Err(invalid(format!("predicateType is not `{PREDICATE_TYPE}`")));
    }
    let predicate = st
        .get("predicate")
        .filter(|p| p.is_object())
        .ok_or_else(|| invalid("predicate is not an object"))?;
    let realm = field(predicate, "realm")?;
    let exported_at = field(predicate, "exported_at")?;
    let claim = predicate
        .get("claim")
        .filter(|c| c.is_object())
        .ok_or_else(|| invalid("predicate.claim is not an object"))?;
    let claim_id = field(claim, "id")?;
    let text = field(claim, "text")?;
    let status = field(claim, "status")?;
    let subjects = st
        .get("subject")
        .and_then(Value::as_array)
        .filter(|s| s.len() == 1)
        .ok_or_else(|| invalid("subject is not a list of one"))?;
    let subject = &subjects[0];
    if field(subject, "name")? != format!("{realm}/{claim_id}") {
        return Err(invalid("the subject's name is not `<realm>/<claim id>`"));
    }
    let digest = subject
        .get("digest")
        .ok_or_else(|| invalid("the subject has no digest"))?;
    let subject_digest = field(digest, "sha256")?;
    Ok(Found {
        realm,
        claim,
        claim_id,
        text,
        status,
        exported_at,
        subject_digest,
    })
}
