//! The listen profile (SPEC §14.2): reads that wait for their first item.
//!
//! Every durable commit rings the forum's [`Watch`]: it counts commits, wakes the
//! calls blocked in [`Forum::wait_for_items`], wakes the futures of
//! [`Subscription::changed`], and calls the hooks of [`Forum::on_commit`] (the C and
//! Python bindings turn those into a readable file descriptor). A waiting call
//! holds no transaction while it waits: it runs its whole read again, token check
//! included, after each commit, so it only ever sees committed, durable data.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::read::Listing;
use super::Forum;
use crate::error::{Reason, Refusal, Result};

/// A hook called after each durable commit.
type Hook = Arc<dyn Fn() + Send + Sync>;

/// The commit bell of one forum.
#[derive(Default)]
pub(crate) struct Watch {
    state: Mutex<WatchState>,
    rung: Condvar,
}

#[derive(Default)]
struct WatchState {
    /// Commits so far (since the forum was opened).
    commits: u64,
    /// Set by [`Forum::end_waits`]: every wait returns with its current result.
    closed: bool,
    wakers: Vec<Waker>,
    hooks: Vec<(u64, Hook)>,
    next_hook: u64,
    /// Calls blocked in [`Watch::wait_past`]: with none, a ring wakes nobody and
    /// makes no system call.
    blocked: usize,
}

impl Watch {
    fn lock(&self) -> MutexGuard<'_, WatchState> {
        // Every update below is whole: a panic elsewhere leaves nothing half-done.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Rings after a durable commit.
    pub(crate) fn ring(&self) {
        let (wakers, hooks, blocked) = {
            let mut state = self.lock();
            state.commits += 1;
            let hooks: Vec<Hook> = state.hooks.iter().map(|(_, h)| Arc::clone(h)).collect();
            (std::mem::take(&mut state.wakers), hooks, state.blocked)
        };
        if blocked > 0 {
            self.rung.notify_all();
        }
        for waker in wakers {
            waker.wake();
        }
        for hook in hooks {
            hook();
        }
    }

    fn close(&self) {
        let (wakers, hooks) = {
            let mut state = self.lock();
            state.closed = true;
            let hooks: Vec<Hook> = state.hooks.iter().map(|(_, h)| Arc::clone(h)).collect();
            (std::mem::take(&mut state.wakers), hooks)
        };
        self.rung.notify_all();
        for waker in wakers {
            waker.wake();
        }
        for hook in hooks {
            hook();
        }
    }

    /// Blocks until a commit after `seen`, the watch closing, or `deadline`;
    /// returns the commit count then.
    fn wait_past(&self, seen: u64, deadline: Instant) -> u64 {
        let mut state = self.lock();
        state.blocked += 1;
        while state.commits == seen && !state.closed {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            state = self
                .rung
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        state.blocked -= 1;
        state.commits
    }
}

/// A handle on a forum's commits, for hosts with an event loop: await
/// [`Subscription::changed`] instead of blocking a thread in a waiting call, then
/// run the read again with `wait_ms` 0. Cheap to clone; holds no lock.
#[derive(Clone)]
pub struct Subscription {
    watch: Arc<Watch>,
    seen: u64,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("seen", &self.seen)
            .finish()
    }
}

impl Subscription {
    /// Resolves once a commit happened after the last one this subscription saw
    /// (or the forum's waits were ended), and notes it as seen. Returns `false`
    /// when the waits were ended by [`Forum::end_waits`].
    pub fn changed(&mut self) -> Changed<'_> {
        Changed { sub: self }
    }

    /// Blocks for at most `timeout` until a commit after the last one seen;
    /// returns whether there was one.
    pub fn wait_timeout(&mut self, timeout: Duration) -> bool {
        let now = self.watch.wait_past(self.seen, Instant::now() + timeout);
        let changed = now != self.seen;
        self.seen = now;
        changed
    }

    /// Commits seen so far.
    pub fn seen(&self) -> u64 {
        self.seen
    }
}

