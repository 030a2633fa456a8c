//! The [`Session`](super::Session) methods of signed claims across realms
//! (SPEC §18.3).

use serde_json::{json, Value};

use super::{args, PostResult, Session};
use crate::error::{Error, Result};
use crate::provenance::Envelope;

impl Session<'_> {
    /// `export_claim`: the claim `id` as a bundle (a DSSE envelope) signed with
    /// this forum's realm key. `serde_json::to_value` of it is what the generic
    /// call returns under `bundle`.
    pub fn export_claim(&self, id: &str) -> Result<Envelope> {
        let a = args(json!({ "claim": id }));
        let out = self
            .forum
            .guarded(|| self.forum.export_claim(self.token(), &a))?;
        serde_json::from_value(out["bundle"].clone())
            .map_err(|e| Error::Internal(format!("an exported bundle did not read back: {e}")))
    }

    /// `import_claim`: posts, as this session, an `assert` of the claim the
    /// bundle holds (in `thread`, or a new thread), once the bundle is checked
    /// against the forum's trusted realms. `bundle` is the envelope as JSON (what
    /// the generic call's `export_claim` returned under `bundle`).
    pub fn import_claim(&self, bundle: &Value, thread: Option<&str>) -> Result<PostResult> {
        let a = args(json!({ "bundle": bundle, "thread": thread }));
        let applied = self
            .forum
            .guarded(|| self.forum.import_applied(self.token(), &a))?;
        Ok(self.post_result(applied))
    }
}
