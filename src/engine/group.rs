//! Group commit: concurrent posts are coalesced into one write transaction, so one
//! durable write serves many posts, while each post keeps its own outcome.
//!
//! A caller that finds posts waiting and no leader becomes the leader. It opens one
//! transaction and applies pending posts in order as they arrive; while other
//! writers were active in the last batch it keeps the transaction open a little
//! (at most the last batch's duration, at most `MAX_GATHER`) for them to queue
//! again, applying each as it comes and yielding its core between posts, then
//! commits once. The leader then hands leadership on, waits for its commit to reach
//! the disk (for a backend whose commit returns before that; redb's durable commit
//! returns once it is there) while the next leader may already apply the next
//! batch, and wakes each of its callers with its outcome. Guarantees:
//! - a refused post leaves no trace (every check runs before its first write),
//!   and a batch whose posts were all refused is rolled back, not committed: it
//!   costs no commit and no disk sync, whoever sent it;
//! - a storage failure while applying, or a failed commit or sync, fails every post
//!   of the batch (refusals stay refusals), and nothing of the batch is stored;
//! - no call returns success before its batch is durable (when the forum is);
//! - ids follow the order in which posts are applied, batch after batch.
//!
//! Each caller's outcomes land in a slot of its own; callers sleep on one bell of
//! the group (a lock and a condition variable apart from the group's lock), which a
//! leader rings once for its whole batch, and again when it asks a waiting caller
//! to lead. A woken caller looks at its own slot and never queues for the group's
//! lock behind the leader that woke it.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Most posts in one transaction: bounds the latency a leader adds to a batch.
const MAX_BATCH: usize = 512;
/// Longest a leader keeps its transaction open for more posts to arrive.
const MAX_GATHER: Duration = Duration::from_millis(2);

/// What a batch does with its transaction.
pub(crate) trait Batch {
    /// A queued request.
    type Job;
    /// Its successful outcome.
    type Out;
    /// The open transaction.
    type Tx;
    /// A commit still on its way to disk.
    type Pending;
    /// Opens the batch's transaction.
    fn begin(&self) -> Result<Self::Tx>;
    /// Applies one job: `Ok` with its outcome (a refusal included), or `Err` when
    /// the transaction can no longer be trusted and the whole batch must go.
    fn apply(&self, tx: &mut Self::Tx, job: Self::Job) -> Result<Result<Self::Out>, Error>;
    /// Commits the transaction; the next batch may begin once this returns.
    fn commit(&self, tx: Self::Tx) -> Result<Self::Pending>;
    /// Ends a transaction that wrote nothing (every job of its batch was refused)
    /// without a commit.
    fn discard(&self, tx: Self::Tx);
    /// Returns once the commit is durable; called by the batch's leader.
    fn settle(&self, pending: &Self::Pending) -> Result<()>;
}

struct Shared<J, O> {
    /// Jobs waiting for a leader, with the slot their caller sleeps on and their
    /// place in it.
    pending: Vec<(J, Arc<Slot<O>>, usize)>,
    leader: bool,
    /// The leader sleeps on `arrival` for more posts: a new post wakes it.
    gathering: bool,
    /// Size and duration of the last batch: when several writers were active, the
    /// next leader keeps its transaction open for about as many posts.
    last_batch: usize,
    last_cost: Duration,
}

/// A queue of posts and the leader protocol that drains it.
pub(crate) struct Group<J, O> {
    shared: Mutex<Shared<J, O>>,
    /// Signalled when a job arrives, for a leader gathering its batch.
    arrival: Condvar,
    /// Where callers wait for their outcomes.
    bell: Bell,
    /// Longest a leader keeps its transaction open ([`MAX_GATHER`]; longer in tests).
    max_gather: Duration,
}

impl<J, O> Default for Group<J, O> {
    fn default() -> Self {
        Group {
            shared: Mutex::new(Shared {
                pending: Vec::new(),
                leader: false,
                gathering: false,
                last_batch: 0,
                last_cost: Duration::ZERO,
            }),
            arrival: Condvar::new(),
            bell: Bell::new(),
            max_gather: MAX_GATHER,
        }
    }
}

