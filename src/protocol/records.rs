//! The records of a forum: what the engine reads and writes through the storage
//! interface, one type per kind of record. The domain's data, so they live with the
//! protocol; `store::records` names them for backends.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::protocol::acts::Act;
use crate::protocol::evidence::Evidence;
use crate::protocol::kinds::ClaimStatus;
use crate::protocol::rights::Rights;
use crate::protocol::state::State;

pub use crate::protocol::artifact::ArtifactRec;
pub use crate::protocol::coordination::{LeaseMode, LeaseRec, PresenceRec, PresenceStatus};

/// A post remembered under its idempotency key (SPEC §14.3): which message it
/// made, when, and the digest of its envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remembered {
    /// The message the post created.
    pub message: u64,
    /// When it was posted (ms): the message's `created_at`.
    pub at: i64,
    /// The envelope's digest without the key (64 bits of its SHA-256).
    pub digest: u64,
}

impl Remembered {
    /// The post of `message` as its key remembers it: its time and digest are the
    /// message's. `None` for a message posted without a key.
    pub fn of(message: &MessageRec) -> Option<Remembered> {
        let key = message.key.as_ref()?;
        Some(Remembered {
            message: message.id,
            at: message.created_at,
            digest: key.digest,
        })
    }
}

/// A token, found by the first half of the SHA-256 of its secret.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenRec {
    /// Hex SHA-256 of the secret, compared in constant time.
    pub digest: String,
    /// `<realm>:<handle>` or `human:<name>`.
    pub identity: String,
    /// `true` for a human token.
    pub human: bool,
    /// Rights of an llm token (a human holds all).
    pub rights: Rights,
    /// Shown as `KI · <label>`.
    pub label: String,
    /// Revoked tokens stay, so that revocation is final.
    pub revoked: bool,
    /// When it was issued.
    pub created_at: i64,
}

/// An identity the forum has issued a token to.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IdentityRec {
    /// `true` for a human.
    pub human: bool,
    /// Label of the newest token.
    pub label: String,
    /// Tokens issued, revoked ones included.
    pub tokens: u64,
    /// Tokens revoked.
    pub revoked: u64,
    /// First issue.
    pub created_at: i64,
}

/// Who is due (SPEC §5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Awaiting {
    /// An identity or `"*"`.
    pub identity: String,
    /// The awaited extension, or `None` for any.
    pub extension: Option<String>,
    /// The message that set the turn.
    pub message: u64,
}

/// A thread and its summary fields. Stored in the binary form of `codec`.
#[derive(Debug, Clone)]
pub struct ThreadRec {
    /// `th_<id>`.
    pub id: u64,
    /// The root message.
    pub root: u64,
    /// First line of the root body, at most 80 characters.
    pub topic: String,
    /// Creator identity.
    pub creator: String,
    /// Creator extension.
    pub creator_extension: Option<String>,
    /// The state.
    pub state: State,
    /// `true` when set by a human (`state_origin = user`).
    pub state_by_user: bool,
    /// When the state was confirmed; `None` while a proposal.
    pub state_confirmed_at: Option<i64>,
    /// The token label of the lock-right holder who set or confirmed the state,
    /// shown as `KI · <label>` (see `engine::view::lock_label`).
    pub state_label: Option<String>,
    /// Who is due.
    pub awaiting: Option<Awaiting>,
    /// Messages, root included.
    pub message_count: u64,
    /// Creation time.
    pub created_at: i64,
    /// Time of the latest message.
    pub updated_at: i64,
    /// Id of the latest message: the thread's position in the activity index.
    pub last_message: u64,
    /// The root message's act (`ask` or `assert`).
    pub root_kind: Act,
    /// Hash of the normalized body of each identity's latest message here: all
    /// the repeat guard needs, without reading that message back.
    pub last_body: std::collections::BTreeMap<String, u64>,
    /// The guards profile's count and echo window (SPEC §15).
    pub guards: GuardState,
}

impl ThreadRec {
    /// Closed and confirmed.
    pub fn locked(&self) -> bool {
        self.state == State::Closed && self.state_confirmed_at.is_some()
    }

