//! Claim status of the dialectic profile (SPEC §10): derived, stored, and
//! recomputed up the chain of refutations whenever something it depends on changes.

use serde_json::Value;

use crate::error::{Error, Reason, Refusal, Result};
use crate::protocol::acts::Act;
use crate::protocol::claim::{derive, ClaimStatus};
use crate::protocol::ids::IdKind;
use crate::store::records::{Change, ClaimRec, MessageRec, Support};
use crate::store::{ReadTx, WriteTx};

/// Stores `claim` with its status recomputed (`quorum`: the distinct verifying
/// identities rule 3 needs, SPEC §18.2), then walks up to the claim it refutes
/// while statuses keep changing. Returns each status change, in order.
pub(crate) fn store_and_propagate(
    tx: &mut dyn WriteTx,
    mut claim: ClaimRec,
    quorum: usize,
) -> Result<Vec<(u64, Change)>> {
    let mut changes = Vec::new();
    loop {
        let mut counters = Vec::with_capacity(claim.refutations.len());
        for id in &claim.refutations {
            if let Some(c) = tx.claim(*id)? {
                counters.push(c.status);
            }
        }
        let status = derive(&claim, &counters, quorum);
        let changed = status != claim.status;
        if changed {
            changes.push((
                claim.thread,
                Change::Claim {
                    claim: claim.id,
                    from: claim.status,
                    to: status,
                },
            ));
            claim.status = status;
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

/// A new claim of `message` (an assert, or a refute's counter-claim), unverified.
fn new_claim(tx: &mut dyn WriteTx, message: &MessageRec, refutes: Option<u64>) -> Result<ClaimRec> {
    Ok(ClaimRec {
        id: tx.next_id(IdKind::Claim)?,
        message: message.id,
        thread: message.thread,
        identity: message.identity.clone(),
        extension: message.extension.clone(),
        text: message.body.clone(),
        status: ClaimStatus::Unverified,
        evidence: message.evidence.clone(),
        attestations: Vec::new(),
        verifications: Vec::new(),
        refutations: Vec::new(),
        refutes,
        supersedes: message.supersedes.clone(),
        superseded_by: None,
        valid_until: message.valid_until,
        created_at: message.created_at,
        imported: None,
    })
}

/// Applies the dialectic act of `message` (§10): an assert creates a claim and
/// supersedes `superseded`; attest and verify support `claim`; a refute creates a
/// counter-claim against it. Sets the message's claim fields, adds each status
/// change to `changes`, and returns the claim the post's result shows. `quorum`
/// is rule 3's (SPEC §18.2).
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply(
    tx: &mut dyn WriteTx,
    act: Act,
    message: &mut MessageRec,
    claim: Option<ClaimRec>,
    superseded: Vec<ClaimRec>,
    now: i64,
    quorum: usize,
    changes: &mut Vec<(u64, Change)>,
) -> Result<Option<u64>> {
    match act {
        Act::Assert => {
            let claim = new_claim(tx, message, None)?;
            message.claim = Some(claim.id);
            tx.put_claim(&claim)?;
            for mut old in superseded {
                old.superseded_by = Some(claim.id);
                changes.extend(store_and_propagate(tx, old, quorum)?);
            }
            Ok(Some(claim.id))
        }
        Act::Attest | Act::Verify => {
            let mut target = claim.expect("resolved for attest and verify");
            message.claim = Some(target.id);
            let support = Support {
                message: message.id,
                identity: message.identity.clone(),
                evidence: message.evidence.clone(),
                at: now,
            };
            if act == Act::Attest {
                target.attestations.push(support);
            } else {
                target.verifications.push(support);
            }
            // Not created, but the caller wants to see the status it moved.
            let shown = target.id;
            changes.extend(store_and_propagate(tx, target, quorum)?);
            Ok(Some(shown))
        }
        Act::Refute => {
            let mut target = claim.expect("resolved for refute");
            let counter = new_claim(tx, message, Some(target.id))?;
            tx.put_claim(&counter)?;
            message.claim = Some(target.id);
            message.counter_claim = Some(counter.id);
            target.refutations.push(counter.id);
            changes.extend(store_and_propagate(tx, target, quorum)?);
            Ok(Some(counter.id))
        }
        _ => Ok(None),
    }
}

/// A claim as `get_claim` shows it (SPEC §10): its record, each counter-claim's id,
/// message and current status, and the time its expiry is judged at.
pub(crate) struct ClaimParts {
    pub(crate) claim: ClaimRec,
    pub(crate) refutations: Vec<(u64, u64, ClaimStatus)>,
    pub(crate) now: i64,
    /// `verify_quorum` with the provenance profile on (SPEC §18.2), else `None`.
    pub(crate) quorum: Option<usize>,
}

impl ClaimParts {
    pub(crate) fn json(&self) -> Value {
        super::view::claim(&self.claim, &self.refutations, self.now, self.quorum)
    }
}

/// Claim `id` with what its view needs, read at `now`, with the forum's `quorum`
/// when the provenance profile is on.
pub(crate) fn parts(
    tx: &dyn ReadTx,
    id: u64,
    now: i64,
    quorum: Option<usize>,
) -> Result<ClaimParts> {
    let claim = tx.claim(id)?.ok_or_else(|| {
        Error::from(Refusal::new(
            Reason::ClaimNotFound,
            format!("{} does not exist", IdKind::Claim.key(id)),
        ))
    })?;
    let mut refutations = Vec::with_capacity(claim.refutations.len());
    for counter in &claim.refutations {
        if let Some(c) = tx.claim(*counter)? {
            refutations.push((c.id, c.message, c.status));
        }
    }
    Ok(ClaimParts {
        claim,
        refutations,
        now,
        quorum,
    })
}