/// Where callers sleep until their outcomes arrive or they are asked to lead: one
/// lock and one condition variable for the whole group, so a leader wakes every
/// caller of its batch with one call. With a slot each (a lock and a condition
/// variable per caller), a leader woke its callers one by one, which cost
/// throughput and CPU time (`docs/decisions/0002-group-commit.md`).
struct Bell {
    /// The callers asleep on `ring`.
    lock: Mutex<usize>,
    ring: Condvar,
}

impl Bell {
    fn new() -> Self {
        Bell {
            lock: Mutex::new(0),
            ring: Condvar::new(),
        }
    }

    /// Wakes every sleeping caller; each looks at its own slot.
    fn ring(&self) {
        // Read under the lock, so that a caller between looking at its slot and
        // falling asleep cannot miss this ring. A notification is a system call
        // even with nobody asleep, and a lone writer's every post rang.
        let sleepers = *self.lock.lock().unwrap_or_else(|p| p.into_inner());
        if sleepers > 0 {
            self.ring.notify_all();
        }
    }
}

/// One caller's outcomes, filled in by the batches that took its jobs.
struct Slot<O> {
    /// One per job of the caller, in its order.
    outcomes: Mutex<Vec<Option<Result<O>>>>,
    /// Outcomes not yet handed over.
    missing: AtomicUsize,
    /// Set when the caller is asked to lead the next batch.
    lead: AtomicBool,
}

/// Why a caller woke.
enum Woke<O> {
    Done(Vec<Result<O>>),
    Lead,
}

impl<O> Slot<O> {
    fn new(jobs: usize) -> Self {
        Slot {
            outcomes: Mutex::new((0..jobs).map(|_| None).collect()),
            missing: AtomicUsize::new(jobs),
            lead: AtomicBool::new(false),
        }
    }

    /// Sleeps until every outcome arrived or the caller is asked to lead.
    fn wait(&self, bell: &Bell) -> Woke<O> {
        let mut rung = bell.lock.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if self.missing.load(Ordering::Acquire) == 0 {
                drop(rung);
                let mut outcomes = self.outcomes.lock().unwrap_or_else(|p| p.into_inner());
                let outcomes = std::mem::take(&mut *outcomes);
                return Woke::Done(outcomes.into_iter().flatten().collect());
            }
            if self.lead.swap(false, Ordering::AcqRel) {
                return Woke::Lead;
            }
            *rung += 1;
            rung = bell.ring.wait(rung).unwrap_or_else(|p| p.into_inner());
            *rung -= 1;
        }
    }

    /// Hands over the outcome of job `index`; its caller hears of it at the next
    /// ring.
    fn finish(&self, index: usize, outcome: Result<O>) {
        self.outcomes.lock().unwrap_or_else(|p| p.into_inner())[index] = Some(outcome);
        // Release: the outcome stored above is seen by whoever sees the count.
        self.missing.fetch_sub(1, Ordering::Release);
    }

    fn ask_to_lead(&self, bell: &Bell) {
        self.lead.store(true, Ordering::Release);
        bell.ring();
    }
}

fn failed<O>(why: &str) -> Result<O> {
    Err(Error::storage(why.to_string()))
}

/// The outcomes of a batch whose commit failed: every accepted post fails with
/// `why`; refusals stay what they were (they wrote nothing).
fn fail_accepted<O>(outcomes: Vec<Result<O>>, why: &str) -> Vec<Result<O>> {
    outcomes
        .into_iter()
        .map(|o| match o {
            Ok(_) => failed(why),
            refused => refused,
        })
        .collect()
}

/// The callers of the jobs a leader took, in order, with each job's place.
type Taken<O> = Vec<(Arc<Slot<O>>, usize)>;

