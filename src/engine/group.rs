//! Group commit: concurrent posts are coalesced into one write transaction, so one
//! durable write serves many posts, while each post keeps its own outcome.
//!
//! A caller that finds posts waiting and no leader becomes the leader. It opens one
//! transaction and applies pending posts in order as they arrive; while other
//! writers were active in the last batch it keeps the transaction open a little
//! (at most the last batch's duration, at most `MAX_GATHER`) for them to queue
//! again, applying each as it comes and yielding its core between posts, then
//! commits once. A caller that brings a bunch it gathered itself (a server's queued
//! requests) does not wait for more: more posts could reach the group only through
//! another bunch. The leader then hands leadership on, waits for its commit to reach
//! the disk (for a backend whose commit returns before that; redb's durable commit
//! returns once it is there) while the next leader may already apply the next
//! batch, and wakes each of its callers with its outcome. Guarantees:
//! - a refused post leaves no trace (every check runs before its first write);
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

/// Whether a leader keeps its transaction open for posts still to come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gather {
    /// For about as many posts as the last batch held: callers post one at a time.
    Adaptive,
    /// No: the caller brings a bunch it gathered itself. While its leader waited,
    /// the server's next requests queued outside the group (measured in
    /// `docs/performance.md`, "Choices of the group commit").
    No,
}

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
/// throughput and CPU time (`docs/performance.md`, "Choices of the group commit").
struct Bell {
    lock: Mutex<()>,
    ring: Condvar,
}

impl Bell {
    fn new() -> Self {
        Bell {
            lock: Mutex::new(()),
            ring: Condvar::new(),
        }
    }

    /// Wakes every sleeping caller; each looks at its own slot.
    fn ring(&self) {
        // Taken and released so that a caller between looking at its slot and
        // falling asleep cannot miss this ring.
        drop(self.lock.lock().unwrap_or_else(|p| p.into_inner()));
        self.ring.notify_all();
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
            rung = bell.ring.wait(rung).unwrap_or_else(|p| p.into_inner());
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
    Err(Error::Storage(why.to_string()))
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
        let mut outcomes = self.submit_all(vec![job], batch, Gather::Adaptive);
        outcomes.pop().expect("one outcome per job")
    }

