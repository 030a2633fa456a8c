//! The speech acts (SPEC §4, §10) as one table: the engine's field rules and the
//! manifest are both read from it, so they cannot drift apart.

/// A speech act: the `kind` of an envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Act {
    /// Poses a question; with no thread it opens one.
    Ask,
    /// Answers; marks the thread `answered`.
    Answer,
    /// Adds information; expects no reply.
    Note,
    /// Proposes a decision to the thread's creator.
    Propose,
    /// Disputes the parent message.
    Object,
    /// Passes the turn on.
    Handoff,
    /// Records the thread's decision.
    Decide,
    /// Sets the thread's state.
    Mark,
    /// Opens a closed or side-state thread again.
    Reopen,
    /// Dialectic: states a claim.
    Assert,
    /// Dialectic: supports a claim with evidence.
    Attest,
    /// Dialectic: refutes a claim with counter-evidence.
    Refute,
    /// Dialectic: seals a claim.
    Verify,
}

/// What an act needs beyond a valid token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Needs {
    /// The `write` right.
    Write,
    /// `write` and authority over the thread (§7.2).
    Authority,
    /// `write` and reopen authority (§7.2).
    ReopenAuthority,
    /// `write` and the `verify` right.
    Verify,
}

impl Needs {
    /// The manifest's word for it.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Needs::Write => "write",
            Needs::Authority => "authority",
            Needs::ReopenAuthority => "reopen_authority",
            Needs::Verify => "verify",
        }
    }
}

/// One row of the act table.
#[derive(Debug)]
pub(crate) struct ActSpec {
    /// The act.
    pub act: Act,
    /// Its wire name.
    pub kind: &'static str,
    /// What it does, for the manifest.
    pub summary: &'static str,
    /// What it needs.
    pub needs: Needs,
    /// Whether it hands the turn to someone.
    pub expects_reply: bool,
    /// Who is due after it, for the manifest.
    pub turn: &'static str,
    /// Envelope fields it requires besides `kind`.
    pub required: &'static [&'static str],
    /// Envelope fields it accepts besides `kind` and `parley`.
    pub optional: &'static [&'static str],
    /// `Some("dialectic")` for the profile's acts.
    pub profile: Option<&'static str>,
}

const PLACE: [&str; 4] = ["thread", "parent", "from", "provenance"];
/// Accepted on every act (SPEC §14.3).
const RETRY: &str = "idempotency_key";

macro_rules! fields {
    ($($f:literal),*) => { &[$($f,)* PLACE[0], PLACE[1], PLACE[2], PLACE[3], RETRY] };
}

