//! Tests of the group commit.

use super::*;
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A batch over a plain vector: "commit" appends what was applied.
#[derive(Default)]
struct Log {
    committed: Mutex<Vec<u64>>,
    batches: AtomicUsize,
    /// Transactions committed, and ended without a commit.
    commits: AtomicUsize,
    discards: AtomicUsize,
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
            99 => Err(Error::storage("disk gone".into())),
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
            return Err(Error::storage("write failed".into()));
        }
        self.commits.fetch_add(1, Ordering::SeqCst);
        self.committed.lock().unwrap().extend(&tx);
        Ok(tx)
    }
    fn discard(&self, tx: Vec<u64>) {
        assert!(tx.is_empty(), "a batch that wrote was discarded");
        self.discards.fetch_add(1, Ordering::SeqCst);
    }
    fn settle(&self, jobs: &Vec<u64>) -> Result<()> {
        std::thread::sleep(self.settle_time);
        if self.fail_settle {
            return Err(Error::storage("fsync failed".into()));
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
fn a_batch_of_refusals_is_discarded_and_one_accepted_job_commits_it() {
    let group: Group<u64, Value> = Group::default();
    let log = Log::default();
    assert!(group.submit(13, &log).is_err());
    let outcomes = group.submit_all(vec![13, 13, 13], &log);
    assert!(outcomes.iter().all(|o| o.is_err()));
    assert_eq!(log.commits.load(Ordering::SeqCst), 0, "nothing to commit");
    assert_eq!(log.discards.load(Ordering::SeqCst), 2);
    assert!(log.settled.lock().unwrap().is_empty(), "nothing to settle");
    let outcomes = group.submit_all(vec![13, 4, 13], &log);
    assert_eq!(outcomes[1].as_ref().unwrap(), &Value::from(40));
    assert_eq!(log.commits.load(Ordering::SeqCst), 1);
    assert_eq!(*log.settled.lock().unwrap(), [4]);
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
        g.submit_all(vec![1, 99, 2], &*l)
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
        assert!(matches!(outcome, Err(Error::Internal(_))), "{outcome:?}");
    }
    assert_eq!(group.submit(3, &*log).unwrap(), Value::from(30));
    assert_eq!(*log.committed.lock().unwrap(), [3]);
}

#[test]
fn a_single_posts_leader_gathers_the_next_posts_into_its_batch() {
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
    let single = submit_in_thread(&group, &log, 2);
    wait_until("the single post's leader gathers", || {
        group.lock().gathering
    });
    // Its batch takes the next posts, and commits once it holds three.
    let more = group.submit_all(vec![3, 4], &*log);
    assert_eq!(more.len(), 2);
    assert_eq!(single.join().unwrap().unwrap(), Value::from(20));
    assert_eq!(*log.committed.lock().unwrap(), [2, 3, 4]);
    assert_eq!(
        log.batches.load(Ordering::SeqCst),
        1,
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
    let outcomes = group.submit_all(vec![1, 13, 2, 3], &log);
    assert_eq!(outcomes.len(), 4);
    assert_eq!(outcomes[0].as_ref().unwrap(), &Value::from(10));
    let refused = outcomes[1].as_ref().unwrap_err();
    assert_eq!(refused.refusal().unwrap().reason, crate::Reason::SelfReply);
    assert_eq!(outcomes[3].as_ref().unwrap(), &Value::from(30));
    assert_eq!(*log.committed.lock().unwrap(), [1, 2, 3]);
    assert_eq!(log.batches.load(Ordering::SeqCst), 1, "queued together");
    assert!(group.submit_all(Vec::new(), &log).is_empty());
}
