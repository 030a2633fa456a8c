//! Small enums of the wire format (SPEC §3, §7, §8.4, §10): who set a state, who
//! wrote a message, what an event records, a claim's status. Each is shown by its wire name, and views write
//! them from here.

use serde::{Deserialize, Serialize};

/// Who set a thread's state, or made a change (§7): a person or a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// A person.
    User,
    /// A model.
    Llm,
}

impl Origin {
    /// `User` for a person.
    pub const fn of(human: bool) -> Origin {
        if human {
            Origin::User
        } else {
            Origin::Llm
        }
    }

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Origin::User => "user",
            Origin::Llm => "llm",
        }
    }
}

/// Who wrote a message (§3): a model or a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthorKind {
    /// A model.
    Llm,
    /// A person.
    Human,
}

impl AuthorKind {
    /// `Human` for a person.
    pub const fn of(human: bool) -> AuthorKind {
        if human {
            AuthorKind::Human
        } else {
            AuthorKind::Llm
        }
    }

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            AuthorKind::Llm => "llm",
            AuthorKind::Human => "human",
        }
    }
}

/// What an event records (§8.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A state transition.
    Transition,
    /// The confirmation of a proposed state.
    Confirmation,
    /// A claim's status change.
    Claim,
}

impl EventKind {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventKind::Transition => "transition",
            EventKind::Confirmation => "confirmation",
            EventKind::Claim => "claim",
        }
    }
}

/// A claim's status. Stored and shown by its wire name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClaimStatus {
    /// No support yet.
    Unverified,
    /// Attested by someone other than its author.
    Supported,
    /// Sealed by a holder of the `verify` right.
    Verified,
    /// A counter-claim stands against it.
    Refuted,
    /// Replaced by a newer claim.
    Superseded,
}

impl ClaimStatus {
    /// Every status, in manifest order.
    pub const ALL: [ClaimStatus; 5] = [
        ClaimStatus::Unverified,
        ClaimStatus::Supported,
        ClaimStatus::Verified,
        ClaimStatus::Refuted,
        ClaimStatus::Superseded,
    ];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            ClaimStatus::Unverified => "unverified",
            ClaimStatus::Supported => "supported",
            ClaimStatus::Verified => "verified",
            ClaimStatus::Refuted => "refuted",
            ClaimStatus::Superseded => "superseded",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_are_what_serde_writes() {
        for o in [Origin::User, Origin::Llm] {
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
        }
        for a in [AuthorKind::Llm, AuthorKind::Human] {
            assert_eq!(serde_json::to_value(a).unwrap(), a.as_str());
        }
        for e in [
            EventKind::Transition,
            EventKind::Confirmation,
            EventKind::Claim,
        ] {
            assert_eq!(serde_json::to_value(e).unwrap(), e.as_str());
        }
        assert_eq!(Origin::of(true), Origin::User);
        assert_eq!(AuthorKind::of(false), AuthorKind::Llm);
    }
}
