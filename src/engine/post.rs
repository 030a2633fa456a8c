//! `post`: one envelope, checked in the order of SPEC §12.1, applied in one
//! write transaction. Every check runs before the first write, so a refusal
//! leaves nothing behind.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::claims;
use super::group::Batch;
use super::place::resolve;
use super::tokens::{presented, Caller, Right};
use super::view::{self, topic};
use super::Forum;
use crate::error::{Error, Reason, Refusal, Result};
use crate::protocol::acts::Needs;
use crate::protocol::decide::{self, Parent, Place};
use crate::protocol::envelope::{self, Checked, Idempotency};
use crate::protocol::ids::IdKind;
use crate::protocol::state::{Effect, State};
use crate::store::records::{
    Change, EventRec, GuardState, MessageRec, PostKey, Remembered, ThreadRec, ThreadSpot,
};
use crate::store::{Durable, ReadTx, WriteTx};

/// Posts of one batch, applied in one transaction (see `group`).
pub(super) struct Poster<'f>(pub(super) &'f Forum);

impl<'f> Batch for Poster<'f> {
    type Job = PostJob;
    type Out = Applied;
    type Tx = Box<dyn WriteTx + 'f>;

    fn begin(&self) -> Result<Self::Tx> {
        self.0.store.write()
    }

    fn apply(&self, tx: &mut Self::Tx, job: PostJob) -> Result<Result<Applied>, Error> {
        let forum = self.0;
        let outcome = forum
            .authenticate_digest(&**tx, job.token.as_ref())
            .and_then(|caller| match &job.import {
                // `import_claim` (SPEC §18.3): `already_imported` before the post's checks.
                Some(import) => forum.apply_import(&mut **tx, &caller, job.checked, import),
                None => forum.apply(&mut **tx, &caller, job.checked?, forum.now()),
            });
        match outcome {
            // A failure below the protocol may have left part of this post written.
            Err(e @ (Error::Storage(_) | Error::NotAForum(_) | Error::SchemaTooNew { .. })) => {
                Err(e)
            }
            outcome => Ok(outcome),
        }
    }

    type Pending = Durable;

    fn commit(&self, tx: Self::Tx) -> Result<Durable> {
        tx.commit_deferred()
    }

    fn discard(&self, tx: Self::Tx) {
        // An uncommitted write transaction rolls back when dropped (redb aborts it,
        // PostgreSQL's transaction sends ROLLBACK), releasing the write lock.
        drop(tx);
    }

    fn settle(&self, pending: &Durable) -> Result<()> {
        pending.wait()?;
        // Durable now: waiting reads may see it.
        self.0.watch.ring();
        Ok(())
    }
}

/// A post waiting for its batch.
pub(crate) struct PostJob {
    /// The digest of its token (see `tokens::presented`).
    pub(super) token: Option<[u8; 32]>,
    pub(super) checked: std::result::Result<Checked, Refusal>,
    /// The origin of the claim an `import_claim` posts (`super::bundles`).
    pub(super) import: Option<Box<crate::store::records::ImportedRec>>,
}

/// The refusal of a post whose envelope is neither an object nor absent.
pub(super) fn not_an_envelope() -> Error {
    Refusal::new(Reason::InvalidBody, "the envelope must be a JSON object").into()
}

impl Forum {
    pub(crate) fn post(&self, token: Option<&str>, args: &Value) -> Result<Value> {
        let guards = self.config.guards;
        self.post_applied(token, args).map(|a| a.render(guards))
    }

    /// `post`, before its result is shown.
    pub(crate) fn post_applied(&self, token: Option<&str>, args: &Value) -> Result<Applied> {
        let checked = envelope::check(args, &self.config.limits, self.config.dialectic);
        self.post_checked(token, checked)
    }

    /// `post` of an envelope already checked (by the generic call from JSON, by
    /// the typed API from its fields). Checking needs no storage; its verdict is
    /// reported after the token's (§12.1).
    pub(crate) fn post_checked(
        &self,
        token: Option<&str>,
        checked: std::result::Result<Checked, Refusal>,
    ) -> Result<Applied> {
        let job = PostJob {
            token: presented(token),
            checked,
            import: None,
        };
        if let Some(replay) = self.replay_early(&job)? {
            return Ok(replay);
        }
        self.group.submit(job, &Poster(self))
    }