    /// The fields its index entries are made of.
    pub fn spot(&self) -> ThreadSpot {
        ThreadSpot {
            awaiting: self.awaiting.clone(),
            state: self.state,
            last_message: self.last_message,
        }
    }
}

/// One message of the echo window: who wrote it and the hash of its folded body.
/// The author is kept as a hash, not its text: the window is decoded, cloned and
/// rewritten with its thread by every post, and its author's text is needed only
/// to name it in a refusal, where the thread's `last_body` has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recent {
    /// The message.
    pub message: u64,
    /// The guards' `author_hash` of its author's identity.
    pub author: u64,
    /// The folded-body hash (SPEC §15) of its body.
    pub hash: u64,
}

/// What the guards profile (SPEC §15) keeps per thread, with its record; see
/// `protocol::guards` for how it is kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GuardState {
    /// Content messages by `llm` authors since the last progress.
    pub since_progress: u32,
    /// The newest messages the echo rule may need, newest first.
    pub recent: Vec<Recent>,
}

/// Where a thread's record sits in the turn and activity indexes: a post that moves
/// the thread drops these entries, so it keeps them rather than a copy of the
/// whole record.
#[derive(Debug, Clone)]
pub struct ThreadSpot {
    /// Whose turn it was.
    pub awaiting: Option<Awaiting>,
    /// Its state.
    pub state: State,
    /// Its latest message.
    pub last_message: u64,
}

/// What the digest (SPEC §17) needs of every message of a thread: its place in
/// the tree and its act. Read from the front of a stored message, so a long
/// thread is summed up without decoding its bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageHead {
    /// `msg_<id>`.
    pub id: u64,
    /// The act.
    pub kind: Act,
    /// Its parent; `None` for a root.
    pub parent: Option<u64>,
}

/// A message. Stored in the binary form of `codec`, not as JSON.
#[derive(Debug, Clone)]
pub struct MessageRec {
    /// `msg_<id>`.
    pub id: u64,
    /// The act's wire name.
    pub kind: Act,
    /// Its thread.
    pub thread: u64,
    /// Its parent; `None` for a root.
    pub parent: Option<u64>,
    /// Depth in the tree; the root is 0.
    pub depth: u32,
    /// Author identity.
    pub identity: String,
    /// Author extension.
    pub extension: Option<String>,
    /// `true` when written with a human token.
    pub human: bool,
    /// The body.
    pub body: String,
    /// Creation time.
    pub created_at: i64,
    /// `to`, when sent.
    pub to: Option<String>,
    /// `state`, on mark.
    pub state: Option<State>,
    /// `provenance`, when sent.
    pub provenance: Option<Map<String, Value>>,
    /// The claim it created (assert) or names (attest, refute, verify).
    pub claim: Option<u64>,
    /// The counter-claim a refute created.
    pub counter_claim: Option<u64>,
    /// Evidence items.
    pub evidence: Vec<Evidence>,
    /// Claims an assert supersedes.
    pub supersedes: Vec<u64>,
    /// An assert's expiry.
    pub valid_until: Option<i64>,
    /// The idempotency key its post was made under, if any.
    pub key: Option<PostKey>,
}

/// The idempotency key of a post (SPEC §14.3), kept in its message's record: the
/// replay check reads the digest there, and the expiry of keys finds the key's
/// index entry from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostKey {
    /// The key as the caller sent it.
    pub key: String,
    /// The envelope's digest without the key (64 bits of its SHA-256).
    pub digest: u64,
}

#[cfg(test)]
impl ThreadRec {
    /// An open thread of `a` whose root is `root`, every optional field empty.
    pub(crate) fn bare(id: u64, root: u64) -> ThreadRec {
        ThreadRec {
            id,
            root,
            topic: format!("topic {id}"),
            creator: "a".into(),
            creator_extension: None,
            state: crate::protocol::state::State::Open,
            state_by_user: false,
            state_confirmed_at: None,
            state_label: None,
            awaiting: None,
            message_count: 1,
            created_at: 0,
            updated_at: 0,
            last_message: root,
            root_kind: Act::Ask,
            last_body: Default::default(),
            guards: Default::default(),
        }
    }
}