impl<J, O> Group<J, O> {
    fn lock(&self) -> MutexGuard<'_, Shared<J, O>> {
        // A panicking leader is caught below; the data stays consistent.
        self.shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `job`, leads a batch when jobs wait and nobody leads, and returns the
    /// job's outcome once its batch is durable (when the forum is).
    pub(crate) fn submit<B>(&self, job: J, batch: &B) -> Result<O>
    where
        B: Batch<Job = J, Out = O>,
    {
        let mut outcomes = self.submit_all(vec![job], batch);
        outcomes.pop().expect("one outcome per job")
    }

    /// [`Self::submit`] for several jobs at once, as if from as many callers: they
    /// are queued together and may share batches; each keeps its own outcome, in
    /// order. The caller is woken once, when the last outcome is in.
    pub(crate) fn submit_all<B>(&self, jobs: Vec<J>, batch: &B) -> Vec<Result<O>>
    where
        B: Batch<Job = J, Out = O>,
    {
        if jobs.is_empty() {
            return Vec::new();
        }
        let me = Arc::new(Slot::new(jobs.len()));
        {
            let mut shared = self.lock();
            for (index, job) in jobs.into_iter().enumerate() {
                shared.pending.push((job, Arc::clone(&me), index));
            }
            if shared.gathering {
                self.arrival.notify_one();
            }
        }
        loop {
            self.lead_if_free(batch);
            // A caller whose posts are in a batch waits for their outcomes; a
            // caller whose posts still wait is woken to lead when a leader finishes.
            match me.wait(&self.bell) {
                Woke::Done(outcomes) => return outcomes,
                Woke::Lead => continue,
            }
        }
    }

    /// Leads one batch when posts wait for a leader and nobody leads.
    fn lead_if_free<B>(&self, batch: &B)
    where
        B: Batch<Job = J, Out = O>,
    {
        let mut shared = self.lock();
        if shared.leader || shared.pending.is_empty() {
            return;
        }
        shared.leader = true;
        let (target, window) = match shared.last_batch {
            last if last > 1 => (
                last.min(MAX_BATCH),
                // As long as the last batch took, by when its writers can be back
                // (half as long measured worse: `docs/decisions/0002-group-commit.md`).
                shared.last_cost.min(self.max_gather),
            ),
            _ => (1, Duration::ZERO),
        };
        drop(shared);

        let started = Instant::now();
        let mut taken = Taken::new();
        let result = catch_unwind(AssertUnwindSafe(|| {
            self.lead(batch, &mut taken, target, started + window)
        }));
        let mut shared = self.lock();
        shared.leader = false;
        shared.last_batch = taken.len();
        shared.last_cost = started.elapsed();
        // Leadership passes on before the disk wait: the next batch applies
        // while this one is synced.
        let next = shared.pending.first().map(|(_, slot, _)| Arc::clone(slot));
        drop(shared);
        if let Some(next) = next {
            next.ask_to_lead(&self.bell);
        }
        let outcomes = match result {
            Ok((outcomes, Some(pending))) => {
                match catch_unwind(AssertUnwindSafe(|| batch.settle(&pending))) {
                    Ok(Ok(())) => outcomes,
                    Ok(Err(e)) => {
                        fail_accepted(outcomes, &format!("the commit did not reach the disk: {e}"))
                    }
                    Err(payload) => {
                        publish(&taken, None, &self.bell);
                        resume_unwind(payload);
                    }
                }
            }
            Ok((outcomes, None)) => outcomes,
            Err(payload) => {
                publish(&taken, None, &self.bell);
                resume_unwind(payload);
            }
        };
        publish(&taken, Some(outcomes), &self.bell);
    }

