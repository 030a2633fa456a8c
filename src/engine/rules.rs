//! The rules a post is held to once its references exist: authority (§7.2),
//! transitions (§6) and the dialectic rules (§10).

use super::place::Place;
use super::post::refuse;
use super::tokens::Caller;
use crate::error::{Reason, Result};
use crate::protocol::acts::{Act, Needs};
use crate::protocol::envelope::Checked;
use crate::protocol::ids::IdKind;
use crate::protocol::state::{self, Effect, State};
use crate::store::records::ThreadRec;

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