    /// A retry whose first post is committed replays from a snapshot, without a
    /// write transaction (or a sync). Anything else (no key, a key not yet
    /// remembered, a token or right that would be refused) goes the normal way,
    /// where the same checks run again inside the batch: a racing retry then
    /// still writes once.
    fn replay_early(&self, job: &PostJob) -> Result<Option<Applied>> {
        let Ok(env) = &job.checked else {
            return Ok(None);
        };
        let Some(key) = &env.idempotency else {
            return Ok(None);
        };
        let tx = self.store.read()?;
        let Ok(caller) = self.authenticate_digest(&*tx, job.token.as_ref()) else {
            return Ok(None);
        };
        let verify = env.act.spec().needs == Needs::Verify;
        if !caller.has(Right::Write) || (verify && !caller.has(Right::Verify)) {
            return Ok(None);
        }
        self.replay(&*tx, &caller, key, self.now())
    }

    /// Checks and applies one post inside `tx`. On `Err`, nothing was written.
    pub(crate) fn apply(
        &self,
        tx: &mut dyn WriteTx,
        caller: &Caller,
        env: Checked,
        now: i64,
    ) -> Result<Applied> {
        #[cfg(feature = "fault-injection")]
        crate::fault::panic_on(&env.body);
        let act = env.act;
        caller.require(Right::Write)?;
        if act.spec().needs == Needs::Verify {
            caller.require(Right::Verify)?;
        }
        let key = env.idempotency.clone();
        if let Some(key) = &key {
            if let Some(replay) = self.replay(&*tx, caller, key, now)? {
                return Ok(replay);
            }
        }
        self.check_rate(tx, caller, now)?;
        self.check_artifacts(&*tx, &env.evidence)?;
        let place = resolve(tx, &env)?;
        let effect = decide::check(
            &caller.actor(),
            &env,
            &place,
            &self.config.limits,
            self.config.guards,
        )?;
        let applied = self.write_post(tx, caller, env, place, effect, now)?;
        if let Some(key) = key {
            let post = Remembered {
                message: applied.message.id,
                at: now,
                digest: key.digest,
            };
            tx.remember(&caller.identity, &key.key, &post)?;
            self.forget_expired(tx, now)?;
        }
        Ok(applied)
    }

    fn check_rate(&self, tx: &dyn WriteTx, caller: &Caller, now: i64) -> Result<()> {
        let per_minute = self.config.limits.writes_per_minute;
        if caller.human || per_minute == 0 {
            return Ok(());
        }
        let recent = tx.writes_since(&caller.identity, now - 59_999)?;
        if recent.len() >= per_minute {
            let oldest_counted = recent[recent.len() - per_minute];
            let mut refusal = Refusal::new(
                Reason::RateLimited,
                format!("at most {per_minute} writes per minute"),
            )
            .with_limit(crate::Limit::WritesPerMinute);
            refusal.retry_after_ms = Some((oldest_counted + 60_000 - now).max(1) as u64);
            return Err(refusal.into());
        }
        Ok(())
    }

