//! Typed results of the operations (SPEC §8, §10, §14). A [`crate::Session`]
//! builds them from records (`super::from_records`); they also read the JSON of
//! the generic call, the HTTP API and MCP (`Deserialize`), and
//! `tests/typed_session.rs` holds the two ways to each other.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::protocol::acts::Act;
use crate::protocol::claim::ClaimStatus;
use crate::protocol::evidence::Evidence;
use crate::protocol::id_types::{ClaimId, MessageId, ThreadId};
use crate::protocol::kinds::{AuthorKind, EventKind, Origin};
use crate::protocol::state::State;
pub use crate::protocol::views::{Author, WhoAmI};
use crate::time::Timestamp;

/// Who is due (SPEC §5).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Turn {
    /// An identity or `"*"`.
    pub identity: String,
    /// The awaited extension, or `None` for any.
    pub extension: Option<String>,
    /// The message that set the turn.
    pub message: MessageId,
}

/// A thread summary (SPEC §8.2).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ThreadSummary {
    /// `th_…`.
    pub id: ThreadId,
    /// First line of the root body.
    pub topic: String,
    /// Who opened it.
    pub creator: Author,
    /// The state.
    pub state: State,
    /// Who set it.
    pub state_origin: Origin,
    /// `None` while the state is a proposal.
    pub state_confirmed_at: Option<Timestamp>,
    /// `KI · <label>` for lock-right changes.
    pub state_label: Option<String>,
    /// Closed and confirmed.
    pub locked: bool,
    /// Who is due.
    pub awaiting: Option<Turn>,
    /// Messages, root included.
    pub message_count: u64,
    /// Content messages by `llm` authors since the thread's last progress (the
    /// guards profile, SPEC §15); `None` when the profile is off.
    #[serde(default)]
    pub since_progress: Option<u64>,
    /// When it was opened.
    pub created_at: Timestamp,
    /// Time of the latest message.
    pub updated_at: Timestamp,
}

/// A message (SPEC §8.1) with its replies, as `get_thread` nests them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MessageView {
    /// `msg_…`.
    pub id: MessageId,
    /// The act.
    pub kind: Act,
    /// `th_…`.
    pub thread: ThreadId,
    /// The parent's `msg_…`; `None` for the root.
    pub parent: Option<MessageId>,
    /// The author.
    pub from: Author,
    /// A model or a person.
    pub author_kind: AuthorKind,
    /// The body.
    pub body: String,
    /// When it was posted.
    pub created_at: Timestamp,
    /// `to`, when sent.
    #[serde(default)]
    pub to: Option<String>,
    /// The state a `mark` named.
    #[serde(default)]
    pub state: Option<State>,
    /// The claim created or named.
    #[serde(default)]
    pub claim: Option<ClaimId>,
    /// The counter-claim a `refute` created.
    #[serde(default)]
    pub counter_claim: Option<ClaimId>,
    /// Evidence items, as sent.
    #[serde(default)]
    pub evidence: Vec<Evidence>,
    /// Claims an `assert` superseded.
    #[serde(default)]
    pub supersedes: Vec<ClaimId>,
    /// An asserted claim's expiry.
    #[serde(default)]
    pub valid_until: Option<Timestamp>,
    /// Provenance, as sent.
    #[serde(default)]
    pub provenance: Option<Map<String, Value>>,
    /// Replies in creation order (empty outside `get_thread`).
    #[serde(default)]
    pub replies: Vec<MessageView>,
}

/// `get_thread`: the summary and the message tree.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ThreadView {
    /// The summary.
    pub thread: ThreadSummary,
    /// Root messages (one) with their replies nested.
    pub messages: Vec<MessageView>,
}

/// One page of a list read, with the cursor to pass back as `since`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Page<T> {
    /// The items, oldest first.
    pub items: Vec<T>,
    /// The position after the last item (after everything when none).
    pub cursor: String,
    /// Whether items were left out of this page.
    pub more: bool,
}

/// An inbox entry: a thread waiting for the caller and the message that named it due.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct InboxItem {
    /// The thread.
    pub thread: ThreadSummary,
    /// The turn-setting message.
    pub message: MessageView,
}

/// A search match (SPEC §14.4): the message and its thread as it is now.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SearchHit {
    /// The message holding every word.
    pub message: MessageView,
    /// Its thread.
    pub thread: ThreadSummary,
}

