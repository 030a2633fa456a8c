//! The status of a claim in the dialectic profile (SPEC §10), and the rules that
//! derive it.

pub use crate::protocol::kinds::ClaimStatus;
use crate::protocol::records::ClaimRec;

/// Whether a counter-claim in this status still stands against its target.
fn stands(status: ClaimStatus) -> bool {
    !matches!(status, ClaimStatus::Refuted | ClaimStatus::Superseded)
}

/// The wire names of [`ClaimStatus::ALL`], for the manifest.
pub(crate) const CLAIM_STATES: [&str; 5] = [
    ClaimStatus::ALL[0].as_str(),
    ClaimStatus::ALL[1].as_str(),
    ClaimStatus::ALL[2].as_str(),
    ClaimStatus::ALL[3].as_str(),
    ClaimStatus::ALL[4].as_str(),
];

/// The distinct identities that verified `claim` (SPEC §18.2: a second verify by
/// one identity is recorded and counts once).
pub(crate) fn verifiers(claim: &ClaimRec) -> usize {
    let mut seen: Vec<&str> = Vec::with_capacity(claim.verifications.len());
    for v in &claim.verifications {
        if !seen.contains(&v.identity.as_str()) {
            seen.push(&v.identity);
        }
    }
    seen.len()
}

/// Rules 1–5 of SPEC §10, given the current statuses of its counter-claims, with
/// rule 3 as §18.2 words it: `verified` once `quorum` (at least 1) distinct
/// identities verified it.
pub(crate) fn derive(
    claim: &ClaimRec,
    counter_statuses: &[ClaimStatus],
    quorum: usize,
) -> ClaimStatus {
    if claim.superseded_by.is_some() {
        ClaimStatus::Superseded
    } else if counter_statuses.iter().any(|s| stands(*s)) {
        ClaimStatus::Refuted
    } else if !claim.verifications.is_empty() && verifiers(claim) >= quorum.max(1) {
        ClaimStatus::Verified
    } else if !claim.attestations.is_empty() {
        ClaimStatus::Supported
    } else {
        ClaimStatus::Unverified
    }
}

#[cfg(test)]
mod tests {
    use super::ClaimStatus::*;
    use super::*;
    use crate::protocol::records::Support;

    fn claim() -> ClaimRec {
        ClaimRec {
            id: 1,
            message: 1,
            thread: 1,
            identity: "r:a".into(),
            extension: None,
            text: "t".into(),
            status: Unverified,
            evidence: vec![],
            attestations: vec![],
            verifications: vec![],
            refutations: vec![],
            refutes: None,
            supersedes: vec![],
            superseded_by: None,
            valid_until: None,
            created_at: 0,
            imported: None,
        }
    }

    fn derive1(c: &ClaimRec, counters: &[ClaimStatus]) -> ClaimStatus {
        derive(c, counters, 1)
    }

    fn verify(c: &mut ClaimRec, identity: &str) {
        c.verifications.push(Support {
            message: 9,
            identity: identity.into(),
            evidence: vec![],
            at: 0,
        });
    }

    #[test]
    fn a_quorum_counts_distinct_verifying_identities() {
        let mut c = claim();
        verify(&mut c, "r:v");
        verify(&mut c, "r:v");
        assert_eq!(verifiers(&c), 1);
        assert_eq!(
            derive(&c, &[], 2),
            Unverified,
            "the same identity counts once"
        );
        verify(&mut c, "r:w");
        assert_eq!((verifiers(&c), derive(&c, &[], 2)), (2, Verified));
        assert_eq!(derive(&c, &[], 3), Unverified);
        assert_eq!(derive(&c, &[Unverified], 2), Refuted);
        assert_eq!(derive(&c, &[], 0), Verified, "0 reads as 1");
    }

    #[test]
    fn rules_in_order() {
        let mut c = claim();
        assert_eq!(derive1(&c, &[]), Unverified);
        c.attestations.push(Support {
            message: 2,
            identity: "r:b".into(),
            evidence: vec![],
            at: 0,
        });
        assert_eq!(derive1(&c, &[]), Supported);
        c.verifications.push(Support {
            message: 3,
            identity: "r:v".into(),
            evidence: vec![],
            at: 0,
        });
        assert_eq!(derive1(&c, &[]), Verified);
        assert_eq!(derive1(&c, &[Unverified]), Refuted);
        assert_eq!(derive1(&c, &[Refuted]), Verified);
        assert_eq!(derive1(&c, &[Superseded, Supported]), Refuted);
        c.superseded_by = Some(9);
        assert_eq!(derive1(&c, &[Unverified]), Superseded);
    }

    #[test]
    fn statuses_are_stored_by_their_wire_names() {
        for s in ClaimStatus::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        assert_eq!(CLAIM_STATES[3], "refuted");
        assert!(serde_json::from_value::<ClaimStatus>("proven".into()).is_err());
    }
}
