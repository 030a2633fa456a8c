//! The typed results of the provenance profile's artifacts (SPEC §18.1) and the
//! [`Session`](super::Session) methods that return them, and those of signed claims
//! across realms (SPEC §18.3).

use serde::Deserialize;
use serde_json::Value;

use super::{PostResult, Session};
use crate::engine::requests::provenance::{GetArtifact, ImportClaim};
use crate::engine::requests::{id_of, GetClaim};
use crate::error::{Error, Result};
pub use crate::protocol::artifact::Artifact;
use crate::protocol::artifact::{self};
use crate::protocol::id_types::{ClaimId, InvalidId, ThreadId};
use crate::provenance::Envelope;

/// A claim's quorum (SPEC §18.2): the distinct verifying identities that make it
/// `verified` (`verify_quorum`), and how many verified it so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Quorum {
    /// `verify_quorum`.
    pub needed: u64,
    /// The distinct identities that verified the claim.
    pub have: u64,
}

impl Session<'_> {
    /// Stores `content` (at most `artifact_max_bytes`) and returns its artifact;
    /// the same bytes again return the first artifact. `media_type` defaults to
    /// `application/octet-stream`.
    pub fn put_artifact(&self, content: &[u8], media_type: Option<&str>) -> Result<Artifact> {
        let f = self.forum;
        f.guarded(|| {
            let req = artifact::typed_artifact(content, media_type);
            f.put_artifact(self.token(), req)
        })
    }

    /// The artifact a `sha256:…` ref names, and its bytes.
    pub fn get_artifact(&self, reference: &str) -> Result<(Artifact, Vec<u8>)> {
        let req = GetArtifact::from_text(reference);
        let f = self.forum;
        f.guarded(|| f.get_artifact(self.token(), &req))
    }

    /// `export_claim`: the claim `id` as a bundle (a DSSE envelope) signed with
    /// this forum's realm key. `serde_json::to_value` of it is what the generic
    /// call returns under `bundle`.
    pub fn export_claim(
        &self,
        id: impl TryInto<ClaimId, Error: Into<InvalidId>>,
    ) -> Result<Envelope> {
        let req = id_of("claim", id).map(|claim| GetClaim { claim });
        let out = self
            .forum
            .guarded(|| self.forum.export_claim(self.token(), &req))?;
        serde_json::from_value(out["bundle"].clone())
            .map_err(|e| Error::Internal(format!("an exported bundle did not read back: {e}")))
    }

    /// `import_claim`: posts, as this session, an `assert` of the claim the
    /// bundle holds (in `thread`, or a new thread), once the bundle is checked
    /// against the forum's trusted realms. `bundle` is the envelope as JSON (what
    /// the generic call's `export_claim` returned under `bundle`).
    pub fn import_claim(&self, bundle: &Value, thread: Option<ThreadId>) -> Result<PostResult> {
        let f = self.forum;
        let applied = f.guarded(|| {
            let req = ImportClaim::from_typed(bundle, thread);
            f.import_applied(self.token(), &req)
        })?;
        Ok(self.post_result(applied))
    }
}
