//! Where a post goes (SPEC §3.1) and the references it names (the 404 group of
//! §12.1), resolved inside the post's transaction.

use crate::error::{Reason, Refusal, Result};
use crate::protocol::acts::Act;
use crate::protocol::decide::{Parent, Place};
use crate::protocol::envelope::Checked;
use crate::protocol::ids::IdKind;
use crate::protocol::records::{ClaimRec, ThreadRec};
use crate::store::WriteTx;

/// The record an id names, or the refusal saying it does not exist.
fn found<T>(record: Option<T>, reason: Reason, kind: IdKind, id: u64) -> Result<T> {
    record.ok_or_else(|| Refusal::new(reason, format!("{} does not exist", kind.key(id))).into())
}

/// Resolves thread, parent, claim, superseded claims and `to` (the 404 group), then
/// places the message (§3.1) and finds what the rules need beyond the references.
pub(super) fn resolve(tx: &dyn WriteTx, env: &Checked) -> Result<Place> {
    let (thread, parent, claim, superseded) = references(tx, env)?;
    let (thread, parent) = placement(tx, thread, parent, claim.as_ref())?;
    // Who rules each superseded claim's thread, and whose turn an answer gives.
    let mut superseded_creators = Vec::with_capacity(superseded.len());
    for claim in &superseded {
        superseded_creators.push(tx.thread(claim.thread)?.map(|t| t.creator));
    }
    let asker = match env.act {
        Act::Answer => Some(nearest_ask(tx, parent.as_ref())?),
        _ => None,
    };
    Ok(Place {
        thread,
        parent,
        claim,
        superseded,
        superseded_creators,
        asker,
    })
}

type References = (
    Option<ThreadRec>,
    Option<Parent>,
    Option<ClaimRec>,
    Vec<ClaimRec>,
);

/// The records the envelope names, each refused when it does not exist.
fn references(tx: &dyn WriteTx, env: &Checked) -> Result<References> {
    let thread = match env.thread {
        Some(id) => Some(found(
            tx.thread(id)?,
            Reason::ThreadNotFound,
            IdKind::Thread,
            id,
        )?),
        None => None,
    };
    let parent = match env.parent {
        Some(id) => Some(Parent::from(found(
            tx.message(id)?,
            Reason::MessageNotFound,
            IdKind::Message,
            id,
        )?)),
        None => None,
    };
    let claim = match env.claim {
        Some(id) => Some(found(
            tx.claim(id)?,
            Reason::ClaimNotFound,
            IdKind::Claim,
            id,
        )?),
        None => None,
    };
    let mut superseded = Vec::with_capacity(env.supersedes.len());
    for &id in &env.supersedes {
        superseded.push(found(
            tx.claim(id)?,
            Reason::ClaimNotFound,
            IdKind::Claim,
            id,
        )?);
    }
    if let Some(to) = &env.to {
        if tx.identity(to)?.is_none() {
            return Err(Refusal::new(
                Reason::IdentityNotFound,
                format!("no token was ever issued to {to}"),
            )
            .with_field("to")
            .into());
        }
    }
    Ok((thread, parent, claim, superseded))
}

/// Placement (§3.1): the parent decides the thread; a thread alone means its root;
/// attest, refute and verify default to the claim's message.
fn placement(
    tx: &dyn WriteTx,
    mut thread: Option<ThreadRec>,
    mut parent: Option<Parent>,
    claim: Option<&ClaimRec>,
) -> Result<(Option<ThreadRec>, Option<Parent>)> {
    if let (Some(p), Some(t)) = (&parent, &thread) {
        if p.thread != t.id {
            return Err(Refusal::new(
                Reason::InvalidBody,
                format!(
                    "{} is not in {}",
                    IdKind::Message.key(p.id),
                    IdKind::Thread.key(t.id)
                ),
            )
            .with_field("parent")
            .into());
        }
    }
    if parent.is_none() && thread.is_none() {
        if let Some(c) = claim {
            parent = tx.message(c.message)?.map(Parent::from);
        }
    }
    if let (Some(p), None) = (&parent, &thread) {
        thread = tx.thread(p.thread)?;
    }
    if let (None, Some(t)) = (&parent, &thread) {
        parent = Some(Parent::root_of(t));
    }
    Ok((thread, parent))
}

/// The author of the nearest `ask` at or above `from`, else of the root.
fn nearest_ask(tx: &dyn WriteTx, from: Option<&Parent>) -> Result<(String, Option<String>)> {
    let mut current = from.cloned();
    let mut root = None;
    while let Some(m) = current {
        if m.kind == Act::Ask {
            return Ok((m.identity, m.extension));
        }
        current = match m.parent {
            Some(p) => tx.message(p)?.map(Parent::from),
            None => {
                root = Some((m.identity.clone(), m.extension.clone()));
                None
            }
        };
    }
    Ok(root.unwrap_or_default())
}
