//! The typed results, built from the records a read or a post yields: the same
//! records the generic call shows as JSON (`engine::view`), without JSON in
//! between. `tests/typed_session.rs` holds the two to each other: every typed
//! result equals the generic call's JSON read into the same type.

use super::types::{
    Author, ClaimView, Digest, DigestClaim, EventView, InboxItem, MessageView, Page, Refutation,
    SearchHit, Support, ThreadSummary, Turn,
};
use crate::engine::claims::ClaimParts;
use crate::engine::digest::DigestRecs;
use crate::engine::read::Listing;
use crate::engine::view::lock_label;
use crate::protocol::id_types::{ClaimId, MessageId, ThreadId};
use crate::protocol::ids::IdKind;
use crate::protocol::kinds::{AuthorKind, EventKind, Origin};
use crate::store::records::{Awaiting, Change, EventRec, MessageRec, ThreadRec};
use crate::time::Timestamp;

// Records hold ids as the numbers the store assigned, from 1 up, and times as
// milliseconds: each is an id or a time by construction, so the views wrap them
// without a check.

impl Turn {
    fn from_rec(a: &Awaiting) -> Turn {
        Turn {
            identity: a.identity.clone(),
            extension: a.extension.clone(),
            message: MessageId(a.message),
        }
    }
}

impl ThreadSummary {
    /// `guards`: whether the guards profile is on (it adds `since_progress`).
    pub(crate) fn from_rec(t: &ThreadRec, guards: bool) -> ThreadSummary {
        ThreadSummary {
            id: ThreadId(t.id),
            topic: t.topic.clone(),
            creator: Author {
                identity: t.creator.clone(),
                extension: t.creator_extension.clone(),
            },
            state: t.state,
            state_origin: Origin::of(t.state_by_user),
            state_confirmed_at: t.state_confirmed_at.map(Timestamp::from_millis),
            state_label: lock_label(&t.state_label),
            locked: t.locked(),
            awaiting: t.awaiting.as_ref().map(Turn::from_rec),
            message_count: t.message_count,
            since_progress: guards.then_some(u64::from(t.guards.since_progress)),
            created_at: Timestamp::from_millis(t.created_at),
            updated_at: Timestamp::from_millis(t.updated_at),
        }
    }
}

impl MessageView {
    /// A message with its `replies` (empty outside `get_thread`), moving its strings.
    pub(crate) fn from_rec(m: MessageRec, replies: Vec<MessageView>) -> MessageView {
        MessageView {
            id: MessageId(m.id),
            kind: m.kind,
            thread: ThreadId(m.thread),
            parent: m.parent.map(MessageId),
            from: Author {
                identity: m.identity,
                extension: m.extension,
            },
            author_kind: AuthorKind::of(m.human),
            body: m.body,
            created_at: Timestamp::from_millis(m.created_at),
            to: m.to,
            state: m.state,
            claim: m.claim.map(ClaimId),
            counter_claim: m.counter_claim.map(ClaimId),
            evidence: m.evidence,
            supersedes: m.supersedes.iter().copied().map(ClaimId).collect(),
            valid_until: m.valid_until.map(Timestamp::from_millis),
            provenance: m.provenance,
            replies,
        }
    }

    fn alone(m: MessageRec) -> MessageView {
        MessageView::from_rec(m, Vec::new())
    }
}

impl EventView {
    pub(crate) fn from_rec(e: &EventRec) -> EventView {
        let (kind, from_state, to_state, claim, from_status, to_status) = match &e.change {
            Change::State {
                from,
                to,
                confirmation,
            } => {
                let kind = if *confirmation {
                    EventKind::Confirmation
                } else {
                    EventKind::Transition
                };
                (kind, Some(*from), Some(*to), None, None, None)
            }
            Change::Claim { claim, from, to } => (
                EventKind::Claim,
                None,
                None,
                Some(ClaimId(*claim)),
                Some(*from),
                Some(*to),
            ),
        };
        EventView {
            id: IdKind::Event.key(e.id),
            kind,
            thread: ThreadId(e.thread),
            message: MessageId(e.message),
            from_state,
            to_state,
            claim,
            from_status,
            to_status,
            origin: Origin::of(e.by_user),
            identity: e.identity.clone(),
            extension: e.extension.clone(),
            label: lock_label(&e.label).or_else(|| e.shown_label.clone()),
            confirmed: e.confirmed,
            at: Timestamp::from_millis(e.at),
        }
    }
}