/// The future of [`Subscription::changed`].
#[derive(Debug)]
#[must_use = "a future does nothing unless polled"]
pub struct Changed<'a> {
    sub: &'a mut Subscription,
}

impl Future for Changed<'_> {
    type Output = bool;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let watch = Arc::clone(&self.sub.watch);
        let mut state = watch.lock();
        if state.commits != self.sub.seen {
            self.sub.seen = state.commits;
            return Poll::Ready(true);
        }
        if state.closed {
            return Poll::Ready(false);
        }
        if !state.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            state.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// What [`Forum::on_commit`] returns: the hook stays until this is dropped.
#[must_use = "the hook is removed when this is dropped"]
pub struct CommitHook {
    watch: Arc<Watch>,
    id: u64,
}

impl std::fmt::Debug for CommitHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitHook").field("id", &self.id).finish()
    }
}

impl Drop for CommitHook {
    fn drop(&mut self) {
        self.watch.lock().hooks.retain(|(id, _)| *id != self.id);
    }
}

/// The reads that take `wait_ms`.
pub(crate) const WAITING_READS: [&str; 4] =
    ["get_inbox", "get_events", "get_messages", "list_threads"];

fn bad_wait(message: String) -> Refusal {
    Refusal::new(Reason::InvalidArgument, message)
        .with_field("wait_ms")
        .with_limit(crate::Limit::WaitMaxMs)
}

impl Forum {
    /// A subscription to this forum's commits, starting from now.
    pub fn subscribe(&self) -> Subscription {
        let seen = self.watch.lock().commits;
        Subscription {
            watch: Arc::clone(&self.watch),
            seen,
        }
    }

    /// Calls `hook` after every durable commit (on the committing thread: keep it
    /// short, e.g. write a byte to a pipe), and once when waits are ended. Removed
    /// when the returned handle is dropped.
    pub fn on_commit(&self, hook: impl Fn() + Send + Sync + 'static) -> CommitHook {
        let mut state = self.watch.lock();
        let id = state.next_hook;
        state.next_hook += 1;
        state.hooks.push((id, Arc::new(hook)));
        CommitHook {
            watch: Arc::clone(&self.watch),
            id,
        }
    }

    /// Ends every wait, now and later: each returns with its current result. For
    /// a host that is closing the forum or shutting its server down.
    pub fn end_waits(&self) {
        self.watch.close();
    }

    /// Runs `read` (a read of [`WAITING_READS`]), waiting up to `wait` ms (its
    /// request's `wait_ms`, which only the listen profile takes) for a result
    /// with at least one item (SPEC §14.2).
    pub(crate) fn wait_for_items<T>(
        &self,
        wait: Option<u64>,
        read: impl Fn() -> Result<Listing<T>>,
    ) -> Result<Listing<T>> {
        let Some(wait) = wait else {
            return read();
        };
        // Counted before the first run: a commit between it and the wait is seen.
        let seen = self.watch.lock().commits;
        let start = Instant::now();
        // The read's own checks (token, arguments, right) come first (§12.1).
        let first = read()?;
        let max = self.config.limits.wait_max_ms as u64;
        // `u64::MAX` stands for a `wait_ms` that was no integer at all.
        let ms = Some(wait)
            .filter(|ms| *ms <= max && *ms != u64::MAX)
            .ok_or_else(|| bad_wait(format!("`wait_ms` must be an integer from 0 to {max}")))?;
        if ms == 0 || !first.items.is_empty() {
            return Ok(first);
        }
        let deadline = start + Duration::from_millis(ms);
        let mut seen = seen;
        loop {
            let now = self.watch.wait_past(seen, deadline);
            let closed = self.watch.lock().closed;
            let result = read()?;
            if !result.items.is_empty() || closed || Instant::now() >= deadline {
                return Ok(result);
            }
            seen = now;
        }
    }
}
