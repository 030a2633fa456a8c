//! `get_digest` (SPEC §17): what an agent needs of a thread too long to read.
//!
//! The digest is chosen from the heads of the thread's messages (id, act,
//! parent), which a store reads without decoding bodies; only the messages it
//! returns (at most 17) and the claims it lists (at most 10) are read whole. So a
//! digest of a long thread costs a fraction of `get_thread` of it.

use serde_json::Value;

use super::requests::{Args, GetThread};
use super::tokens::Right;
use super::view;
use super::Forum;
use crate::error::{Error, Reason, Refusal, Result};
use crate::protocol::acts::Act;
use crate::protocol::ids::IdKind;
use crate::store::records::{ClaimRec, MessageHead, MessageRec, ThreadRec};
use crate::store::ReadTx;

/// At most this many open questions, the oldest (SPEC §17).
pub(crate) const OPEN_QUESTIONS_MAX: usize = 10;
/// At most this many claims, the newest.
pub(crate) const CLAIMS_MAX: usize = 10;
/// The thread's last this many messages.
pub(crate) const RECENT: usize = 5;

/// The digest's records, before they are shown (as JSON or typed).
pub(crate) struct DigestRecs {
    pub(crate) thread: ThreadRec,
    pub(crate) root: MessageRec,
    pub(crate) decision: Option<MessageRec>,
    pub(crate) open_questions: Vec<MessageRec>,
    pub(crate) claims: Vec<ClaimRec>,
    pub(crate) recent: Vec<MessageRec>,
    pub(crate) omitted: u64,
}

/// Which messages the digest names, by id, chosen from the heads alone.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Picks {
    pub(crate) root: u64,
    pub(crate) decision: Option<u64>,
    pub(crate) open_questions: Vec<u64>,
    /// `assert` and `refute` messages (each made a claim), newest first.
    pub(crate) claim_messages: Vec<u64>,
    pub(crate) recent: Vec<u64>,
    pub(crate) omitted: u64,
}

/// Chooses the digest's messages from a thread's heads, in creation order (the
/// first is the root). `None` for a thread without messages, which no post makes.
pub(crate) fn pick(heads: &[MessageHead]) -> Option<Picks> {
    let root = heads.first()?.id;
    let ids: Vec<u64> = heads.iter().map(|h| h.id).collect();
    // Walking from the newest, a message's subtree is complete when it is reached
    // (replies have higher ids), so one pass marks every message with an answer
    // below it.
    let mut answered_below = vec![false; heads.len()];
    for (i, h) in heads.iter().enumerate().rev() {
        let here = answered_below[i] || h.kind == Act::Answer;
        if let Some(p) = h.parent.and_then(|p| ids.binary_search(&p).ok()) {
            if p < i && here {
                answered_below[p] = true;
            }
        }
    }
    let open_questions: Vec<u64> = heads
        .iter()
        .zip(&answered_below)
        .filter(|(h, below)| h.kind == Act::Ask && !**below)
        .map(|(h, _)| h.id)
        .take(OPEN_QUESTIONS_MAX)
        .collect();
    let decision = heads
        .iter()
        .rev()
        .find(|h| h.kind == Act::Decide)
        .map(|h| h.id);
    let claim_messages = heads
        .iter()
        .rev()
        .filter(|h| matches!(h.kind, Act::Assert | Act::Refute))
        .map(|h| h.id)
        .take(CLAIMS_MAX)
        .collect();
    let recent: Vec<u64> = ids[ids.len().saturating_sub(RECENT)..].to_vec();
    let mut shown: Vec<u64> = std::iter::once(root)
        .chain(decision)
        .chain(open_questions.iter().copied())
        .chain(recent.iter().copied())
        .collect();
    shown.sort_unstable();
    shown.dedup();
    Some(Picks {
        root,
        decision,
        open_questions,
        claim_messages,
        recent,
        omitted: (heads.len() - shown.len()) as u64,
    })
}

fn not_found(id: u64) -> Error {
    Refusal::new(
        Reason::ThreadNotFound,
        format!("{} does not exist", IdKind::Thread.key(id)),
    )
    .into()
}

/// A message the heads named but the snapshot does not hold: damage.
fn missing(id: u64) -> Error {
    Error::storage(format!(
        "{} is listed in its thread but not stored",
        IdKind::Message.key(id)
    ))
}

