//! Claim status of the dialectic profile (SPEC §10): derived, stored, and
//! recomputed up the chain of refutations whenever something it depends on changes.

use crate::error::Result;
use crate::store::records::{Change, ClaimRec};
use crate::store::WriteTx;

/// The statuses, in manifest order.
pub(crate) const CLAIM_STATES: [&str; 5] = [
    "unverified",
    "supported",
    "verified",
    "refuted",
    "superseded",
];

/// Whether a counter-claim in this status still stands against its target.
fn stands(status: &str) -> bool {
    status != "refuted" && status != "superseded"
}

/// Rules 1–5 of SPEC §10, given the current statuses of its counter-claims.
pub(crate) fn derive(claim: &ClaimRec, counter_statuses: &[String]) -> &'static str {
    if claim.superseded_by.is_some() {
        "superseded"
    } else if counter_statuses.iter().any(|s| stands(s)) {
        "refuted"
    } else if !claim.verifications.is_empty() {
        "verified"
    } else if !claim.attestations.is_empty() {
        "supported"
    } else {
        "unverified"
    }
}

/// Stores `claim` with its status recomputed, then walks up to the claim it refutes
/// while statuses keep changing. Returns each status change, in order.
pub(crate) fn store_and_propagate(
    tx: &mut dyn WriteTx,
    mut claim: ClaimRec,
) -> Result<Vec<(u64, Change)>> {
    let mut changes = Vec::new();
    loop {
        let mut counters = Vec::with_capacity(claim.refutations.len());
        for id in &claim.refutations {
            if let Some(c) = tx.claim(*id)? {
                counters.push(c.status);
            }
        }
        let status = derive(&claim, &counters);
        let changed = status != claim.status;
        if changed {
            changes.push((
                claim.thread,
                Change::Claim {
                    claim: claim.id,
                    from: claim.status.clone(),
                    to: status.to_string(),
                },
            ));
            claim.status = status.to_string();
        }
        tx.put_claim(&claim)?;
        match (changed, claim.refutes) {
            (true, Some(target)) => match tx.claim(target)? {
                Some(next) => claim = next,
                None => break,
            },
            _ => break,
        }
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::records::Support;

    fn claim() -> ClaimRec {
        ClaimRec {
            id: 1,
            message: 1,
            thread: 1,
            identity: "r:a".into(),
            extension: None,
            text: "t".into(),
            status: "unverified".into(),
            evidence: vec![],
            attestations: vec![],
            verifications: vec![],
            refutations: vec![],
            refutes: None,
            supersedes: vec![],
            superseded_by: None,
            valid_until: None,
            created_at: 0,
        }
    }

    #[test]
    fn rules_in_order() {
        let mut c = claim();
        assert_eq!(derive(&c, &[]), "unverified");
        c.attestations.push(Support {
            message: 2,
            identity: "r:b".into(),
            evidence: vec![],
            at: 0,
        });
        assert_eq!(derive(&c, &[]), "supported");
        c.verifications.push(Support {
            message: 3,
            identity: "r:v".into(),
            evidence: vec![],
            at: 0,
        });
        assert_eq!(derive(&c, &[]), "verified");
        assert_eq!(derive(&c, &["unverified".into()]), "refuted");
        assert_eq!(derive(&c, &["refuted".into()]), "verified");
        assert_eq!(
            derive(&c, &["superseded".into(), "supported".into()]),
            "refuted"
        );
        c.superseded_by = Some(9);
        assert_eq!(derive(&c, &["unverified".into()]), "superseded");
    }
}