/// An event (SPEC §8.4): a transition, a confirmation, or a claim status change.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct EventView {
    /// `ev_…`.
    pub id: String,
    /// A transition, a confirmation or a claim's status change.
    #[serde(rename = "type")]
    pub kind: EventKind,
    /// `th_…`.
    pub thread: ThreadId,
    /// The message that caused it.
    pub message: MessageId,
    /// Before (state events).
    #[serde(default)]
    pub from_state: Option<State>,
    /// After (state events).
    #[serde(default)]
    pub to_state: Option<State>,
    /// The claim (claim events).
    #[serde(default)]
    pub claim: Option<ClaimId>,
    /// Before (claim events).
    #[serde(default)]
    pub from_status: Option<ClaimStatus>,
    /// After (claim events).
    #[serde(default)]
    pub to_status: Option<ClaimStatus>,
    /// A person or a model.
    pub origin: Origin,
    /// Who.
    pub identity: String,
    /// Their extension.
    pub extension: Option<String>,
    /// `KI · <label>` for lock-right changes.
    pub label: Option<String>,
    /// Whether the resulting state is confirmed.
    pub confirmed: bool,
    /// When.
    pub at: Timestamp,
}

/// An attestation or verification of a claim.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Support {
    /// The attest or verify message.
    pub message: MessageId,
    /// Who.
    pub identity: String,
    /// Evidence (attestations).
    #[serde(default)]
    pub evidence: Vec<Evidence>,
    /// When.
    pub at: Timestamp,
}

/// A counter-claim refuting a claim, as [`ClaimView::refutations`] lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Refutation {
    /// The counter-claim.
    pub claim: ClaimId,
    /// The `refute` message that made it.
    pub message: MessageId,
    /// The counter-claim's status now.
    pub status: ClaimStatus,
}

/// `get_claim` (SPEC §10).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ClaimView {
    /// `cl_…`.
    pub id: ClaimId,
    /// The assert or refute message.
    pub message: MessageId,
    /// `th_…`.
    pub thread: ThreadId,
    /// The author.
    pub author: Author,
    /// The claim's text.
    pub text: String,
    /// Its status.
    pub status: ClaimStatus,
    /// Evidence items.
    pub evidence: Vec<Evidence>,
    /// Attestations, oldest first.
    pub attestations: Vec<Support>,
    /// Verifications, oldest first.
    pub verifications: Vec<Support>,
    /// Counter-claims refuting it, oldest first.
    pub refutations: Vec<Refutation>,
    /// The claim this one refutes.
    pub refutes: Option<ClaimId>,
    /// Claims it supersedes.
    pub supersedes: Vec<ClaimId>,
    /// The claim that superseded it.
    pub superseded_by: Option<ClaimId>,
    /// Expiry.
    pub valid_until: Option<Timestamp>,
    /// Past `valid_until`.
    pub expired: bool,
    /// When it was made.
    pub created_at: Timestamp,
    /// With the provenance profile on: the quorum and the verifiers so far
    /// (SPEC §18.2).
    #[serde(default)]
    pub quorum: Option<super::Quorum>,
    /// Where the claim came from, when `import_claim` made it (SPEC §18.3).
    pub imported: Option<Imported>,
}

/// The origin of an imported claim (SPEC §18.3), as its verified bundle told it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Imported {
    /// The exporting realm.
    pub realm: String,
    /// The claim's id there: a key of that forum, naming no claim of this one.
    pub claim: String,
    /// Its status there at export (a string: another realm may know others).
    pub status: String,
    /// When it was exported (that forum's clock), as the signed bundle wrote
    /// it: kept as text, since another spelling would not be what was signed.
    pub exported_at: String,
    /// The key that signed the bundle (`ed25519:…`).
    pub key: String,
}

/// A claim as the digest lists it (SPEC §17).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct DigestClaim {
    /// `cl_…`.
    pub id: ClaimId,
    /// Its status.
    pub status: ClaimStatus,
    /// The claim's text.
    pub text: String,
}

/// `get_digest` (SPEC §17): what matters of a thread, within a budget. Its
/// messages carry no replies.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Digest {
    /// The summary.
    pub thread: ThreadSummary,
    /// The root message.
    pub root: MessageView,
    /// The newest `decide`, if any.
    pub decision: Option<MessageView>,
    /// `ask` messages (the root included) with no `answer` below them, the oldest
    /// 10, oldest first.
    pub open_questions: Vec<MessageView>,
    /// The thread's claims, the newest 10, newest first (empty without the
    /// dialectic profile).
    pub claims: Vec<DigestClaim>,
    /// The last 5 messages, in creation order.
    pub recent: Vec<MessageView>,
    /// How many messages are in none of `root`, `decision`, `open_questions`, `recent`.
    pub omitted: u64,
}