    /// [`Self::submit`] for several jobs at once, as if from as many callers: they
    /// are queued together and may share batches; each keeps its own outcome, in
    /// order. The caller is woken once, when the last outcome is in. `gather` says
    /// whether a batch this caller leads waits for more posts.
    pub(crate) fn submit_all<B>(&self, jobs: Vec<J>, batch: &B, gather: Gather) -> Vec<Result<O>>
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
            self.lead_if_free(batch, gather);
            // A caller whose posts are in a batch waits for their outcomes; a
            // caller whose posts still wait is woken to lead when a leader finishes.
            match me.wait(&self.bell) {
                Woke::Done(outcomes) => return outcomes,
                Woke::Lead => continue,
            }
        }
    }

    /// Leads one batch when posts wait for a leader and nobody leads.
    fn lead_if_free<B>(&self, batch: &B, gather: Gather)
    where
        B: Batch<Job = J, Out = O>,
    {
        let mut shared = self.lock();
        if shared.leader || shared.pending.is_empty() {
            return;
        }
        shared.leader = true;
        let (target, window) = match gather {
            Gather::Adaptive if shared.last_batch > 1 => (
                shared.last_batch.min(MAX_BATCH),
                // As long as the last batch took, by when its writers can be back
                // (half as long measured worse: `docs/performance.md`).
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
                        let why = format!("the commit did not reach the disk: {e}");
                        outcomes
                            .into_iter()
                            .map(|o| match o {
                                Ok(_) => failed(&why),
                                refused => refused,
                            })
                            .collect()
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
            let jobs = {
                let mut shared = self.lock();
                loop {
                    if !shared.pending.is_empty() {
                        let take = shared.pending.len().min(MAX_BATCH - taken.len());
                        break shared.pending.drain(..take).collect::<Vec<_>>();
                    }
                    let now = Instant::now();
                    if taken.len() >= target || now >= deadline {
                        break Vec::new();
                    }
                    shared.gathering = true;
                    shared = match self.arrival.wait_timeout(shared, deadline - now) {
                        Ok((guard, _)) => guard,
                        Err(poisoned) => poisoned.into_inner().0,
                    };
                    shared.gathering = false;
                }
            };
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
                    // whole batch while the other core idled (`docs/performance.md`).
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
        match batch.commit(tx) {
            Ok(pending) => (outcomes, Some(pending)),
            Err(e) => {
                let why = format!("commit failed: {e}");
                let outcomes = outcomes
                    .into_iter()
                    .map(|o| match o {
                        Ok(_) => failed(&why),
                        refused => refused,
                    })
                    .collect();
                (outcomes, None)
            }
        }
    }
}

/// Hands each caller of a batch its outcome (`None`: the engine panicked) and
/// wakes them all.
fn publish<O>(taken: &Taken<O>, outcomes: Option<Vec<Result<O>>>, bell: &Bell) {
    let outcomes = outcomes.unwrap_or_else(|| {
        taken
            .iter()
            .map(|_| failed("the engine panicked; the batch was not stored"))
            .collect()
    });
    for ((caller, at), outcome) in taken.iter().zip(outcomes) {
        caller.finish(*at, outcome);
    }
    bell.ring();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A batch over a plain vector: "commit" appends what was applied.
    #[derive(Default)]
    struct Log {
        committed: Mutex<Vec<u64>>,
        batches: AtomicUsize,
        fail_commit: bool,
        fail_settle: bool,
        /// How long a commit takes to "reach the disk".
        settle_time: Duration,
        /// Jobs whose batch settled, in order.
        settled: Mutex<Vec<u64>>,
        /// A [`GATED`] job is applied only once this is set.
        gate: std::sync::atomic::AtomicBool,
    }

    impl Batch for Log {
        type Job = u64;
        type Out = Value;
        type Tx = Vec<u64>;
        fn begin(&self) -> Result<Vec<u64>> {
            self.batches.fetch_add(1, Ordering::SeqCst);
            Ok(Vec::new())
        }
        fn apply(&self, tx: &mut Vec<u64>, job: u64) -> Result<Result<Value>, Error> {
            match job {
                666 => panic!("boom"),
                13 => Ok(Err(crate::Refusal::new(
                    crate::Reason::SelfReply,
                    "refused",
                )
                .into())),
                99 => Err(Error::Storage("disk gone".into())),
                GATED => {
                    wait_until("the gate opened", || self.gate.load(Ordering::SeqCst));
                    tx.push(job);
                    Ok(Ok(Value::from(job * 10)))
                }
                _ => {
                    let pause = if job == SLOW { 50 } else { 2 };
                    std::thread::sleep(Duration::from_millis(pause));
                    tx.push(job);
                    Ok(Ok(Value::from(job * 10)))
                }
            }
        }
        type Pending = Vec<u64>;
        fn commit(&self, tx: Vec<u64>) -> Result<Vec<u64>> {
            if self.fail_commit {
                return Err(Error::Storage("write failed".into()));
            }
            self.committed.lock().unwrap().extend(&tx);
            Ok(tx)
        }
        fn settle(&self, jobs: &Vec<u64>) -> Result<()> {
            std::thread::sleep(self.settle_time);
            if self.fail_settle {
                return Err(Error::Storage("fsync failed".into()));
            }
            self.settled.lock().unwrap().extend(jobs);
            Ok(())
        }
    }

    /// A job that takes 50 ms to apply.
    const SLOW: u64 = 50;
    /// A job applied once the test opens the log's gate.
    const GATED: u64 = 77;

    /// Polls `done` every millisecond, for at most 5 s.
    fn wait_until(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting until {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Submits `job` from a thread of its own.
    fn submit_in_thread(
        group: &Arc<Group<u64, Value>>,
        log: &Arc<Log>,
        job: u64,
    ) -> std::thread::JoinHandle<Result<Value>> {
        let (group, log) = (Arc::clone(group), Arc::clone(log));
        std::thread::spawn(move || group.submit(job, &*log))
    }

    #[test]
    fn a_caller_woken_by_an_earlier_batch_waits_for_its_own() {
        // Callers sleep on one bell: the first batch's ring also wakes a caller
        // whose post is in the second batch, not yet settled. It must sleep on.
        let group: Arc<Group<u64, Value>> = Arc::default();
        let log = Arc::new(Log {
            settle_time: Duration::from_millis(200),
            ..Log::default()
        });
        let spawn = |job: u64| submit_in_thread(&group, &log, job);
        let first = spawn(1);
        wait_until("the first batch committed", || {
            log.committed.lock().unwrap().len() == 1
        });
        // The second batch starts with a slow post; a third joins it meanwhile.
        let second = spawn(SLOW);
        wait_until("the second batch began", || {
            log.batches.load(Ordering::SeqCst) == 2
        });
        let third = spawn(3);
        wait_until("the second batch committed", || {
            log.committed.lock().unwrap().len() == 3
        });
        assert_eq!(
            log.batches.load(Ordering::SeqCst),
            2,
            "the third post joined the second batch"
        );
        assert_eq!(first.join().unwrap().unwrap(), Value::from(10));
        // The first batch rang; the second settles for about 50 ms more.
        assert!(
            !third.is_finished(),
            "the third post's batch is not settled"
        );
        assert_eq!(third.join().unwrap().unwrap(), Value::from(30));
        assert_eq!(second.join().unwrap().unwrap(), Value::from(SLOW * 10));
        assert_eq!(*log.settled.lock().unwrap(), [1, SLOW, 3]);
    }

    #[test]
    fn concurrent_jobs_share_batches_and_keep_their_outcomes() {
        let group: Arc<Group<u64, Value>> = Arc::default();
        let log = Arc::new(Log::default());
        let handles: Vec<_> = (0..16u64)
            .map(|i| submit_in_thread(&group, &log, i + 100))
            .collect();
        for (i, h) in handles.into_iter().enumerate() {
            assert_eq!(
                h.join().unwrap().unwrap(),
                Value::from((i as u64 + 100) * 10)
            );
        }
        assert!(
            log.batches.load(Ordering::SeqCst) < 16,
            "some jobs shared a batch"
        );
        assert_eq!(log.committed.lock().unwrap().len(), 16);
    }

    #[test]
    fn refusals_stay_refusals_and_failures_fail_the_batch() {
        let group: Group<u64, Value> = Group::default();
        let log = Log::default();
        let refused = group.submit(13, &log).unwrap_err();
        assert_eq!(refused.refusal().unwrap().reason, crate::Reason::SelfReply);
        assert!(matches!(group.submit(99, &log), Err(Error::Storage(_))));
        assert!(log.committed.lock().unwrap().is_empty());
        let failing = Log {
            fail_commit: true,
            ..Log::default()
        };
        assert!(matches!(group.submit(1, &failing), Err(Error::Storage(_))));
        assert_eq!(
            group
                .submit(13, &failing)
                .unwrap_err()
                .refusal()
                .unwrap()
                .reason,
            crate::Reason::SelfReply
        );
    }

    #[test]
    fn a_panicking_batch_fails_its_jobs_and_frees_the_group() {
        let group: Group<u64, Value> = Group::default();
        let log = Log::default();
        let caught = catch_unwind(AssertUnwindSafe(|| group.submit(666, &log)));
        assert!(caught.is_err());
        assert_eq!(group.submit(2, &log).unwrap(), Value::from(20));
    }

    /// The outcome of `handle`, which must come within 5 s.
    fn within_5s<T: Send + 'static>(handle: std::thread::JoinHandle<T>) -> std::thread::Result<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(handle.join()));
        rx.recv_timeout(Duration::from_secs(5))
            .expect("the caller got no outcome within 5 s")
    }

    #[test]
    fn a_broken_batch_fails_every_job_it_took_and_strands_none() {
        let group: Arc<Group<u64, Value>> = Arc::default();
        let log = Arc::new(Log::default());
        // One caller's three jobs are taken together; the second breaks the batch.
        let (g, l) = (Arc::clone(&group), Arc::clone(&log));
        let all = within_5s(std::thread::spawn(move || {
            g.submit_all(vec![1, 99, 2], &*l, Gather::Adaptive)
        }));
        let all = all.unwrap();
        assert_eq!(all.len(), 3);
        assert!(
            all.iter().all(|o| matches!(o, Err(Error::Storage(_)))),
            "{all:?}"
        );

        // A leader applies a gated job; meanwhile a panicking job and another
        // caller's job queue, and the leader takes both at once.
        let slow = submit_in_thread(&group, &log, GATED);
        wait_until("the gated batch began", || {
            log.batches.load(Ordering::SeqCst) == 2
        });
        let boom = submit_in_thread(&group, &log, 666);
        let other = submit_in_thread(&group, &log, 2);
        wait_until("both jobs queued", || group.lock().pending.len() == 2);
        log.gate.store(true, Ordering::SeqCst);
        assert!(within_5s(slow).is_err(), "the panic reaches the leader");
        for follower in [boom, other] {
            let outcome = within_5s(follower).unwrap();
            assert!(matches!(outcome, Err(Error::Storage(_))), "{outcome:?}");
        }
        assert_eq!(group.submit(3, &*log).unwrap(), Value::from(30));
        assert_eq!(*log.committed.lock().unwrap(), [3]);
    }

    #[test]
    fn a_bunch_does_not_wait_for_more_posts_and_single_posts_do() {
        let group = Arc::new(Group::<u64, Value> {
            max_gather: Duration::from_secs(30),
            ..Group::default()
        });
        let log = Arc::new(Log::default());
        // As if the last batch held three posts and took 30 s: a leader posting one
        // at a time would keep its transaction open for two more, for up to 30 s.
        let expect_more = || {
            let mut shared = group.lock();
            shared.last_batch = 3;
            shared.last_cost = Duration::from_secs(30);
        };
        expect_more();
        let started = Instant::now();
        let bunch = group.submit_all(vec![1], &*log, Gather::No);
        assert_eq!(bunch[0].as_ref().unwrap(), &Value::from(10));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the bunch waited"
        );

        expect_more();
        let single = submit_in_thread(&group, &log, 2);
        wait_until("the single post's leader gathers", || {
            group.lock().gathering
        });
        // Its batch takes the next posts, and commits once it holds three.
        let more = group.submit_all(vec![3, 4], &*log, Gather::No);
        assert_eq!(more.len(), 2);
        assert_eq!(single.join().unwrap().unwrap(), Value::from(20));
        assert_eq!(*log.committed.lock().unwrap(), [1, 2, 3, 4]);
        assert_eq!(
            log.batches.load(Ordering::SeqCst),
            2,
            "2, 3 and 4 shared a batch"
        );
    }

    #[test]
    fn a_failed_sync_fails_the_batch_but_not_its_refusals() {
        let group: Group<u64, Value> = Group::default();
        let log = Log {
            fail_settle: true,
            ..Log::default()
        };
        assert!(matches!(group.submit(1, &log), Err(Error::Storage(_))));
        let refused = group.submit(13, &log).unwrap_err();
        assert_eq!(refused.refusal().unwrap().reason, crate::Reason::SelfReply);
    }

    #[test]
    fn the_next_batch_commits_while_one_settles_and_nobody_hears_early() {
        let group: Arc<Group<u64, Value>> = Arc::default();
        let log = Arc::new(Log {
            settle_time: Duration::from_millis(150),
            ..Log::default()
        });
        let first = submit_in_thread(&group, &log, 1);
        // Wait for the first batch to commit; it now settles for 150 ms.
        wait_until("the first batch committed", || {
            !log.committed.lock().unwrap().is_empty()
        });
        let second = submit_in_thread(&group, &log, 2);
        let deadline = Instant::now() + Duration::from_millis(100);
        while log.committed.lock().unwrap().len() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            *log.committed.lock().unwrap(),
            [1, 2],
            "the second batch committed while the first settled"
        );
        assert!(
            log.settled.lock().unwrap().is_empty(),
            "nothing settled yet"
        );
        assert!(!first.is_finished(), "no outcome before the sync");
        assert_eq!(first.join().unwrap().unwrap(), Value::from(10));
        assert_eq!(second.join().unwrap().unwrap(), Value::from(20));
        // The two settles run at once (that is the point), so either may end first.
        let mut settled = log.settled.lock().unwrap().clone();
        settled.sort_unstable();
        assert_eq!(settled, [1, 2]);
    }

    #[test]
    fn several_jobs_of_one_caller_share_a_batch_and_keep_their_outcomes() {
        let group: Group<u64, Value> = Group::default();
        let log = Log::default();
        let outcomes = group.submit_all(vec![1, 13, 2, 3], &log, Gather::Adaptive);
        assert_eq!(outcomes.len(), 4);
        assert_eq!(outcomes[0].as_ref().unwrap(), &Value::from(10));
        let refused = outcomes[1].as_ref().unwrap_err();
        assert_eq!(refused.refusal().unwrap().reason, crate::Reason::SelfReply);
        assert_eq!(outcomes[3].as_ref().unwrap(), &Value::from(30));
        assert_eq!(*log.committed.lock().unwrap(), [1, 2, 3]);
        assert_eq!(log.batches.load(Ordering::SeqCst), 1, "queued together");
        assert!(group.submit_all(Vec::new(), &log, Gather::No).is_empty());
    }
}
