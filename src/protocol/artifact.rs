//! Artifacts (SPEC §18.1): content-addressed bytes that evidence can point at.
//!
//! The decoding of `put_artifact`'s arguments is a pure function
//! ([`decode_artifact`]) so that a fuzz target can drive it without a forum.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use sha2::{Digest as _, Sha256};

use super::refusal::{Reason, Refusal};
use crate::time;

/// The `media_type` of an artifact put without one.
pub(crate) const DEFAULT_MEDIA_TYPE: &str = "application/octet-stream";
/// Most characters in a `media_type`.
pub(crate) const MEDIA_TYPE_MAX_CHARS: usize = 100;

/// A stored artifact: its bytes, what they are, and when they were first put.
/// Keyed by the SHA-256 of the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactRec {
    /// The `media_type` given the first time these bytes were put.
    pub media_type: String,
    /// When these bytes were first put (ms).
    pub created_at: i64,
    /// The bytes.
    pub content: Vec<u8>,
}

/// `put_artifact`'s arguments, decoded: the bytes and their media type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedArtifact {
    /// The bytes `content_base64` encodes.
    pub content: Vec<u8>,
    /// `media_type`, or `application/octet-stream` when absent.
    pub media_type: String,
}

fn bad(field: &str, message: impl Into<String>) -> Refusal {
    Refusal::new(Reason::InvalidArgument, message).with_field(field)
}

/// Decodes `put_artifact`'s arguments (SPEC §18.1): `content_base64` (required, the
/// standard base64 alphabet with its `=` padding, no whitespace, no URL-safe
/// characters: RFC 4648 §4 as written) and `media_type` (optional, 1 to 100
/// characters). Any other argument, or a malformed one, is refused with
/// `invalid_argument` naming the field. The size limit is the caller's to judge
/// (it comes after the right, SPEC §12.1).
pub fn decode_artifact(args: &Value) -> Result<DecodedArtifact, Refusal> {
    let empty = Map::new();
    let args = match args {
        Value::Null => &empty,
        Value::Object(map) => map,
        _ => {
            return Err(Refusal::new(
                Reason::InvalidArgument,
                "arguments must be a JSON object",
            ))
        }
    };
    for key in args.keys() {
        if key != "content_base64" && key != "media_type" {
            return Err(bad(key, format!("unknown argument `{key}`")));
        }
    }
    let content = match args.get("content_base64").filter(|v| !v.is_null()) {
        None => return Err(bad("content_base64", "`content_base64` is required")),
        Some(Value::String(text)) => STANDARD.decode(text).map_err(|e| {
            bad(
                "content_base64",
                format!("`content_base64` is not base64 (standard alphabet, padded): {e}"),
            )
        })?,
        Some(_) => return Err(bad("content_base64", "`content_base64` must be a string")),
    };
    let media_type = match args.get("media_type").filter(|v| !v.is_null()) {
        None => DEFAULT_MEDIA_TYPE.to_string(),
        Some(Value::String(m)) if is_media_type(m) => m.clone(),
        Some(_) => return Err(bad_media_type()),
    };
    Ok(DecodedArtifact {
        content,
        media_type,
    })
}

/// A media type: 1 to 100 characters, none a control character (it is shown in
/// views and headers as given).
fn bad_media_type() -> Refusal {
    bad(
        "media_type",
        format!(
            "`media_type` must be a string of 1-{MEDIA_TYPE_MAX_CHARS} characters, no control characters"
        ),
    )
}

/// The artifact the typed API stores: `content`, and `media_type` checked as
/// [`decode_artifact`] checks it.
pub(crate) fn typed_artifact(
    content: &[u8],
    media_type: Option<&str>,
) -> Result<DecodedArtifact, Refusal> {
    let media_type = match media_type {
        None => DEFAULT_MEDIA_TYPE.to_string(),
        Some(m) if is_media_type(m) => m.to_string(),
        Some(_) => return Err(bad_media_type()),
    };
    Ok(DecodedArtifact {
        content: content.to_vec(),
        media_type,
    })
}

fn is_media_type(text: &str) -> bool {
    let n = text.chars().count();
    (1..=MEDIA_TYPE_MAX_CHARS).contains(&n) && !text.chars().any(char::is_control)
}

