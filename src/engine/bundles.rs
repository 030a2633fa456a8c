//! `export_claim` and `import_claim` (SPEC §18.3): a claim leaves as a bundle
//! signed with the realm key, and a bundle of a trusted realm arrives as an
//! `assert` whose claim remembers where it came from.

use serde_json::{json, Value};

use super::claims;
use super::post::{Applied, PostJob, Poster};
use super::requests::provenance::{bundle_invalid, ImportClaim};
use super::requests::{Args, GetClaim};
use super::tokens::{presented, Caller, Right};
use super::Forum;
use crate::error::{Error, Reason, Refusal, Result};
use crate::protocol::envelope::{check_draft, Checked, Draft, Pointer};
use crate::protocol::ids::IdKind;
use crate::provenance::{export_bundle, verify_envelope, BundleError};
use crate::store::records::ImportedRec;
use crate::store::WriteTx;

impl Forum {
    /// `export_claim` (`claim`), needs `read`: `{ "bundle": <DSSE envelope> }` of
    /// the claim as `get_claim` shows it now, exported at the engine's clock.
    pub(crate) fn export_claim(&self, token: Option<&str>, req: &Args<GetClaim>) -> Result<Value> {
        let claim = self.get_claim(token, req)?.json();
        let at = crate::time::format(self.now());
        let bundle = export_bundle(&self.realm_secret, &self.config.realm, &claim, &at);
        Ok(json!({ "bundle": bundle }))
    }

    /// `import_claim` (`bundle`, `thread`?), needs `write`, in SPEC §18.3's
    /// order: token, the bundle's form (`bundle_invalid`), the `write` right,
    /// the realm and its signature (`realm_untrusted`), `already_imported` (in
    /// the write transaction), then the post's own checks. Returns what `post`
    /// returns, before it is shown.
    pub(crate) fn import_applied(
        &self,
        token: Option<&str>,
        req: &Args<ImportClaim>,
    ) -> Result<Applied> {
        let caller = self.authenticate(&*self.store.read()?, token)?;
        let ImportClaim { bundle, thread } = req.as_ref().map_err(Clone::clone)?;
        let verdict = verify_envelope(bundle, &self.trusted);
        if let Err(BundleError::Invalid(why)) = verdict {
            return Err(bundle_invalid(why).into());
        }
        caller.require(Right::Write)?;
        let found =
            verdict.map_err(|e| Error::from(Refusal::new(Reason::RealmUntrusted, e.message())))?;
        let body: String = found
            .text
            .chars()
            .take(self.config.limits.body_max_chars)
            .collect();
        let mut draft = Draft::new("assert", &body);
        draft.evidence.push(Pointer {
            kind: "hash".into(),
            note: Some(format!(
                "{}/{}: {}",
                found.realm, found.claim_id, found.status
            )),
            reference: format!("sha256:{}", found.digest),
        });
        // `thread` is the first field the check reads that can be refused, so
        // its refusal stands for the check's.
        let checked = thread.clone().and_then(|thread| {
            draft.thread = thread.map(|n| IdKind::Thread.key(n));
            check_draft(&draft, &self.config.limits, self.config.dialectic)
        });
        let job = PostJob {
            token: presented(token),
            checked,
            import: Some(Box::new(ImportedRec {
                realm: found.realm,
                claim: found.claim_id,
                status: found.status,
                exported_at: found.exported_at,
                key: found.key,
            })),
        };
        self.group.submit(job, &Poster(self))
    }

    /// `import_claim`, as the generic call shows it.
    pub(crate) fn import_claim(
        &self,
        token: Option<&str>,
        req: &Args<ImportClaim>,
    ) -> Result<Value> {
        let guards = self.config.guards;
        self.import_applied(token, req).map(|a| a.render(guards))
    }

    /// The import's post inside the batch's transaction: `already_imported`
    /// first (so two racing imports of one claim cannot both land), then the post
    /// as any other, then the claim's origin and the import's record. Only a
    /// storage failure can stop it after the post is written, and that fails the
    /// whole transaction.
    pub(super) fn apply_import(
        &self,
        tx: &mut dyn WriteTx,
        caller: &Caller,
        checked: std::result::Result<Checked, Refusal>,
        import: &ImportedRec,
    ) -> Result<Applied> {
        caller.require(Right::Write)?;
        if let Some(local) = tx.imported_claim(&import.realm, &import.claim)? {
            return Err(Refusal::new(
                Reason::AlreadyImported,
                format!(
                    "{}/{} was already imported here, as {}",
                    import.realm,
                    import.claim,
                    crate::protocol::ids::IdKind::Claim.key(local)
                ),
            )
            .into());
        }
        let now = self.now();
        let mut applied = self.apply(tx, caller, checked?, now)?;
        let id = applied
            .message
            .claim
            .ok_or_else(|| Error::storage("an assert made no claim".to_owned()))?;
        let mut claim = tx
            .claim(id)?
            .ok_or_else(|| Error::storage("the imported claim is missing".to_owned()))?;
        claim.imported = Some(import.clone());
        tx.put_claim(&claim)?;
        tx.put_imported(&import.realm, &import.claim, id)?;
        applied.claim = Some(claims::parts(tx, id, now, self.shown_quorum())?);
        Ok(applied)
    }
}