    /// Writes the post. The envelope is taken whole so its body moves into the
    /// message rather than being copied: this runs in the batch's serial part.
    fn write_post(
        &self,
        tx: &mut dyn WriteTx,
        caller: &Caller,
        env: Checked,
        mut place: Place,
        effect: Effect,
        now: i64,
    ) -> Result<Applied> {
        let act = env.act;
        let msg_id = tx.next_id(IdKind::Message)?;
        // The label of a lock-right holder's token; views show it as `KI · <label>`.
        let lock_label = (!caller.human && caller.confirmer()).then(|| caller.label.clone());
        let mut before = None;
        let mut thread = match place.thread.take() {
            Some(t) => {
                before = Some(placed(&t));
                t
            }
            None => {
                let id = tx.next_id(IdKind::Thread)?;
                new_thread(id, msg_id, caller, &env, now)
            }
        };
        // The turn (§5) and the state (§6, §7).
        let new_thread = before.is_none();
        let awaiting = decide::turn(&env, &place, &thread, new_thread, msg_id);
        thread.awaiting = awaiting;
        let mut changes: Vec<(u64, Change)> = Vec::new();
        if let Some(change) =
            decide::apply_state(effect, &mut thread, &caller.actor(), now, &lock_label)
        {
            changes.push((thread.id, change));
        }

        let parent = place.parent.take();
        let body_hash = env.body_hash;
        // Made already when the post was judged by the echo rule.
        let folded = self.config.guards.then(|| env.folded_hash());
        let mut message = message_record(msg_id, thread.id, parent.as_ref(), caller, env, now);

        // Claims (§10).
        let shown_claim = claims::apply(
            tx,
            act,
            &mut message,
            place.claim.take(),
            std::mem::take(&mut place.superseded),
            now,
            self.quorum(),
            &mut changes,
        )?;

        thread.last_body.insert(caller.identity.clone(), body_hash);
        if let Some(folded) = folded {
            // The guards' state (§15). Progress: a new thread, a person, or a
            // change of this thread's state or of one of its claims' status.
            let progress = new_thread || changes.iter().any(|(t, _)| *t == thread.id);
            thread.guards.count(act, caller.human, progress);
            let window = self.config.limits.echo_window;
            thread
                .guards
                .remember(msg_id, &caller.identity, folded, window);
        } else {
            // Off, the profile costs nothing and keeps nothing: a thread starts
            // afresh (no count, an empty window) when it is switched on again,
            // rather than judged by a stale window.
            thread.guards = GuardState::default();
        }
        thread.message_count += 1;
        thread.updated_at = now;
        thread.last_message = msg_id;
        // Shared with the store, which keeps it for the next post to this thread.
        let thread = Arc::new(thread);
        tx.put_post(&message, &thread, before.as_ref(), &placed(&thread))?;
        tx.index_words(message.id)?;
        if !caller.human && self.config.limits.writes_per_minute > 0 {
            tx.record_write(&caller.identity, msg_id, now, now - 60_000)?;
        }

        if folded.is_some() {
            restart_other_counts(tx, thread.id, &changes)?;
        }
        let confirmed = thread.state_confirmed_at.is_some();
        let events = record_events(tx, changes, confirmed, &message, &lock_label)?;
        let claim = match shown_claim {
            Some(id) => Some(claims::parts(tx, id, now, self.shown_quorum())?),
            None => None,
        };
        Ok(Applied {
            message,
            thread,
            events,
            claim,
            replayed: false,
        })
    }

    /// §14.3: a post under a remembered key replays (same envelope) or is refused
    /// (another one). `None`: the post goes on, and is remembered once written.
    fn replay(
        &self,
        tx: &dyn ReadTx,
        caller: &Caller,
        key: &Idempotency,
        now: i64,
    ) -> Result<Option<Applied>> {
        let Some((earlier, message)) = tx.remembered(&caller.identity, &key.key)? else {
            return Ok(None);
        };
        if earlier.at + self.ttl_ms() <= now {
            return Ok(None);
        }
        if earlier.digest != key.digest {
            return Err(Refusal::new(
                Reason::IdempotencyConflict,
                format!(
                    "idempotency_key `{}` was used for another envelope; use a new key for a new post",
                    key.key
                ),
            )
            .with_field("idempotency_key")
            .into());
        }
        let Some(thread) = tx.thread(message.thread)? else {
            return Ok(None);
        };
        Ok(Some(Applied {
            message,
            thread: Arc::new(thread),
            events: Vec::new(),
            claim: None,
            replayed: true,
        }))
    }

    fn ttl_ms(&self) -> i64 {
        (self.config.limits.idempotency_ttl_s as i64).saturating_mul(1000)
    }
}

/// A claim's change of status is progress in the claim's thread (SPEC §15), which
/// may not be the thread posted to (a refute or a supersession across threads):
/// that thread's count restarts, in the same transaction.
fn restart_other_counts(
    tx: &mut dyn WriteTx,
    posted_to: u64,
    changes: &[(u64, Change)],
) -> Result<()> {
    let mut done: Vec<u64> = Vec::new();
    for (id, change) in changes {
        if *id == posted_to || done.contains(id) || !matches!(change, Change::Claim { .. }) {
            continue;
        }
        done.push(*id);
        if let Some(mut other) = tx.thread(*id)? {
            if other.guards.since_progress != 0 {
                other.guards.since_progress = 0;
                tx.put_thread(&Arc::new(other))?;
            }
        }
    }
    Ok(())
}

/// Where a thread sits in the turn and activity indexes: a locked thread (closed
/// and confirmed) waits for nobody's inbox, whoever its record says is due.
fn placed(thread: &ThreadRec) -> ThreadSpot {
    let mut spot = thread.spot();
    if thread.locked() {
        spot.awaiting = None;
    }
    spot
}

/// The record of a thread that message `root` of `caller` opens at `now`.
fn new_thread(id: u64, root: u64, caller: &Caller, env: &Checked, now: i64) -> ThreadRec {
    ThreadRec {
        id,
        root,
        topic: topic(&env.body),
        creator: caller.identity.clone(),
        creator_extension: env.extension.clone(),
        state: State::Open,
        state_by_user: caller.human,
        state_confirmed_at: Some(now),
        state_label: None,
        awaiting: None,
        message_count: 0,
        created_at: now,
        updated_at: now,
        last_message: root,
        root_kind: env.act,
        last_body: Default::default(),
        guards: Default::default(),
    }
}

