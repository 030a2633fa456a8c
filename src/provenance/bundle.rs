//! The bundle of SPEC §18.3: a DSSE envelope over an in-toto Statement v1 whose
//! predicate is a claim (`https://parley.dev/claim/v1`), signed with Ed25519.

use super::canonical::{canonical_json, claim_digest};
use super::key::{RealmKey, RealmSecret};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// DSSE's `payloadType` of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// The statement's `_type`.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The statement's `predicateType`.
pub const PREDICATE_TYPE: &str = "https://parley.dev/claim/v1";

/// A DSSE envelope, as it travels (field names as DSSE writes them). Unknown
/// fields are refused, so that no byte of a bundle is outside what is checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// `application/vnd.in-toto+json`.
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// Standard base64 (with padding) of the statement's bytes.
    pub payload: String,
    /// The signatures; one, by the realm key, in a bundle this crate makes.
    pub signatures: Vec<EnvelopeSignature>,
}

/// One signature of a DSSE envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvelopeSignature {
    /// The realm key's text form, `ed25519:…`.
    pub keyid: String,
    /// Standard base64 of the 64-byte Ed25519 signature of the PAE.
    pub sig: String,
}

/// DSSE's pre-authentication encoding:
/// `"DSSEv1" SP len(type) SP type SP len(payload) SP payload`, lengths in ASCII
/// decimal bytes, `payload` the raw bytes (not their base64).
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + payload_type.len() + 32);
    out.extend_from_slice(b"DSSEv1 ");
    out.extend_from_slice(payload_type.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload_type.as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload);
    out
}

/// The in-toto statement of a claim: `claim` is `get_claim`'s result (§10),
/// whose `id` names the subject `<realm>/<claim id>`.
pub fn statement(realm: &str, claim: &Value, exported_at: &str) -> Value {
    let id = claim.get("id").and_then(Value::as_str).unwrap_or_default();
    json!({
        "_type": STATEMENT_TYPE,
        "subject": [ { "name": format!("{realm}/{id}"), "digest": { "sha256": claim_digest(claim) } } ],
        "predicateType": PREDICATE_TYPE,
        "predicate": { "realm": realm, "claim": claim, "exported_at": exported_at },
    })
}

/// Signs a statement: its canonical bytes become the payload, the signature is
/// over their PAE, and `keyid` is the realm key's text.
pub fn sign_statement(secret: &RealmSecret, statement: &Value) -> Envelope {
    let payload = canonical_json(statement);
    let sig = secret.sign(&pae(PAYLOAD_TYPE, &payload));
    Envelope {
        payload_type: PAYLOAD_TYPE.to_owned(),
        payload: STANDARD.encode(&payload),
        signatures: vec![EnvelopeSignature {
            keyid: secret.public().to_string(),
            sig: STANDARD.encode(sig),
        }],
    }
}

/// The bundle (DSSE envelope, as JSON) of a claim exported by `realm`.
pub fn export_bundle(secret: &RealmSecret, realm: &str, claim: &Value, exported_at: &str) -> Value {
    let envelope = sign_statement(secret, &statement(realm, claim, exported_at));
    serde_json::to_value(envelope).unwrap_or(Value::Null)
}

/// Whether one of `envelope`'s signatures is `key`'s over the PAE of `payload`.
/// A signature counts only under its own key id: a `keyid` that is not this key's
/// text does not verify, so that no byte of the envelope goes unchecked.
pub(crate) fn signed_by(envelope: &Envelope, payload: &[u8], key: &RealmKey) -> bool {
    let keyid = key.to_string();
    let message = pae(&envelope.payload_type, payload);
    envelope.signatures.iter().any(|s| {
        s.keyid == keyid
            && STANDARD
                .decode(&s.sig)
                .is_ok_and(|sig| key.verify(&message, &sig))
    })
}