impl ClaimView {
    pub(crate) fn from_parts(p: &ClaimParts) -> ClaimView {
        let c = &p.claim;
        let support = |s: &crate::store::records::Support, with_evidence: bool| Support {
            message: MessageId(s.message),
            identity: s.identity.clone(),
            evidence: if with_evidence {
                s.evidence.clone()
            } else {
                Vec::new()
            },
            at: Timestamp::from_millis(s.at),
        };
        ClaimView {
            id: ClaimId(c.id),
            message: MessageId(c.message),
            thread: ThreadId(c.thread),
            author: Author {
                identity: c.identity.clone(),
                extension: c.extension.clone(),
            },
            text: c.text.clone(),
            status: c.status,
            evidence: c.evidence.clone(),
            attestations: c.attestations.iter().map(|s| support(s, true)).collect(),
            verifications: c.verifications.iter().map(|s| support(s, false)).collect(),
            refutations: p
                .refutations
                .iter()
                .map(|&(claim, message, status)| Refutation {
                    claim: ClaimId(claim),
                    message: MessageId(message),
                    status,
                })
                .collect(),
            refutes: c.refutes.map(ClaimId),
            supersedes: c.supersedes.iter().copied().map(ClaimId).collect(),
            superseded_by: c.superseded_by.map(ClaimId),
            valid_until: c.valid_until.map(Timestamp::from_millis),
            expired: c.valid_until.is_some_and(|t| p.now > t),
            created_at: Timestamp::from_millis(c.created_at),
            quorum: p.quorum.map(|needed| super::Quorum {
                needed: needed as u64,
                have: crate::protocol::claim::verifiers(c) as u64,
            }),
            imported: c.imported.as_ref().map(|i| super::types::Imported {
                realm: i.realm.clone(),
                claim: i.claim.clone(),
                status: i.status.clone(),
                exported_at: i.exported_at.clone(),
                key: i.key.clone(),
            }),
        }
    }
}

impl<T> Page<T> {
    pub(crate) fn from_listing<R>(listing: Listing<R>, item: impl FnMut(R) -> T) -> Page<T> {
        Page {
            items: listing.items.into_iter().map(item).collect(),
            cursor: listing.cursor,
            more: listing.more,
        }
    }
}

pub(crate) fn thread_item(t: ThreadRec, guards: bool) -> ThreadSummary {
    ThreadSummary::from_rec(&t, guards)
}

pub(crate) fn message_item(m: MessageRec) -> MessageView {
    MessageView::alone(m)
}

pub(crate) fn event_item(e: EventRec) -> EventView {
    EventView::from_rec(&e)
}

pub(crate) fn inbox_item((t, m): (ThreadRec, MessageRec), guards: bool) -> InboxItem {
    InboxItem {
        thread: ThreadSummary::from_rec(&t, guards),
        message: MessageView::alone(m),
    }
}

pub(crate) fn search_hit((m, t): (MessageRec, ThreadRec), guards: bool) -> SearchHit {
    SearchHit {
        message: MessageView::alone(m),
        thread: ThreadSummary::from_rec(&t, guards),
    }
}

pub(crate) fn digest(d: DigestRecs, guards: bool) -> Digest {
    let list = |ms: Vec<MessageRec>| ms.into_iter().map(MessageView::alone).collect();
    Digest {
        thread: ThreadSummary::from_rec(&d.thread, guards),
        root: MessageView::alone(d.root),
        decision: d.decision.map(MessageView::alone),
        open_questions: list(d.open_questions),
        claims: d
            .claims
            .iter()
            .map(|c| DigestClaim {
                id: ClaimId(c.id),
                status: c.status,
                text: c.text.clone(),
            })
            .collect(),
        recent: list(d.recent),
        omitted: d.omitted,
    }
}