/// The record of message `id` of `caller` in `thread` under `parent`: the envelope
/// is taken whole so its body moves into the message rather than being copied.
fn message_record(
    id: u64,
    thread: u64,
    parent: Option<&Parent>,
    caller: &Caller,
    env: Checked,
    now: i64,
) -> MessageRec {
    MessageRec {
        id,
        kind: env.act,
        thread,
        parent: parent.map(|p| p.id),
        depth: parent.map_or(0, |p| p.depth + 1),
        identity: caller.identity.clone(),
        extension: env.extension,
        human: caller.human,
        body: env.body,
        created_at: now,
        to: env.to,
        state: env.state,
        provenance: env.provenance,
        claim: None,
        counter_claim: None,
        evidence: env.evidence,
        supersedes: env.supersedes,
        valid_until: env.valid_until,
        key: env.idempotency.map(|k| PostKey {
            key: k.key,
            digest: k.digest,
        }),
    }
}

/// Stores an event for each change a post made (§8.4), in order. A state change
/// is confirmed when the thread's state now is; a claim's status always is.
fn record_events(
    tx: &mut dyn WriteTx,
    changes: Vec<(u64, Change)>,
    state_confirmed: bool,
    message: &MessageRec,
    lock_label: &Option<String>,
) -> Result<Vec<EventRec>> {
    let mut events = Vec::with_capacity(changes.len());
    for (thread, change) in changes {
        let confirmed = match &change {
            Change::State { .. } => state_confirmed,
            Change::Claim { .. } => true,
        };
        let event = EventRec {
            id: tx.next_id(IdKind::Event)?,
            thread,
            message: message.id,
            change,
            by_user: message.human,
            identity: message.identity.clone(),
            extension: message.extension.clone(),
            label: lock_label.clone(),
            shown_label: None,
            confirmed,
            at: message.created_at,
        };
        tx.put_event(&event)?;
        events.push(event);
    }
    Ok(events)
}

/// Expired idempotency records a keyed post forgets, at most: the store hands
/// them out oldest first, so none is ever looked for by a scan.
const FORGET_PER_POST: usize = 64;

impl Forum {
    /// Forgets expired keys: at most once a second, or at every keyed post while
    /// a run finds a full batch of them.
    fn forget_expired(&self, tx: &mut dyn WriteTx, now: i64) -> Result<()> {
        use std::sync::atomic::Ordering::Relaxed;
        if now < self.next_purge.load(Relaxed) {
            return Ok(());
        }
        let forgotten = tx.forget_remembered(now - self.ttl_ms(), FORGET_PER_POST)?;
        let next = if forgotten.more { now } else { now + 1000 };
        self.next_purge.store(next, Relaxed);
        Ok(())
    }
}

/// What a post wrote. The batch's leader returns it and each caller renders its
/// own result after the commit, so rendering runs beside the next batch.
pub(crate) struct Applied {
    pub(crate) message: MessageRec,
    pub(crate) thread: Arc<ThreadRec>,
    pub(crate) events: Vec<EventRec>,
    /// The claim shown with the result, read inside the transaction.
    pub(crate) claim: Option<claims::ClaimParts>,
    /// A replay of an earlier post (§14.3): nothing was written.
    pub(crate) replayed: bool,
}

impl Applied {
    /// The result of `post` (SPEC §11): `message`, `thread`, then `event` or
    /// `events` when states changed, and `claim`. `guards`: whether the thread
    /// shows `since_progress` (the guards profile is on).
    pub(crate) fn render(self, guards: bool) -> Value {
        let mut out = Map::new();
        out.insert(
            "message".into(),
            Value::Object(view::message_owned(self.message)),
        );
        out.insert("thread".into(), view::thread(&self.thread, guards));
        let mut events: Vec<Value> = self.events.iter().map(view::event).collect();
        match events.len() {
            0 => {}
            1 => {
                out.insert("event".into(), events.pop().expect("one event"));
            }
            _ => {
                out.insert("events".into(), Value::Array(events));
            }
        }
        if let Some(claim) = self.claim {
            out.insert("claim".into(), claim.json());
        }
        if self.replayed {
            out.insert("replayed".into(), Value::Bool(true));
        }
        Value::Object(out)
    }
}
