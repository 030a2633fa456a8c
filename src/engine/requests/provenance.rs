//! The arguments of the provenance profile's artifact operations (SPEC §18.1)
//! and of `import_claim` (§18.3). `put_artifact`'s are
//! [`DecodedArtifact`](crate::DecodedArtifact), which the public
//! `decode_artifact` parses.

use serde_json::{Map, Value};

use super::{arg, bad_arg, only, Args, Refusal};
use crate::error::Reason;
use crate::protocol::artifact;
use crate::protocol::envelope;
use crate::protocol::id_types::ThreadId;
use crate::protocol::ids::IdKind;
use crate::provenance::{read_bundle, Envelope};

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

/// `import_claim`: a bundle of another realm, and the thread to post its claim
/// in (or none, for a new thread).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ImportClaim {
    /// The bundle, read as a DSSE envelope (its other checks come later, in
    /// SPEC §18.3's order).
    pub(crate) bundle: Box<Envelope>,
    /// `thread`, read as the imported `assert`'s envelope reads it: a bad one
    /// is that post's refusal (`invalid_body`), raised where the post raises
    /// its refusals, after the bundle's and `already_imported`.
    pub(crate) thread: Result<Option<u64>, Refusal>,
}

/// The refusal of a bundle that is not one (`bundle_invalid`).
pub(crate) fn bundle_invalid(why: String) -> Refusal {
    Refusal::new(Reason::BundleInvalid, why).with_field("bundle")
}

impl ImportClaim {
    pub(crate) fn parse(args: &Map<String, Value>) -> Args<Self> {
        only(args, &["bundle", "thread"])?;
        // A `null` bundle is one, and not a DSSE envelope.
        let bundle = args
            .get("bundle")
            .ok_or_else(|| bad_arg("bundle", "`bundle` is required"))?;
        let thread = match arg(args, "thread") {
            None => Ok(None),
            Some(v) => envelope::id_value(IdKind::Thread, v, "thread").map(Some),
        };
        Ok(ImportClaim {
            bundle: Box::new(read(bundle)?),
            thread,
        })
    }

    /// The request of the typed API, refused as the generic call refuses the
    /// same arguments (where a `null` argument is an absent one).
    pub(crate) fn from_typed(bundle: &Value, thread: Option<ThreadId>) -> Args<Self> {
        if bundle.is_null() {
            return Err(bad_arg("bundle", "`bundle` is required"));
        }
        Ok(ImportClaim {
            bundle: Box::new(read(bundle)?),
            thread: Ok(thread.map(ThreadId::get)),
        })
    }
}

fn read(bundle: &Value) -> Args<Envelope> {
    read_bundle(bundle).map_err(bundle_invalid)
}
