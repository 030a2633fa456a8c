//! Group commit: concurrent posts are coalesced into one write transaction, so one
//! fsync serves many posts, while each post keeps its own outcome.
//!
//! The first caller to find no batch running becomes the leader: it takes every
//! pending post, applies them in order inside one transaction and commits. Callers
//! that arrive meanwhile queue up for the next batch. Guarantees:
//! - a refused post leaves no trace (every check runs before its first write);
//! - a storage failure while applying, or a failed commit, fails every post of the
//!   batch (refusals stay refusals), and nothing of the batch is stored;
//! - no call returns success before the commit of its batch returned (durable when
//!   the forum is durable);
//! - ids follow the order in which posts are applied, batch after batch.

use std::collections::HashMap;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Most posts in one transaction: bounds the latency a leader adds to a batch.
const MAX_BATCH: usize = 512;
/// Longest a leader waits for its batch to fill.
const MAX_GATHER: Duration = Duration::from_millis(2);

struct Shared<J, O> {
    pending: Vec<(u64, J)>,
    done: HashMap<u64, Result<O>>,
    leader: bool,
    next_ticket: u64,
    /// Size and duration of the last batch: when several writers are active, the
    /// next leader waits (a fraction of a commit) for them to queue up again, so a
    /// burst shares one fsync instead of splitting into batches of one or two.
    last_batch: usize,
    last_cost: Duration,
}

/// A queue of posts and the leader protocol that drains it.
pub(crate) struct Group<J, O> {
    shared: Mutex<Shared<J, O>>,
    /// Signalled when outcomes are ready.
    wake: Condvar,
    /// Signalled when a job arrives, for a leader gathering its batch.
    arrival: Condvar,
}

impl<J, O> Default for Group<J, O> {
    fn default() -> Self {
        Group {
            shared: Mutex::new(Shared {
                pending: Vec::new(),
                done: HashMap::new(),
                leader: false,
                next_ticket: 0,
                last_batch: 0,
                last_cost: Duration::ZERO,
            }),
            wake: Condvar::new(),
            arrival: Condvar::new(),
        }
    }
}

impl<J, O> Group<J, O> {
    fn lock(&self) -> MutexGuard<'_, Shared<J, O>> {
        // A panicking leader is caught below; the data stays consistent.
        self.shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Submits `job` and waits for its outcome. `batch` applies a list of jobs in
    /// one transaction and returns one outcome per job, in order.
    pub(crate) fn submit(&self, job: J, batch: impl Fn(Vec<J>) -> Vec<Result<O>>) -> Result<O> {
        let mut shared = self.lock();
        let ticket = shared.next_ticket;
        shared.next_ticket += 1;
        shared.pending.push((ticket, job));
        self.arrival.notify_one();
        loop {
            if let Some(outcome) = shared.done.remove(&ticket) {
                return outcome;
            }
            if shared.leader {
                shared = self
                    .wake
                    .wait(shared)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                continue;
            }
            shared.leader = true;
            shared = self.gather(shared);
            let take = shared.pending.len().min(MAX_BATCH);
            let jobs: Vec<(u64, J)> = shared.pending.drain(..take).collect();
            drop(shared);

            let (tickets, jobs): (Vec<u64>, Vec<J>) = jobs.into_iter().unzip();
            let count = tickets.len();
            let started = Instant::now();
            let result = catch_unwind(AssertUnwindSafe(|| batch(jobs)));
            shared = self.lock();
            shared.leader = false;
            shared.last_batch = count;
            shared.last_cost = started.elapsed();
            let panic = match result {
                Ok(outcomes) if outcomes.len() == count => {
                    shared.done.extend(tickets.into_iter().zip(outcomes));
                    None
                }
                Ok(_) => {
                    for t in tickets {
                        shared.done.insert(
                            t,
                            Err(Error::Storage("a batch lost track of its posts".into())),
                        );
                    }
                    None
                }
                Err(payload) => {
                    for t in tickets {
                        shared.done.insert(
                            t,
                            Err(Error::Storage(
                                "the engine panicked; the batch was not stored".into(),
                            )),
                        );
                    }
                    Some(payload)
                }
            };
            self.wake.notify_all();
            if let Some(payload) = panic {
                drop(shared);
                resume_unwind(payload);
            }
        }
    }
}

impl<J, O> Group<J, O> {
    /// While the last batch had company, waits up to half its duration for as many
    /// jobs to queue. A lone writer (last batch of one) never waits.
    fn gather<'a>(
        &'a self,
        mut shared: MutexGuard<'a, Shared<J, O>>,
    ) -> MutexGuard<'a, Shared<J, O>> {
        if shared.last_batch <= 1 {
            return shared;
        }
        let deadline = Instant::now() + (shared.last_cost / 2).min(MAX_GATHER);
        while shared.pending.len() < shared.last_batch.min(MAX_BATCH) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            shared = match self.arrival.wait_timeout(shared, deadline - now) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn concurrent_jobs_share_batches_and_keep_their_outcomes() {
        let group: Arc<Group<u64, Value>> = Arc::default();
        let batches = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..16u64)
            .map(|i| {
                let group = Arc::clone(&group);
                let batches = Arc::clone(&batches);
                std::thread::spawn(move || {
                    group.submit(i, |jobs| {
                        batches.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        jobs.into_iter().map(|j| Ok(Value::from(j * 10))).collect()
                    })
                })
            })
            .collect();
        for (i, h) in handles.into_iter().enumerate() {
            assert_eq!(h.join().unwrap().unwrap(), Value::from(i as u64 * 10));
        }
        assert!(
            batches.load(Ordering::SeqCst) < 16,
            "some jobs shared a batch"
        );
    }

    #[test]
    fn a_panicking_batch_fails_its_jobs_and_frees_the_group() {
        let group: Group<u64, Value> = Group::default();
        let caught = catch_unwind(AssertUnwindSafe(|| group.submit(1, |_| panic!("boom"))));
        assert!(caught.is_err());
        assert_eq!(
            group
                .submit(2, |jobs| jobs
                    .into_iter()
                    .map(|j| Ok(Value::from(j)))
                    .collect())
                .unwrap(),
            Value::from(2)
        );
    }
}
