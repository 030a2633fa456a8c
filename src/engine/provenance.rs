//! The provenance profile (SPEC §18): artifacts and the evidence that points at
//! them (§18.1). Signed claims across realms (§18.3) live beside it.
//!
//! Checks run in the order of §12.1: the profile (an operation of a profile that
//! is off does not exist), the token, the arguments, the right, the references,
//! then the limit. An artifact is written once per digest: the same bytes again
//! return the first artifact (its `media_type` and `created_at`), nothing written.

use serde_json::{json, Map, Value};

use super::requests::provenance::GetArtifact;
use super::requests::Args;
use super::tokens::Right;
use super::Forum;
use crate::error::{Reason, Refusal, Result};
use crate::protocol::artifact::Artifact;
use crate::protocol::artifact::{self, decode_artifact, ArtifactRec, DecodedArtifact};
use crate::protocol::evidence::{Evidence, EvidenceKind};
use crate::store::ReadTx;

/// The profile's operations, in the order of SPEC §18.4, as the manifest lists
/// them under `profiles.provenance`.
pub(crate) const OPERATIONS: [&str; 4] = [
    "put_artifact",
    "get_artifact",
    "export_claim",
    "import_claim",
];

/// The profile's artifact operations (SPEC §18.1), dispatched together.
pub(crate) const ARTIFACT_OPERATIONS: [&str; 2] = ["put_artifact", "get_artifact"];

/// The profile's operations on claims (SPEC §18.3): offered only where the
/// dialectic profile gives claims.
pub(crate) const CLAIM_OPERATIONS: [&str; 2] = ["export_claim", "import_claim"];

fn not_found(reference: &str) -> Refusal {
    Refusal::new(
        Reason::ArtifactNotFound,
        format!("no artifact {reference} is stored here; put_artifact it first"),
    )
}

impl Forum {
    /// Refuses an operation of the provenance profile while it is off: to the
    /// generic call it does not exist (SPEC §18, as §16).
    pub(crate) fn provenance_on(&self, operation: &str) -> Result<()> {
        if self.config.provenance {
            Ok(())
        } else {
            Err(Refusal::new(
                Reason::InvalidArgument,
                format!("unknown operation `{operation}`: the provenance profile is off"),
            )
            .into())
        }
    }

    /// The distinct verifying identities that make a claim `verified`:
    /// `verify_quorum` with the provenance profile on, else 1 (SPEC §10 as in v1).
    pub(crate) fn quorum(&self) -> usize {
        if self.config.provenance {
            self.config.limits.verify_quorum
        } else {
            1
        }
    }

    /// The quorum a claim's view shows (SPEC §18.2): only with the profile on.
    pub(crate) fn shown_quorum(&self) -> Option<usize> {
        self.config
            .provenance
            .then_some(self.config.limits.verify_quorum)
    }

    /// `put_artifact` (SPEC §18.1): stores the bytes once, under their SHA-256.
    pub(crate) fn put_artifact(
        &self,
        token: Option<&str>,
        req: std::result::Result<DecodedArtifact, Refusal>,
    ) -> Result<Artifact> {
        self.provenance_on("put_artifact")?;
        let mut tx = self.store.write()?;
        let caller = self.authenticate(&*tx, token)?;
        let decoded = req?;
        caller.require(Right::Write)?;
        let max = self.config.limits.artifact_max_bytes;
        if decoded.content.len() > max {
            return Err(Refusal::new(
                Reason::LimitExceeded,
                format!(
                    "the artifact has {} bytes; at most artifact_max_bytes ({max}) are stored",
                    decoded.content.len()
                ),
            )
            .with_field("content_base64")
            .with_limit(crate::Limit::ArtifactMaxBytes)
            .into());
        }
        let digest = artifact::digest(&decoded.content);
        if let Some(first) = tx.artifact(&digest)? {
            // Nothing to write: the transaction ends unused.
            return Ok(Artifact::from_rec(&digest, &first));
        }
        let rec = ArtifactRec {
            media_type: decoded.media_type,
            created_at: self.now(),
            content: decoded.content,
        };
        tx.put_artifact(&digest, &rec)?;
        tx.commit()?;
        Ok(Artifact::from_rec(&digest, &rec))
    }

    /// `get_artifact` (SPEC §18.1): the artifact and its bytes.
    pub(crate) fn get_artifact(
        &self,
        token: Option<&str>,
        req: &Args<GetArtifact>,
    ) -> Result<(Artifact, Vec<u8>)> {
        self.provenance_on("get_artifact")?;
        let tx = self.store.read()?;
        let caller = self.authenticate(&*tx, token)?;
        let GetArtifact { reference, digest } = req.as_ref().map_err(Clone::clone)?;
        caller.require(Right::Read)?;
        let rec = tx.artifact(digest)?.ok_or_else(|| not_found(reference))?;
        Ok((Artifact::from_rec(digest, &rec), rec.content))
    }

    /// The generic call's JSON of the artifact operations.
    pub(crate) fn provenance_call(
        &self,
        token: Option<&str>,
        operation: &str,
        args: &Value,
    ) -> Result<Value> {
        match operation {
            "put_artifact" => {
                let artifact = self.put_artifact(token, decode_artifact(args))?;
                Ok(json!({ "artifact": artifact.to_json() }))
            }
            _ => {
                let empty = Map::new();
                let args = args.as_object().unwrap_or(&empty);
                let req = GetArtifact::parse(args);
                let (artifact, content) = self.get_artifact(token, &req)?;
                Ok(json!({
                    "artifact": artifact.to_json(),
                    "content_base64": artifact::encode(&content),
                }))
            }
        }
    }
}

impl Forum {
    /// Refuses a post whose evidence names a `sha256:` artifact not stored here
    /// (SPEC §18.1), with the provenance profile on (off, every ref passes as in
    /// v1). Among the references of §12.1's 404 group, these are checked first.
    /// Other `artifact` refs pass, as in v1.
    pub(crate) fn check_artifacts(&self, tx: &dyn ReadTx, evidence: &[Evidence]) -> Result<()> {
        if self.config.provenance {
            check_evidence(tx, evidence)?;
        }
        Ok(())
    }
}

fn check_evidence(tx: &dyn ReadTx, evidence: &[Evidence]) -> Result<()> {
    for item in evidence {
        if item.kind != EvidenceKind::Artifact {
            continue;
        }
        if let Some(digest) = artifact::parse_reference(&item.reference) {
            if !tx.has_artifact(&digest)? {
                return Err(not_found(&item.reference).with_field("evidence").into());
            }
        }
    }
    Ok(())
}