/// The SHA-256 of `content`.
pub(crate) fn digest(content: &[u8]) -> [u8; 32] {
    Sha256::digest(content).into()
}

/// `sha256:<64 lowercase hex>` of a digest.
pub(crate) fn reference(digest: &[u8; 32]) -> String {
    let mut out = String::with_capacity(71);
    out.push_str("sha256:");
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// The digest a `sha256:<64 lowercase hex>` reference names; `None` for any other
/// text (uppercase hex included: SPEC §18.1 writes the form in lowercase).
pub(crate) fn parse_reference(text: &str) -> Option<[u8; 32]> {
    let hex = text.strip_prefix("sha256:")?;
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
        let nibble = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        out[i] = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

/// Encodes bytes as standard, padded base64.
pub(crate) fn encode(content: &[u8]) -> String {
    STANDARD.encode(content)
}

/// A stored artifact (SPEC §18.1), without its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Artifact {
    /// `sha256:<64 lowercase hex>`: what evidence of kind `artifact` names.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The number of bytes.
    pub size: u64,
    /// The media type given when the bytes were first put.
    pub media_type: String,
    /// When the bytes were first put.
    pub created_at: String,
}

impl Artifact {
    pub(crate) fn from_rec(digest: &[u8; 32], rec: &ArtifactRec) -> Artifact {
        Artifact {
            reference: reference(digest),
            size: rec.content.len() as u64,
            media_type: rec.media_type.clone(),
            created_at: time::format(rec.created_at),
        }
    }

    /// The artifact as every transport shows it.
    pub fn to_json(&self) -> Value {
        json!({
            "ref": self.reference, "size": self.size,
            "media_type": self.media_type, "created_at": self.created_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(args: Value) -> (Reason, Option<String>) {
        let r = decode_artifact(&args).unwrap_err();
        (r.reason, r.field)
    }

    #[test]
    fn decodes_standard_padded_base64_only() {
        let ok = decode_artifact(&json!({"content_base64": "aGVsbG8="})).unwrap();
        assert_eq!(ok.content, b"hello");
        assert_eq!(ok.media_type, DEFAULT_MEDIA_TYPE);
        let empty =
            decode_artifact(&json!({"content_base64": "", "media_type": "text/plain"})).unwrap();
        assert!(empty.content.is_empty());
        for bad_text in [
            "aGVsbG8",
            "aGVs bG8=",
            "aGVsbG8=\n",
            "aGVsbG9=",
            "-_8=",
            "a",
            "====",
            "aGVsbG8==",
        ] {
            assert_eq!(
                reason(json!({ "content_base64": bad_text })),
                (Reason::InvalidArgument, Some("content_base64".into())),
                "{bad_text:?}"
            );
        }
    }

    #[test]
    fn refuses_malformed_arguments_by_field() {
        let f = |v: Value| reason(v).1;
        assert_eq!(f(json!({})), Some("content_base64".into()));
        assert_eq!(
            f(json!({"content_base64": 5})),
            Some("content_base64".into())
        );
        assert_eq!(f(json!({"content_base64": "", "x": 1})), Some("x".into()));
        assert_eq!(
            f(json!({"content_base64": "", "media_type": ""})),
            Some("media_type".into())
        );
        let long = "a".repeat(101);
        assert_eq!(
            f(json!({"content_base64": "", "media_type": long})),
            Some("media_type".into())
        );
        assert_eq!(
            f(json!({"content_base64": "", "media_type": "a\nb"})),
            Some("media_type".into())
        );
        assert!(
            decode_artifact(&json!({"content_base64": "", "media_type": "a".repeat(100)})).is_ok()
        );
        assert_eq!(reason(json!([1])).0, Reason::InvalidArgument);
    }

    #[test]
    fn references_round_trip_in_lowercase_only() {
        let d = digest(b"hello");
        let r = reference(&d);
        assert_eq!(
            r,
            "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(parse_reference(&r), Some(d));
        assert_eq!(parse_reference(&r.to_uppercase()), None);
        assert_eq!(parse_reference(&r.replace("sha256:", "SHA256:")), None);
        assert_eq!(parse_reference(&r[..70]), None);
        assert_eq!(parse_reference("sha256:"), None);
        assert_eq!(parse_reference(&format!("{r}0")), None);
    }
}
