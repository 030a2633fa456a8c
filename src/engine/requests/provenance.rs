//! The arguments of the provenance profile's artifact operations (SPEC §18.1).
//! `put_artifact`'s are [`DecodedArtifact`](crate::DecodedArtifact), which the
//! public `decode_artifact` parses.

use serde_json::{Map, Value};

use super::{arg, bad_arg, only, Args, Refusal};
use crate::protocol::artifact;

/// `get_artifact`: the artifact a `sha256:` reference names.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GetArtifact {
    /// The reference as given, for the refusal that names it.
    pub(crate) reference: String,
    pub(crate) digest: [u8; 32],
}

fn bad_reference() -> Refusal {
    bad_arg(
        "ref",
        "`ref` must be `sha256:` followed by 64 lowercase hex digits",
    )
}

impl GetArtifact {
    pub(crate) fn parse(args: &Map<String, Value>) -> Args<Self> {
        only(args, &["ref"])?;
        match arg(args, "ref") {
            None => Err(bad_arg("ref", "`ref` is required")),
            Some(Value::String(r)) => GetArtifact::from_text(r),
            Some(_) => Err(bad_arg("ref", "`ref` must be a string")),
        }
    }

    /// A reference given as text, refused as the generic call refuses it.
    pub(crate) fn from_text(reference: &str) -> Args<Self> {
        let digest = artifact::parse_reference(reference).ok_or_else(bad_reference)?;
        Ok(GetArtifact {
            reference: reference.to_string(),
            digest,
        })
    }
}