#[cfg(test)]
impl MessageRec {
    /// A note of `a` with every optional field empty.
    pub(crate) fn bare(id: u64, thread: u64, parent: Option<u64>) -> MessageRec {
        MessageRec {
            id,
            kind: Act::Note,
            thread,
            parent,
            depth: 0,
            identity: "a".into(),
            extension: None,
            human: false,
            body: format!("body {id}"),
            created_at: 0,
            to: None,
            state: None,
            provenance: None,
            claim: None,
            counter_claim: None,
            evidence: vec![],
            supersedes: vec![],
            valid_until: None,
            key: None,
        }
    }
}

/// An attestation or a verification of a claim.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Support {
    /// The attest or verify message.
    pub message: u64,
    /// Who gave it.
    pub identity: String,
    /// Its evidence.
    pub evidence: Vec<Evidence>,
    /// When.
    pub at: i64,
}

/// A claim of the dialectic profile, with its derived status.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClaimRec {
    /// `cl_<id>`.
    pub id: u64,
    /// The assert or refute message that made it.
    pub message: u64,
    /// Its thread.
    pub thread: u64,
    /// Author identity.
    pub identity: String,
    /// Author extension.
    pub extension: Option<String>,
    /// The claim's text.
    pub text: String,
    /// Derived status (SPEC §10), stored.
    pub status: ClaimStatus,
    /// Its evidence.
    pub evidence: Vec<Evidence>,
    /// Attestations, oldest first.
    pub attestations: Vec<Support>,
    /// Verifications, oldest first.
    pub verifications: Vec<Support>,
    /// Counter-claims refuting it, oldest first.
    pub refutations: Vec<u64>,
    /// The claim this counter-claim refutes.
    pub refutes: Option<u64>,
    /// Claims it supersedes.
    pub supersedes: Vec<u64>,
    /// The claim that superseded it.
    pub superseded_by: Option<u64>,
    /// Expiry.
    pub valid_until: Option<i64>,
    /// Creation time.
    pub created_at: i64,
    /// Where the claim came from when `import_claim` made it (SPEC §18.3); absent
    /// from the records of local claims, and of every claim written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<ImportedRec>,
}

/// The origin of an imported claim, as its verified bundle told it (SPEC §18.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportedRec {
    /// The exporting realm.
    pub realm: String,
    /// The claim's id there.
    pub claim: String,
    /// Its status there at export.
    pub status: String,
    /// When it was exported (that forum's clock).
    pub exported_at: String,
    /// The key that signed the bundle (`ed25519:…`).
    pub key: String,
}

/// What an event records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Change {
    /// A state transition (`from == to` for a confirmation).
    State {
        /// Before.
        from: State,
        /// After.
        to: State,
        /// `true` for a confirmation event.
        confirmation: bool,
    },
    /// A claim status change.
    Claim {
        /// The claim.
        claim: u64,
        /// Before.
        from: ClaimStatus,
        /// After.
        to: ClaimStatus,
    },
}

/// An event (SPEC §8.4).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventRec {
    /// `ev_<id>`.
    pub id: u64,
    /// Its thread.
    pub thread: u64,
    /// The message that caused it.
    pub message: u64,
    /// What changed.
    pub change: Change,
    /// `true` for `origin = user`.
    pub by_user: bool,
    /// Who.
    pub identity: String,
    /// Their extension.
    pub extension: Option<String>,
    /// The token label of the lock-right holder who made it, shown as
    /// `KI · <label>`; `lock_by` in the record. Records written before it hold
    /// the label as shown, under `label`.
    #[serde(rename = "lock_by", default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The label as shown, in records written before `lock_by`.
    #[serde(rename = "label", default, skip_serializing)]
    pub shown_label: Option<String>,
    /// Whether the resulting state is confirmed.
    pub confirmed: bool,
    /// When.
    pub at: i64,
}