    /// The posts queued for the leader, which has taken `taken` so far: waits for
    /// more while fewer than `target` were taken and `deadline` has not passed.
    /// Empty when the batch is complete.
    fn gather(
        &self,
        taken: usize,
        target: usize,
        deadline: Instant,
    ) -> Vec<(J, Arc<Slot<O>>, usize)> {
        let mut shared = self.lock();
        loop {
            if !shared.pending.is_empty() {
                let take = shared.pending.len().min(MAX_BATCH - taken);
                return shared.pending.drain(..take).collect();
            }
            let now = Instant::now();
            if taken >= target || now >= deadline {
                return Vec::new();
            }
            shared.gathering = true;
            shared = match self.arrival.wait_timeout(shared, deadline - now) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
            shared.gathering = false;
        }
    }

    /// The leader's batch: takes posts as they arrive until `target` were taken or
    /// `deadline` passed with none waiting, applies each, commits once. Returns one
    /// outcome per job pushed to `taken`, in order, and the commit's ticket.
    fn lead<B>(
        &self,
        batch: &B,
        taken: &mut Taken<O>,
        target: usize,
        deadline: Instant,
    ) -> (Vec<Result<O>>, Option<B::Pending>)
    where
        B: Batch<Job = J, Out = O>,
    {
        let mut outcomes: Vec<Result<O>> = Vec::new();
        let mut tx: Option<B::Tx> = None;
        loop {
            let jobs = self.gather(taken.len(), target, deadline);
            if jobs.is_empty() {
                break;
            }
            if tx.is_none() {
                match batch.begin() {
                    Ok(opened) => tx = Some(opened),
                    Err(e) => {
                        taken.extend(jobs.into_iter().map(|(_, slot, at)| (slot, at)));
                        let failures = taken.iter().map(|_| failed(&e.to_string()));
                        return (failures.collect(), None);
                    }
                }
            }
            // Every job drained is taken before any is applied: if one breaks the
            // batch (or panics), the jobs after it fail with it instead of being
            // dropped with no outcome.
            let mut work = Vec::with_capacity(jobs.len());
            for (job, caller, at) in jobs {
                taken.push((caller, at));
                work.push(job);
            }
            for job in work {
                let Some(open) = tx.as_mut() else { break };
                let applied = batch.apply(open, job);
                if taken.len() < target {
                    // More posts are due: let a caller queued on this core run up
                    // to its post. The ring wakes most callers onto the ringing
                    // core, often this one; without the yield they waited for the
                    // whole batch while the other core idled
                    // (`docs/decisions/0002-group-commit.md`).
                    std::thread::yield_now();
                }
                match applied {
                    Ok(outcome) => outcomes.push(outcome),
                    Err(e) => {
                        // Part of this post may be written: the whole batch goes.
                        let why = format!("the batch was rolled back: {e}");
                        return (taken.iter().map(|_| failed(&why)).collect(), None);
                    }
                }
            }
            if taken.len() >= MAX_BATCH {
                break;
            }
        }
        let Some(tx) = tx else {
            return (outcomes, None);
        };
        // Refused jobs wrote nothing (`Batch::apply`): with no job accepted there is
        // nothing to commit, and a commit would still sync the disk. A replay counts
        // as accepted: its batch commits as before, so it returns once what it
        // replays is durable.
        if !outcomes.iter().any(Result::is_ok) {
            batch.discard(tx);
            return (outcomes, None);
        }
        match batch.commit(tx) {
            Ok(pending) => (outcomes, Some(pending)),
            Err(e) => (
                fail_accepted(outcomes, &format!("commit failed: {e}")),
                None,
            ),
        }
    }
}

/// Hands each caller of a batch its outcome (`None`: the engine panicked) and
/// wakes them all.
fn publish<O>(taken: &Taken<O>, outcomes: Option<Vec<Result<O>>>, bell: &Bell) {
    let outcomes = outcomes.unwrap_or_else(|| {
        taken
            .iter()
            .map(|_| {
                Err(Error::Internal(
                    "Parley panicked while applying this post's batch; the batch was not \
                     stored"
                        .into(),
                ))
            })
            .collect()
    });
    for ((caller, at), outcome) in taken.iter().zip(outcomes) {
        caller.finish(*at, outcome);
    }
    bell.ring();
}

#[cfg(test)]
mod tests;
