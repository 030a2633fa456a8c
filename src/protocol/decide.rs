//! What a post does, decided without storage, in the manner of quinn-proto: from
//! the place its references resolved to, the caller and the envelope come the
//! checks of SPEC §12.1 from the thread's lock on (authority, loop guards,
//! transition, dialectic, limits), the turn (§5) and the state effect (§6, §7), or
//! the refusal. The engine resolves the place before (`engine::place`) and applies
//! the decision after (`engine::post`); nothing here reads or writes a record.

use crate::protocol::acts::{Act, Needs};
use crate::protocol::envelope::Checked;
use crate::protocol::guards;
use crate::protocol::ids::IdKind;
use crate::protocol::limits::Limits;
use crate::protocol::records::{Awaiting, Change, ClaimRec, MessageRec, ThreadRec};
use crate::protocol::refusal::{Reason, Refusal};
use crate::protocol::state::{self, Effect, State};

/// A decision, or the refusal of the post.
pub(crate) type Decided<T> = std::result::Result<T, Refusal>;

fn refuse<T>(reason: Reason, message: impl Into<String>) -> Decided<T> {
    Err(Refusal::new(reason, message))
}

/// Who posts, as the rules see them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Actor<'a> {
    pub(crate) identity: &'a str,
    pub(crate) human: bool,
    /// A human or a lock holder: confirms states (§7.1), has authority everywhere.
    pub(crate) confirmer: bool,
}

/// What a post needs of its parent. For a post that names only its thread, the
/// parent is the root, known from the thread record without reading it back.
#[derive(Debug, Clone)]
pub(crate) struct Parent {
    pub(crate) id: u64,
    pub(crate) thread: u64,
    pub(crate) kind: Act,
    pub(crate) identity: String,
    pub(crate) extension: Option<String>,
    pub(crate) depth: u32,
    pub(crate) parent: Option<u64>,
}

impl From<MessageRec> for Parent {
    fn from(m: MessageRec) -> Self {
        Parent {
            id: m.id,
            thread: m.thread,
            kind: m.kind,
            identity: m.identity,
            extension: m.extension,
            depth: m.depth,
            parent: m.parent,
        }
    }
}

impl Parent {
    /// The root of `t`, from its record.
    pub(crate) fn root_of(t: &ThreadRec) -> Self {
        Parent {
            id: t.root,
            thread: t.id,
            kind: t.root_kind,
            identity: t.creator.clone(),
            extension: t.creator_extension.clone(),
            depth: 0,
            parent: None,
        }
    }
}

/// Where the message goes, once its references are resolved, with what the rules
/// need to know beyond them.
pub(crate) struct Place {
    pub(crate) thread: Option<ThreadRec>,
    pub(crate) parent: Option<Parent>,
    pub(crate) claim: Option<ClaimRec>,
    pub(crate) superseded: Vec<ClaimRec>,
    /// The creator of each superseded claim's thread (`None`: the thread is gone).
    pub(crate) superseded_creators: Vec<Option<String>>,
    /// For an answer: the author of the nearest `ask` at or above its parent, else
    /// of the root (§5).
    pub(crate) asker: Option<(String, Option<String>)>,
}

/// The checks of §12.1 from the thread's lock on, in that order, and the state
/// effect of the post.
pub(crate) fn check(
    actor: &Actor<'_>,
    env: &Checked,
    place: &Place,
    limits: &Limits,
    guards: bool,
) -> Decided<Effect> {
    let thread = place.thread.as_ref();
    if let Some(t) = thread {
        if t.locked() && env.act != Act::Reopen {
            return refuse(
                Reason::ThreadClosed,
                format!(
                    "{} is closed and confirmed; reopen it first",
                    IdKind::Thread.key(t.id)
                ),
            );
        }
        check_authority(actor, env.act, t)?;
        check_if_state(env, t)?;
    }
    check_supersede_authority(actor, place)?;
    check_loop_guards(actor, env, place)?;
    if let (true, Some(t)) = (guards, thread) {
        check_guards(actor, env, t, limits)?;
    }
    let effect = match thread {
        Some(t) => transition(actor, env, t)?,
        None => Effect::None,
    };
    check_dialectic(actor, env, place)?;
    check_limits(limits, place)?;
    Ok(effect)
}