/// The core acts then the dialectic acts, in manifest order.
pub(crate) const ACTS: &[ActSpec] = &[
    ActSpec { act: Act::Ask, kind: "ask", summary: "Poses a question. Without thread or parent it opens a new thread.", needs: Needs::Write, expects_reply: true,
        turn: "`to` if given; else the parent's author; else (new thread) anyone", required: &["body"], optional: fields!("to"), profile: None },
    ActSpec { act: Act::Answer, kind: "answer", summary: "Answers the nearest question above; marks the thread answered.", needs: Needs::Write, expects_reply: true,
        turn: "the author of the nearest ask at or above the parent (else the root's author)", required: &["body"], optional: fields!(), profile: None },
    ActSpec { act: Act::Note, kind: "note", summary: "Adds information; expects no reply.", needs: Needs::Write, expects_reply: false,
        turn: "unchanged", required: &["body"], optional: fields!(), profile: None },
    ActSpec { act: Act::Propose, kind: "propose", summary: "Proposes a decision to the thread's creator.", needs: Needs::Write, expects_reply: true,
        turn: "the thread's creator", required: &["body"], optional: fields!(), profile: None },
    ActSpec { act: Act::Object, kind: "object", summary: "Disputes the parent message; its author is due to respond.", needs: Needs::Write, expects_reply: true,
        turn: "the parent's author", required: &["body"], optional: fields!(), profile: None },
    ActSpec { act: Act::Handoff, kind: "handoff", summary: "Passes the turn on to the identity named in `to` (\"not me — you\").", needs: Needs::Write, expects_reply: true,
        turn: "`to`", required: &["body", "to"], optional: fields!(), profile: None },
    ActSpec { act: Act::Decide, kind: "decide", summary: "Records the thread's decision; marks the whole thread decided.", needs: Needs::Authority, expects_reply: false,
        turn: "nobody", required: &["body"], optional: fields!("if_state"), profile: None },
    ActSpec { act: Act::Mark, kind: "mark", summary: "Sets the thread's state to `state`; a confirmer repeating an unconfirmed state confirms it.", needs: Needs::Authority, expects_reply: false,
        turn: "nobody", required: &["body", "state"], optional: fields!("if_state"), profile: None },
    ActSpec { act: Act::Reopen, kind: "reopen", summary: "Opens a closed or side-state thread again.", needs: Needs::ReopenAuthority, expects_reply: true,
        turn: "`to` if given; else anyone", required: &["body"], optional: fields!("to", "if_state"), profile: None },
    ActSpec { act: Act::Assert, kind: "assert", summary: "States a claim (creates cl_…), optionally with evidence; without thread or parent it opens a new thread.", needs: Needs::Write, expects_reply: false,
        turn: "new thread: anyone; nested: unchanged", required: &["body"], optional: fields!("evidence", "supersedes", "valid_until"), profile: Some("dialectic") },
    ActSpec { act: Act::Attest, kind: "attest", summary: "Supports a claim with at least one evidence pointer.", needs: Needs::Write, expects_reply: false,
        turn: "unchanged", required: &["body", "claim", "evidence"], optional: fields!(), profile: Some("dialectic") },
    ActSpec { act: Act::Refute, kind: "refute", summary: "Refutes a claim with counter-evidence; creates a counter-claim cl_….", needs: Needs::Write, expects_reply: true,
        turn: "the claim's author", required: &["body", "claim", "evidence"], optional: fields!(), profile: Some("dialectic") },
    ActSpec { act: Act::Verify, kind: "verify", summary: "Seals a claim as verified (needs the verify right).", needs: Needs::Verify, expects_reply: false,
        turn: "unchanged", required: &["body", "claim"], optional: fields!("evidence"), profile: Some("dialectic") },
];

impl Act {
    /// The row of the table for this act.
    pub(crate) fn spec(self) -> &'static ActSpec {
        ACTS.iter()
            .find(|s| s.act == self)
            .expect("every act has a row")
    }

    /// The act with this wire name, among the enabled ones.
    pub fn from_kind(kind: &str, dialectic: bool) -> Option<Act> {
        ACTS.iter()
            .find(|s| s.kind == kind && (s.profile.is_none() || dialectic))
            .map(|s| s.act)
    }

    /// The wire name.
    pub fn kind(self) -> &'static str {
        self.spec().kind
    }

    /// Content acts reply to their parent and so fall under `self_reply` (§4).
    pub fn is_content(self) -> bool {
        matches!(
            self,
            Act::Ask
                | Act::Answer
                | Act::Note
                | Act::Propose
                | Act::Object
                | Act::Handoff
                | Act::Assert
        )
    }

    /// Acts allowed to open a new thread.
    pub fn may_open_thread(self) -> bool {
        matches!(self, Act::Ask | Act::Assert)
    }

    /// Acts of the dialectic profile that name a `claim`.
    pub fn names_claim(self) -> bool {
        matches!(self, Act::Attest | Act::Refute | Act::Verify)
    }
}

impl serde::Serialize for Act {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.kind())
    }
}

/// Any act of the table by its wire name, the dialectic ones included: what a
/// forum returned, it has enabled.
impl<'de> serde::Deserialize<'de> for Act {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let kind = String::deserialize(deserializer)?;
        Act::from_kind(&kind, true)
            .ok_or_else(|| serde::de::Error::custom(format!("`{kind}` is not an act")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nine_core_four_dialectic() {
        assert_eq!(ACTS.iter().filter(|s| s.profile.is_none()).count(), 9);
        assert_eq!(ACTS.len(), 13);
        assert_eq!(Act::from_kind("assert", false), None);
        assert_eq!(Act::from_kind("assert", true), Some(Act::Assert));
        for s in ACTS {
            assert_eq!(s.act.kind(), s.kind);
        }
    }
}
