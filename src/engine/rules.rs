//! The rules a post is held to once its references exist: authority (§7.2),
//! transitions (§6) and the dialectic rules (§10).

use super::place::Place;
use super::post::refuse;
use super::tokens::Caller;
use crate::config::Limits;
use crate::error::{Reason, Refusal, Result};
use crate::protocol::acts::{Act, Needs};
use crate::protocol::envelope::Checked;
use crate::protocol::ids::IdKind;
use crate::protocol::state::{self, Effect, State};
use crate::store::records::ThreadRec;
use crate::store::WriteTx;

/// Authority of §7.2 for the marking acts.
pub(super) fn check_authority(caller: &Caller, act: Act, thread: &ThreadRec) -> Result<()> {
    let creator = thread.creator == caller.identity;
    let allowed = match act.spec().needs {
        Needs::Authority => creator || caller.confirmer(),
        Needs::ReopenAuthority if thread.state.is_side() => caller.confirmer(),
        Needs::ReopenAuthority => creator || caller.confirmer(),
        Needs::Write | Needs::Verify => true,
    };
    if allowed {
        Ok(())
    } else {
        refuse(
            Reason::ThreadAuthorityMissing,
            format!(
                "`{}` on {} needs its creator, a lock holder or a human",
                act.kind(),
                IdKind::Thread.key(thread.id)
            ),
        )
    }
}

/// The state effect of the act, or `invalid_transition` (§6).
pub(super) fn transition(caller: &Caller, env: &Checked, thread: &ThreadRec) -> Result<Effect> {
    let confirmed = thread.state_confirmed_at.is_some();
    let effect = match env.act {
        Act::Answer => {
            state::content_mark(thread.state, confirmed, State::Answered, caller.confirmer())
        }
        Act::Decide => {
            state::content_mark(thread.state, confirmed, State::Decided, caller.confirmer())
        }
        Act::Mark => {
            let target = env.state.expect("mark requires state");
            match state::mark(
                thread.state,
                confirmed,
                target,
                caller.confirmer(),
                caller.human,
            ) {
                Ok(effect) => effect,
                Err(()) => {
                    return refuse(
                        Reason::InvalidTransition,
                        format!(
                            "cannot mark {} from {}{}",
                            target.as_str(),
                            thread.state.as_str(),
                            if confirmed { "" } else { " (unconfirmed)" }
                        ),
                    )
                }
            }
        }
        Act::Reopen if state::reopenable(thread.state) => Effect::Move(State::Open),
        Act::Reopen => {
            return refuse(
                Reason::InvalidTransition,
                format!(
                    "a thread that is {} cannot be reopened",
                    thread.state.as_str()
                ),
            )
        }
        _ => Effect::None,
    };
    Ok(effect)
}

/// `self_attestation`, `already_attested`, `claim_superseded` (§10).
pub(super) fn check_dialectic(caller: &Caller, env: &Checked, place: &Place) -> Result<()> {
    for old in &place.superseded {
        if old.superseded_by.is_some() {
            return refuse(
                Reason::ClaimSuperseded,
                format!("{} is already superseded", IdKind::Claim.key(old.id)),
            );
        }
    }
    let Some(claim) = &place.claim else {
        return Ok(());
    };
    if claim.superseded_by.is_some() {
        return refuse(
            Reason::ClaimSuperseded,
            format!("{} is superseded", IdKind::Claim.key(claim.id)),
        );
    }
    if matches!(env.act, Act::Attest | Act::Verify) && claim.identity == caller.identity {
        return refuse(
            Reason::SelfAttestation,
            "you may not attest or verify your own claim",
        );
    }
    if env.act == Act::Attest
        && claim
            .attestations
            .iter()
            .any(|a| a.identity == caller.identity)
    {
        return refuse(
            Reason::AlreadyAttested,
            format!("you have already attested {}", IdKind::Claim.key(claim.id)),
        );
    }
    Ok(())
}

/// Superseding needs authorship of the superseded claim or authority over its
/// thread (§10), else `thread_authority_missing`.
pub(super) fn check_supersede_authority(
    tx: &dyn WriteTx,
    caller: &Caller,
    place: &Place,
) -> Result<()> {
    for claim in &place.superseded {
        let owns = claim.identity == caller.identity;
        let rules = caller.confirmer()
            || tx
                .thread(claim.thread)?
                .is_some_and(|t| t.creator == caller.identity);
        if !owns && !rules {
            return refuse(
                Reason::ThreadAuthorityMissing,
                format!(
                    "only the author of {} or an authority over its thread may supersede it",
                    IdKind::Claim.key(claim.id)
                ),
            );
        }
    }
    Ok(())
}

/// The loop guards of §4: `self_reply`, then `repeated_body`.
pub(super) fn check_loop_guards(caller: &Caller, env: &Checked, place: &Place) -> Result<()> {
    // An assert that supersedes replaces a claim; it does not reply.
    let act = env.act;
    let replies = act.is_content() && (act != Act::Assert || env.supersedes.is_empty());
    if let (true, Some(parent)) = (replies, &place.parent) {
        if parent.identity == caller.identity && parent.extension == env.extension {
            return refuse(
                Reason::SelfReply,
                "you may not reply to your own message (same identity and extension)",
            );
        }
    }
    if let (false, Some(t)) = (caller.human, &place.thread) {
        if t.last_body.get(&caller.identity) == Some(&env.body_hash) {
            return refuse(
                Reason::RepeatedBody,
                "this body repeats your most recent message in the thread; say something new",
            );
        }
    }
    Ok(())
}

/// The thread limits of §9, checked last (§12.1).
pub(super) fn check_limits(limits: &Limits, place: &Place) -> Result<()> {
    let Some(t) = &place.thread else {
        return Ok(());
    };
    if t.message_count as usize >= limits.thread_max_messages {
        return Err(Refusal::new(
            Reason::LimitExceeded,
            format!(
                "a thread holds at most {} messages",
                limits.thread_max_messages
            ),
        )
        .with_limit("thread_max_messages")
        .into());
    }
    let depth = place.parent.as_ref().map_or(0, |p| p.depth as usize + 1);
    if depth > limits.thread_max_depth {
        return Err(Refusal::new(
            Reason::LimitExceeded,
            format!(
                "replies nest at most {} levels deep",
                limits.thread_max_depth
            ),
        )
        .with_limit("thread_max_depth")
        .into());
    }
    Ok(())
}