/// Authority of §7.2 for the marking acts.
fn check_authority(actor: &Actor<'_>, act: Act, thread: &ThreadRec) -> Decided<()> {
    let creator = thread.creator == actor.identity;
    let allowed = match act.spec().needs {
        Needs::Authority => creator || actor.confirmer,
        Needs::ReopenAuthority if thread.state.is_side() => actor.confirmer,
        Needs::ReopenAuthority => creator || actor.confirmer,
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

/// `if_state` (§14.5): the post is judged only against the state its sender
/// saw, else `state_changed` naming the state the thread is in now.
fn check_if_state(env: &Checked, thread: &ThreadRec) -> Decided<()> {
    match env.if_state {
        Some(seen) if seen != thread.state => Err(Refusal::new(
            Reason::StateChanged,
            format!(
                "{} is {} now, not {}; look at it again before you `{}`",
                IdKind::Thread.key(thread.id),
                thread.state.as_str(),
                seen.as_str(),
                env.act.kind()
            ),
        )
        .with_field("if_state")
        .with_state(thread.state)),
        _ => Ok(()),
    }
}

/// Superseding needs authorship of the superseded claim or authority over its
/// thread (§10), else `thread_authority_missing`.
fn check_supersede_authority(actor: &Actor<'_>, place: &Place) -> Decided<()> {
    for (claim, creator) in place.superseded.iter().zip(&place.superseded_creators) {
        let owns = claim.identity == actor.identity;
        let rules = actor.confirmer || creator.as_deref() == Some(actor.identity);
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
fn check_loop_guards(actor: &Actor<'_>, env: &Checked, place: &Place) -> Decided<()> {
    // An assert that supersedes replaces a claim; it does not reply.
    let act = env.act;
    let replies = act.is_content() && (act != Act::Assert || env.supersedes.is_empty());
    if let (true, Some(parent)) = (replies, &place.parent) {
        if parent.identity == actor.identity && parent.extension == env.extension {
            return refuse(
                Reason::SelfReply,
                "you may not reply to your own message (same identity and extension)",
            );
        }
    }
    if let (false, Some(t)) = (actor.human, &place.thread) {
        if t.last_body.get(actor.identity) == Some(&env.body_hash) {
            return refuse(
                Reason::RepeatedBody,
                "this body repeats your most recent message in the thread; say something new",
            );
        }
    }
    Ok(())
}

/// The guards profile (§15): `echoed_body`, then `no_progress`, for content acts
/// by `llm` authors only. Both refusals say how to move the thread on.
fn check_guards(
    actor: &Actor<'_>,
    env: &Checked,
    thread: &ThreadRec,
    limits: &Limits,
) -> Decided<()> {
    if actor.human || !guards::guarded(env.act) {
        return Ok(());
    }
    let state = &thread.guards;
    let window = limits.echo_window;
    let echoed = match window {
        0 => None,
        _ => state.echoes(actor.identity, env.folded_hash(), window),
    };
    if let Some(echoed) = echoed {
        // Every author of the thread has an entry in `last_body`.
        let author = thread
            .last_body
            .keys()
            .find(|identity| guards::author_hash(identity) == echoed.author)
            .map_or("another identity", String::as_str);
        return Err(Refusal::new(
            Reason::EchoedBody,
            format!(
                "this body echoes {} by {} in {}; add something new, or decide, mark, or ask the person",
                IdKind::Message.key(echoed.message),
                author,
                IdKind::Thread.key(thread.id)
            ),
        )
        .with_field("body"));
    }
    let max = limits.progress_max_messages;
    if max > 0 && state.since_progress as usize >= max {
        return Err(Refusal::new(
            Reason::NoProgress,
            format!(
                "no progress in {} for {} messages: decide, mark, or ask the person",
                IdKind::Thread.key(thread.id),
                state.since_progress
            ),
        )
        .with_limit(crate::Limit::ProgressMaxMessages));
    }
    Ok(())
}

/// The state effect of the act, or `invalid_transition` (§6).
fn transition(actor: &Actor<'_>, env: &Checked, thread: &ThreadRec) -> Decided<Effect> {
    let confirmed = thread.state_confirmed_at.is_some();
    let effect = match env.act {
        Act::Answer => {
            state::content_mark(thread.state, confirmed, State::Answered, actor.confirmer)
        }
        Act::Decide => {
            state::content_mark(thread.state, confirmed, State::Decided, actor.confirmer)
        }
        Act::Mark => {
            let target = env.state.expect("mark requires state");
            match state::mark(
                thread.state,
                confirmed,
                target,
                actor.confirmer,
                actor.human,
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

/// `claim_superseded`, `self_attestation`, `already_attested` (§10).
fn check_dialectic(actor: &Actor<'_>, env: &Checked, place: &Place) -> Decided<()> {
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
    if matches!(env.act, Act::Attest | Act::Verify) && claim.identity == actor.identity {
        return refuse(
            Reason::SelfAttestation,
            "you may not attest or verify your own claim",
        );
    }
    if env.act == Act::Attest
        && claim
            .attestations
            .iter()
            .any(|a| a.identity == actor.identity)
    {
        return refuse(
            Reason::AlreadyAttested,
            format!("you have already attested {}", IdKind::Claim.key(claim.id)),
        );
    }
    Ok(())
}

/// The thread limits of §9, checked last (§12.1).
fn check_limits(limits: &Limits, place: &Place) -> Decided<()> {
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
        .with_limit(crate::Limit::ThreadMaxMessages));
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
        .with_limit(crate::Limit::ThreadMaxDepth));
    }
    Ok(())
}

/// Who is due once message `message` is posted (§5). `thread` is the thread's
/// record as the post found it (a new one for a new thread).
pub(crate) fn turn(
    env: &Checked,
    place: &Place,
    thread: &ThreadRec,
    new_thread: bool,
    message: u64,
) -> Option<Awaiting> {
    let author = |identity: &str, extension: &Option<String>| {
        Some(Awaiting {
            identity: identity.to_string(),
            extension: extension.clone(),
            message,
        })
    };
    let to = |to: &str| {
        Some(Awaiting {
            identity: to.to_string(),
            extension: None,
            message,
        })
    };
    let parent = place.parent.as_ref();
    match env.act {
        Act::Ask => match (&env.to, parent) {
            (Some(t), _) => to(t),
            (None, Some(p)) => author(&p.identity, &p.extension),
            (None, None) => to("*"),
        },
        Act::Answer => {
            let (identity, extension) = place.asker.clone().unwrap_or_default();
            author(&identity, &extension)
        }
        Act::Propose => author(&thread.creator, &thread.creator_extension),
        Act::Object => parent.and_then(|p| author(&p.identity, &p.extension)),
        Act::Handoff => env.to.as_deref().and_then(to),
        Act::Decide | Act::Mark => None,
        Act::Reopen => to(env.to.as_deref().unwrap_or("*")),
        Act::Assert if new_thread => to("*"),
        Act::Refute => place
            .claim
            .as_ref()
            .and_then(|c| author(&c.identity, &c.extension)),
        Act::Note | Act::Assert | Act::Attest | Act::Verify => thread.awaiting.clone(),
    }
}

/// Whether the turn entry at `pos` is `thread`'s current turn, for a reader with
/// `extension` (§5): the turn was set by that message, the thread is not locked,
/// and a turn for one extension waits for that extension only.
pub(crate) fn turn_is_current(thread: &ThreadRec, pos: u64, extension: &Option<String>) -> bool {
    let Some(turn) = thread.awaiting.as_ref() else {
        return false;
    };
    if turn.message != pos || thread.locked() {
        return false;
    }
    match (&turn.extension, extension) {
        (Some(want), Some(mine)) if turn.identity != "*" => want == mine,
        _ => true,
    }
}

/// The own-question rule (§8.3): your own turn-setting message is not your inbox.
/// With an extension, that extension's; without one, the bare identity's (the
/// reader is then its author, and a reply would be `self_reply`).
pub(crate) fn own_turn(message: &MessageRec, identity: &str, extension: &Option<String>) -> bool {
    message.identity == identity && &message.extension == extension
}

/// Applies the state effect to the thread's record at `now`, and returns the change
/// its event records. `lock_label`: the token label of a lock holder who is not a
/// person, which labels what they set or confirm.
pub(crate) fn apply_state(
    effect: Effect,
    thread: &mut ThreadRec,
    actor: &Actor<'_>,
    now: i64,
    lock_label: &Option<String>,
) -> Option<Change> {
    match effect {
        Effect::Move(to) => {
            let change = Change::State {
                from: thread.state,
                to,
                confirmation: false,
            };
            thread.state = to;
            thread.state_by_user = actor.human;
            thread.state_confirmed_at = actor.confirmer.then_some(now);
            thread.state_label = lock_label.clone();
            Some(change)
        }
        Effect::Confirm => {
            // The state stays as proposed (origin included); only its confirmation
            // is new, labelled when it came through the lock right.
            thread.state_confirmed_at = Some(now);
            if lock_label.is_some() {
                thread.state_label = lock_label.clone();
            }
            Some(Change::State {
                from: thread.state,
                to: thread.state,
                confirmation: true,
            })
        }
        Effect::None => None,
    }
}

#[cfg(test)]
mod tests;
