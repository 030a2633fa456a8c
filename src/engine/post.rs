//! `post`: one envelope, checked in the order of SPEC §12.1, applied in one
//! write transaction. Every check runs before the first write, so a refusal
//! leaves nothing behind.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::claims;
use super::group::{Batch, Gather};
use super::place::{nearest_ask, resolve, Place};
use super::rules::{
    check_authority, check_dialectic, check_limits, check_loop_guards, check_supersede_authority,
    transition,
};
use super::tokens::{presented, Caller, Right};
use super::view;
use super::Forum;
use crate::error::{Error, Reason, Refusal, Result};
use crate::protocol::acts::{Act, Needs};
use crate::protocol::envelope::{self, Checked, Idempotency};
use crate::protocol::ids::IdKind;
use crate::protocol::state::{Effect, State};
use crate::store::records::{
    Awaiting, Change, ClaimRec, EventRec, MessageRec, PostKey, Remembered, Support, ThreadRec,
    ThreadSpot,
};
use crate::store::{Durable, ReadTx, WriteTx};

/// Posts of one batch, applied in one transaction (see `group`).
struct Poster<'f>(&'f Forum);

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
            .and_then(|caller| {
                let checked = job.checked?;
                forum.apply(&mut **tx, &caller, checked, forum.now())
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
    token: Option<[u8; 32]>,
    checked: std::result::Result<Checked, Refusal>,
}

/// The refusal of a post whose envelope is neither an object nor absent.
pub(super) fn not_an_envelope() -> Error {
    Refusal::new(Reason::InvalidBody, "the envelope must be a JSON object").into()
}

/// A refusal with no extra fields, as an error.
pub(super) fn refuse<T>(reason: Reason, message: impl Into<String>) -> Result<T> {
    Err(Refusal::new(reason, message).into())
}

fn topic(body: &str) -> String {
    body.lines()
        .next()
        .unwrap_or("")
        .trim()
        .chars()
        .take(80)
        .collect()
}

impl Forum {
    pub(crate) fn post(&self, token: Option<&str>, args: &Value) -> Result<Value> {
        // Parsing needs no storage; its verdict is reported after the token's (§12.1).
        let job = PostJob {
            token: presented(token),
            checked: envelope::check(args, &self.config.limits, self.config.dialectic),
        };
        let hint = RecentKeys::hint(&job);
        if let Some(replay) = self.replay_early(&job, hint)? {
            return Ok(replay.render());
        }
        let posted = self.group.submit(job, &Poster(self)).map(Applied::render);
        if let (Some(hint), Ok(_)) = (hint, &posted) {
            self.recent_keys.note(hint);
        }
        posted
    }

    /// A retry whose first post is committed replays from a snapshot, without a
    /// write transaction (or a sync). Anything else (no key, a key not yet
    /// remembered, a token or right that would be refused) goes the normal way,
    /// where the same checks run again inside the batch: a racing retry then
    /// still writes once.
    fn replay_early(&self, job: &PostJob, hint: Option<u64>) -> Result<Option<Applied>> {
        // A key this handle never posted under (the common case: a first try)
        // skips the snapshot; the batch decides.
        if !hint.is_some_and(|h| self.recent_keys.holds(h)) {
            return Ok(None);
        }
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

    /// Posts several envelopes at once, each with its token, as if from as many
    /// concurrent callers of `call(token, "post", envelope)`: they may share group
    /// commits, each keeps its own outcome (in order), and the call returns once
    /// every one is settled. A server that hands its requests to the engine in
    /// bunches saves a thread hand-off and a wake-up per post. A batch this call
    /// leads commits what is queued without waiting for more posts: the caller
    /// gathered its bunch already.
    pub fn post_all(&self, posts: &[(Option<&str>, &Value)]) -> Vec<Result<Value>> {
        let mut jobs = Vec::with_capacity(posts.len());
        let mut hints = Vec::with_capacity(posts.len());
        let mut early: Vec<Option<Result<Value>>> = Vec::with_capacity(posts.len());
        for (token, envelope) in posts {
            if !(envelope.is_object() || envelope.is_null()) {
                early.push(Some(Err(not_an_envelope())));
                continue;
            }
            let job = PostJob {
                token: presented(*token),
                checked: envelope::check(envelope, &self.config.limits, self.config.dialectic),
            };
            let hint = RecentKeys::hint(&job);
            match self.replay_early(&job, hint) {
                Ok(None) => {}
                Ok(Some(replay)) => {
                    early.push(Some(Ok(replay.render())));
                    continue;
                }
                Err(e) => {
                    early.push(Some(Err(e)));
                    continue;
                }
            }
            early.push(None);
            hints.push(hint);
            jobs.push(job);
        }
        let outcomes = self.group.submit_all(jobs, &Poster(self), Gather::No);
        for (hint, outcome) in hints.iter().zip(&outcomes) {
            if let (Some(hint), Ok(_)) = (hint, outcome) {
                self.recent_keys.note(*hint);
            }
        }
        let mut done = outcomes
            .into_iter()
            .map(|outcome| outcome.map(Applied::render));
        early
            .into_iter()
            .map(|e| e.unwrap_or_else(|| done.next().expect("one outcome per job")))
            .collect()
    }

    /// Checks and applies one post inside `tx`. On `Err`, nothing was written.
    pub(crate) fn apply(
        &self,
        tx: &mut dyn WriteTx,
        caller: &Caller,
        env: Checked,
        now: i64,
    ) -> Result<Applied> {
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
        let place = resolve(tx, &env)?;
        let thread = place.thread.as_ref();

        if let Some(t) = thread {
            if t.locked() && act != Act::Reopen {
                return refuse(
                    Reason::ThreadClosed,
                    format!(
                        "{} is closed and confirmed; reopen it first",
                        IdKind::Thread.key(t.id)
                    ),
                );
            }
            check_authority(caller, act, t)?;
        }
        check_supersede_authority(tx, caller, &place)?;
        check_loop_guards(caller, &env, &place)?;
        let effect = match thread {
            Some(t) => transition(caller, &env, t)?,
            None => Effect::None,
        };
        check_dialectic(caller, &env, &place)?;
        check_limits(&self.config.limits, &place)?;

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
            .with_limit("writes_per_minute");
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
        place: Place,
        effect: Effect,
        now: i64,
    ) -> Result<Applied> {
        let act = env.act;
        let msg_id = tx.next_id(IdKind::Message)?;
        // The label of a lock-right holder's token; views show it as `KI · <label>`.
        let lock_label = (!caller.human && caller.confirmer()).then(|| caller.label.clone());
        let mut before = None;
        let mut thread = match place.thread {
            Some(t) => {
                before = Some(placed(&t));
                t
            }
            None => {
                let id = tx.next_id(IdKind::Thread)?;
                ThreadRec {
                    id,
                    root: msg_id,
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
                    last_message: msg_id,
                    root_kind: act.kind().to_string(),
                    last_body: Default::default(),
                }
            }
        };
        let parent = place.parent;
        let mut message = MessageRec {
            id: msg_id,
            kind: act.kind().to_string(),
            thread: thread.id,
            parent: parent.as_ref().map(|p| p.id),
            depth: parent.as_ref().map_or(0, |p| p.depth + 1),
            identity: caller.identity.clone(),
            extension: env.extension.clone(),
            human: caller.human,
            body: env.body,
            created_at: now,
            to: env.to.clone(),
            state: env.state,
            provenance: env.provenance.clone(),
            claim: None,
            counter_claim: None,
            evidence: env.evidence.clone(),
            supersedes: env.supersedes.clone(),
            valid_until: env.valid_until,
            key: env.idempotency.as_ref().map(|k| PostKey {
                key: k.key.clone(),
                digest: k.digest,
            }),
        };

        // The turn (§5).
        let author_turn = |identity: &str, extension: &Option<String>| {
            Some(Awaiting {
                identity: identity.to_string(),
                extension: extension.clone(),
                message: msg_id,
            })
        };
        let to_turn = |to: &str| {
            Some(Awaiting {
                identity: to.to_string(),
                extension: None,
                message: msg_id,
            })
        };
        let new_thread = before.is_none();
        thread.awaiting = match act {
            Act::Ask => match (&env.to, &parent) {
                (Some(to), _) => to_turn(to),
                (None, Some(p)) => author_turn(&p.identity, &p.extension),
                (None, None) => to_turn("*"),
            },
            Act::Answer => {
                let asker = nearest_ask(tx, parent.as_ref())?;
                author_turn(&asker.0, &asker.1)
            }
            Act::Propose => author_turn(&thread.creator.clone(), &thread.creator_extension.clone()),
            Act::Object => parent
                .as_ref()
                .and_then(|p| author_turn(&p.identity, &p.extension)),
            Act::Handoff => env.to.as_deref().and_then(to_turn),
            Act::Decide | Act::Mark => None,
            Act::Reopen => to_turn(env.to.as_deref().unwrap_or("*")),
            Act::Assert if new_thread => to_turn("*"),
            Act::Refute => place
                .claim
                .as_ref()
                .and_then(|c| author_turn(&c.identity, &c.extension)),
            Act::Note | Act::Assert | Act::Attest | Act::Verify => thread.awaiting.clone(),
        };

        // The state (§6, §7).
        let mut changes: Vec<(u64, Change)> = Vec::new();
        match effect {
            Effect::Move(to) => {
                changes.push((
                    thread.id,
                    Change::State {
                        from: thread.state,
                        to,
                        confirmation: false,
                    },
                ));
                thread.state = to;
                thread.state_by_user = caller.human;
                thread.state_confirmed_at = caller.confirmer().then_some(now);
                thread.state_label = lock_label.clone();
            }
            Effect::Confirm => {
                changes.push((
                    thread.id,
                    Change::State {
                        from: thread.state,
                        to: thread.state,
                        confirmation: true,
                    },
                ));
                // The state stays as proposed (origin included); only its
                // confirmation is new, labelled when it came through the lock right.
                thread.state_confirmed_at = Some(now);
                if lock_label.is_some() {
                    thread.state_label = lock_label.clone();
                }
            }
            Effect::None => {}
        }

        // Claims (§10).
        let mut shown_claim = None;
        let new_claim = |tx: &mut dyn WriteTx, refutes: Option<u64>| -> Result<ClaimRec> {
            Ok(ClaimRec {
                id: tx.next_id(IdKind::Claim)?,
                message: msg_id,
                thread: thread.id,
                identity: caller.identity.clone(),
                extension: env.extension.clone(),
                text: message.body.clone(),
                status: "unverified".into(),
                evidence: env.evidence.clone(),
                attestations: Vec::new(),
                verifications: Vec::new(),
                refutations: Vec::new(),
                refutes,
                supersedes: env.supersedes.clone(),
                superseded_by: None,
                valid_until: env.valid_until,
                created_at: now,
            })
        };
        match act {
            Act::Assert => {
                let claim = new_claim(tx, None)?;
                message.claim = Some(claim.id);
                tx.put_claim(&claim)?;
                for mut old in place.superseded {
                    old.superseded_by = Some(claim.id);
                    changes.extend(claims::store_and_propagate(tx, old)?);
                }
                shown_claim = Some(claim.id);
            }
            Act::Attest | Act::Verify => {
                let mut target = place.claim.expect("resolved for attest and verify");
                message.claim = Some(target.id);
                let support = Support {
                    message: msg_id,
                    identity: caller.identity.clone(),
                    evidence: env.evidence.clone(),
                    at: now,
                };
                if act == Act::Attest {
                    target.attestations.push(support);
                } else {
                    target.verifications.push(support);
                }
                // Not created, but the caller wants to see the status it moved.
                shown_claim = Some(target.id);
                changes.extend(claims::store_and_propagate(tx, target)?);
            }
            Act::Refute => {
                let mut target = place.claim.expect("resolved for refute");
                let counter = new_claim(tx, Some(target.id))?;
                tx.put_claim(&counter)?;
                message.claim = Some(target.id);
                message.counter_claim = Some(counter.id);
                target.refutations.push(counter.id);
                changes.extend(claims::store_and_propagate(tx, target)?);
                shown_claim = Some(counter.id);
            }
            _ => {}
        }

        thread
            .last_body
            .insert(caller.identity.clone(), env.body_hash);
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

        let mut events = Vec::with_capacity(changes.len());
        for (event_thread, change) in changes {
            let confirmed = match &change {
                Change::State { .. } => thread.state_confirmed_at.is_some(),
                Change::Claim { .. } => true,
            };
            let event = EventRec {
                id: tx.next_id(IdKind::Event)?,
                thread: event_thread,
                message: msg_id,
                change,
                by_user: caller.human,
                identity: caller.identity.clone(),
                extension: env.extension.clone(),
                label: lock_label.clone(),
                shown_label: None,
                confirmed,
                at: now,
            };
            tx.put_event(&event)?;
            events.push(event);
        }
        let claim = match shown_claim {
            Some(id) => Some(super::read::claim_view(tx, id, now)?),
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

/// Where a thread sits in the turn and activity indexes: a locked thread (closed
/// and confirmed) waits for nobody's inbox, whoever its record says is due.
fn placed(thread: &ThreadRec) -> ThreadSpot {
    let mut spot = thread.spot();
    if thread.locked() {
        spot.awaiting = None;
    }
    spot
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

/// Hints of the (token, key) pairs this handle committed a keyed post under, so
/// that only a likely retry reads a snapshot before it queues. A hint is never
/// trusted: the snapshot (or the batch) decides. Bounded: past its size the set
/// starts over, and retries then replay inside the batch, as after a reopen.
#[derive(Default)]
pub(crate) struct RecentKeys(std::sync::Mutex<std::collections::HashSet<u64>>);

/// Hints kept before the set starts over.
const RECENT_KEYS: usize = 1 << 16;

impl RecentKeys {
    fn hint(job: &PostJob) -> Option<u64> {
        use std::hash::{Hash, Hasher};
        let key = &job.checked.as_ref().ok()?.idempotency.as_ref()?.key;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        job.token.hash(&mut h);
        key.hash(&mut h);
        Some(h.finish())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<u64>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn note(&self, hint: u64) {
        let mut set = self.lock();
        if set.len() >= RECENT_KEYS {
            set.clear();
        }
        set.insert(hint);
    }

    fn holds(&self, hint: u64) -> bool {
        self.lock().contains(&hint)
    }
}

/// What a post wrote. The batch's leader returns it and each caller renders its
/// own result after the commit, so rendering runs beside the next batch.
pub(crate) struct Applied {
    message: MessageRec,
    thread: Arc<ThreadRec>,
    events: Vec<EventRec>,
    /// The claim shown with the result, already rendered (it needs the transaction).
    claim: Option<Value>,
    /// A replay of an earlier post (§14.3): nothing was written.
    replayed: bool,
}

impl Applied {
    /// The result of `post` (SPEC §11): `message`, `thread`, then `event` or
    /// `events` when states changed, and `claim`.
    fn render(self) -> Value {
        let mut out = Map::new();
        out.insert(
            "message".into(),
            Value::Object(view::message_owned(self.message)),
        );
        out.insert("thread".into(), view::thread(&self.thread));
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
            out.insert("claim".into(), claim);
        }
        if self.replayed {
            out.insert("replayed".into(), Value::Bool(true));
        }
        Value::Object(out)
    }
}