impl Forum {
    /// `get_digest` (SPEC §17), with the checks and their order of `get_thread`.
    pub(crate) fn digest_records(
        &self,
        token: Option<&str>,
        req: &Args<GetThread>,
    ) -> Result<DigestRecs> {
        let tx = self.store.read()?;
        let caller = self.authenticate(&*tx, token)?;
        let id = req.as_ref().map_err(Clone::clone)?.thread.get();
        caller.require(Right::Read)?;
        let thread = tx.thread(id)?.ok_or_else(|| not_found(id))?;
        let expected = usize::try_from(thread.message_count).unwrap_or(usize::MAX);
        let heads = tx.thread_heads(id, expected)?;
        let picks = pick(&heads).ok_or_else(|| not_found(id))?;
        let read = |id: u64| -> Result<MessageRec> { tx.message(id)?.ok_or_else(|| missing(id)) };
        let claims = if self.config.dialectic {
            claims(&*tx, &picks.claim_messages)?
        } else {
            // Without the profile a thread has no claims to show (docs/spec-notes.md).
            Vec::new()
        };
        Ok(DigestRecs {
            root: read(picks.root)?,
            decision: picks.decision.map(read).transpose()?,
            open_questions: picks
                .open_questions
                .iter()
                .map(|m| read(*m))
                .collect::<Result<_>>()?,
            claims,
            recent: picks
                .recent
                .iter()
                .map(|m| read(*m))
                .collect::<Result<_>>()?,
            omitted: picks.omitted,
            thread,
        })
    }

    /// `get_digest` as JSON.
    pub(crate) fn get_digest(&self, token: Option<&str>, req: &Args<GetThread>) -> Result<Value> {
        let d = self.digest_records(token, req)?;
        let message = |m: MessageRec| Value::Object(view::message_owned(m));
        let list = |ms: Vec<MessageRec>| Value::Array(ms.into_iter().map(message).collect());
        Ok(view::object([
            ("thread", view::thread(&d.thread, self.config.guards)),
            ("root", message(d.root)),
            ("decision", d.decision.map_or(Value::Null, message)),
            ("open_questions", list(d.open_questions)),
            (
                "claims",
                Value::Array(d.claims.iter().map(view::digest_claim).collect()),
            ),
            ("recent", list(d.recent)),
            ("omitted", Value::from(d.omitted)),
        ]))
    }
}

/// The claims the `assert` and `refute` messages made, in their order.
fn claims(tx: &dyn ReadTx, messages: &[u64]) -> Result<Vec<ClaimRec>> {
    let mut out = Vec::with_capacity(messages.len());
    for id in messages {
        let m = tx.message(*id)?.ok_or_else(|| missing(*id))?;
        let made = match m.kind {
            Act::Refute => m.counter_claim,
            _ => m.claim,
        };
        if let Some(claim) = made.map(|c| tx.claim(c)).transpose()?.flatten() {
            out.push(claim);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(id: u64, kind: Act, parent: Option<u64>) -> MessageHead {
        MessageHead { id, kind, parent }
    }

    #[test]
    fn a_lone_root_is_root_open_question_and_recent_at_once() {
        let p = pick(&[h(1, Act::Ask, None)]).unwrap();
        assert_eq!(p.root, 1);
        assert_eq!(p.open_questions, vec![1]);
        assert_eq!(p.recent, vec![1]);
        assert_eq!((p.decision, p.omitted), (None, 0));
        assert_eq!(pick(&[]), None);
    }

    #[test]
    fn an_answer_anywhere_below_closes_a_question_and_only_its_ancestors() {
        let heads = [
            h(1, Act::Ask, None),
            h(2, Act::Ask, Some(1)),
            h(3, Act::Note, Some(2)),
            h(4, Act::Answer, Some(3)), // answers 2 (and 1) from two levels down
            h(5, Act::Ask, Some(1)),
            h(6, Act::Decide, Some(5)),
            h(7, Act::Ask, Some(4)),
            h(8, Act::Decide, Some(1)),
            h(9, Act::Note, Some(1)),
            h(10, Act::Note, Some(1)),
            h(11, Act::Note, Some(1)),
        ];
        let p = pick(&heads).unwrap();
        assert_eq!(p.open_questions, vec![5, 7]);
        assert_eq!(p.decision, Some(8));
        assert_eq!(p.recent, vec![7, 8, 9, 10, 11]);
        // Shown: 1, 5, 7, 8, 9, 10, 11; left: 2, 3, 4, 6.
        assert_eq!(p.omitted, 4);
    }

    #[test]
    fn the_oldest_ten_questions_and_the_newest_ten_claims() {
        let mut heads = vec![h(1, Act::Assert, None)];
        heads.extend((2..=13).map(|i| h(i, Act::Ask, Some(1))));
        heads.extend((14..=25).map(|i| h(i, Act::Refute, Some(1))));
        let p = pick(&heads).unwrap();
        assert_eq!(p.open_questions, (2..=11).collect::<Vec<_>>());
        assert_eq!(p.claim_messages, (16..=25).rev().collect::<Vec<_>>());
        assert_eq!(p.omitted, 25 - 1 - 10 - 5);
    }
}
