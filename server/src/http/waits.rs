//! Waiting reads over HTTP (SPEC §14.2) without a thread per waiter.
//!
//! The engine's own `wait_ms` blocks the calling thread until a commit; a server
//! holding a thousand listeners cannot give each a thread. Here a waiting request
//! takes a [`Subscription`] first, runs its read with `wait_ms` left out, and while
//! that finds nothing and the deadline is ahead, awaits the subscription's
//! `changed()` future and runs it again; at the deadline, or when the server shuts
//! down (`Forum::end_waits`), it runs the read a last time and answers with that.
//! Every run is a whole engine call, token check included, so a revoked token is
//! refused at the next run. The runs go to the reader threads (`readers`), not one
//! by one to the blocking pool: a commit wakes every waiter at once, and most runs
//! find nothing.
//!
//! Whether a `wait_ms` is valid stays the engine's to say: a request waits here
//! only when its `wait_ms` is one the engine would accept and that is above 0;
//! anything else goes to the engine as it came, which answers at once (the plain
//! read, or its refusal in the engine's order of checks).
//!
//! Waiting requests and event streams count against one cap (`--max-waits`),
//! and those of one token (its bearer token, or the token behind a web session)
//! against its share of it (`--max-waits-per-token`), so that one agent, careless
//! or hostile, cannot take every place and stop the others from waiting for their
//! turn. Past either, a request that would wait is refused with `too_many_waits`,
//! the token past its share alone. Every
//! commit wakes every waiter, so with many waiters their runs are spaced: a waiter
//! runs again no sooner than [`SPACING`] times the number of waiters after its
//! previous run, which bounds the server's re-runs per second whatever the commit
//! rate (the first run after a quiet spell is never delayed).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::response::Response;
use parley_forum::{Forum, Subscription};
use serde_json::{json, Map, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::{engine_failed, App};

/// How far apart one waiter's runs are, per waiter holding a place: up to 1,000
/// waiters, all of them together run at most 4,000 times a second whatever the
/// commit rate (with 1,000, each at most every 250 ms; with 10, every 2.5 ms).
pub(crate) const SPACING: Duration = Duration::from_micros(250);
/// The longest spacing, whatever the number of waiters: past 1,000 waiters each
/// still runs 4 times a second.
const SPACING_MAX: Duration = Duration::from_millis(250);
/// What `Retry-After` says to a request refused for the cap, in seconds.
pub(crate) const RETRY_AFTER_S: u64 = 1;
/// The server's reason for a refusal past the cap (not one of SPEC §12).
pub(crate) const TOO_MANY_WAITS: &str = "too_many_waits";

/// The places for waiting requests and streams, and what the engine says about
/// waiting.
pub(crate) struct Waits {
    slots: Arc<Semaphore>,
    max: usize,
    /// The most places one token holds at once.
    share: usize,
    /// Places held, by token (`None`: requests without one); a token holding none
    /// has no entry.
    held_by: Arc<Mutex<HashMap<Option<String>, usize>>>,
    /// The reads that take `wait_ms`, from the manifest (empty when the listen
    /// profile is off: `wait_ms` is then an unknown argument, the engine's to refuse).
    reads: Vec<String>,
    /// The longest `wait_ms` the engine accepts.
    wait_max_ms: u64,
}

/// A place held by a waiting request or a stream; given back when dropped.
pub(crate) struct Place {
    _permit: OwnedSemaphorePermit,
    token: Option<String>,
    held_by: Arc<Mutex<HashMap<Option<String>, usize>>>,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut held_by = self.held_by.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = held_by.get_mut(&self.token) {
            *n -= 1;
            if *n == 0 {
                held_by.remove(&self.token);
            }
        }
    }
}

/// The default share of one token: a quarter of the places, at least one.
pub fn default_share(max: usize) -> usize {
    (max / 4).max(1)
}

/// How a request's read is to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// As it came: no wait, or one the engine answers at once.
    Plain,
    /// Waiting here, up to this long.
    Wait(Duration),
}

/// How a wait for the next run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Woke {
    /// A commit: run again.
    Changed,
    /// The deadline passed: run a last time.
    Deadline,
    /// The server is shutting down: run a last time.
    Ended,
}

/// What a waiting read came to.
pub(crate) enum Waited<T> {
    /// The answer to send.
    Done(T),
    /// The first run found nothing and the cap (or the token's share) is reached:
    /// refuse with the refusal given, with that run's answer at hand (MCP shapes its
    /// refusal from it).
    Full(T, Value),
}

impl Waits {
    pub(crate) fn new(forum: &Forum, max: usize, share: usize) -> Waits {
        let manifest = forum
            .call(None, "get_manifest", &Value::Null)
            .unwrap_or(Value::Null);
        let reads = manifest["profiles"]["listen"]["operations"]
            .as_array()
            .map(|ops| {
                ops.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Waits {
            slots: Arc::new(Semaphore::new(max)),
            max,
            share: share.clamp(1, max.max(1)),
            held_by: Arc::default(),
            reads,
            wait_max_ms: forum.config().limits.wait_max_ms as u64,
        }
    }

    /// Whether `op` takes `wait_ms` on this forum.
    pub(crate) fn waits(&self, op: &str) -> bool {
        self.reads.iter().any(|r| r == op)
    }

    /// How `op` with `args` runs. A `wait_ms` the engine would refuse, or 0, is
    /// left to the engine, which never waits on it.
    pub(crate) fn plan(&self, op: &str, args: &Map<String, Value>) -> Plan {
        if !self.waits(op) {
            return Plan::Plain;
        }
        match args.get("wait_ms").and_then(Value::as_u64) {
            Some(ms) if ms > 0 && ms <= self.wait_max_ms => Plan::Wait(Duration::from_millis(ms)),
            _ => Plan::Plain,
        }
    }

    /// A place for a waiting request or a stream of the holder of `token`, if one
    /// is free and the token holds less than its share; else the refusal, as
    /// `{reason, status, message, retry_after_ms}`.
    pub(crate) fn enter(&self, token: Option<&str>) -> Result<Place, Value> {
        let token = token.map(str::to_string);
        let mut held_by = self.held_by.lock().unwrap_or_else(|p| p.into_inner());
        let mine = held_by.get(&token).copied().unwrap_or(0);
        if mine >= self.share {
            return Err(self.refusal(format!(
                "this token is holding its share of {} waiting requests and streams \
                 (--max-waits-per-token); end one, or read without wait_ms",
                self.share
            )));
        }
        let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() else {
            return Err(self.refusal(format!(
                "the server is holding its maximum of {} waiting requests and streams (--max-waits); \
                 retry shortly, or read without wait_ms",
                self.max
            )));
        };
        *held_by.entry(token.clone()).or_insert(0) += 1;
        Ok(Place {
            _permit: permit,
            token,
            held_by: Arc::clone(&self.held_by),
        })
    }

    /// Places held now.
    pub(crate) fn held(&self) -> usize {
        self.max - self.slots.available_permits()
    }

    /// A refusal for a place, as `{reason, status, message, retry_after_ms}`.
    fn refusal(&self, message: String) -> Value {
        json!({
            "reason": TOO_MANY_WAITS,
            "status": 503,
            "message": message,
            "retry_after_ms": RETRY_AFTER_S * 1000,
        })
    }

    /// The earliest a waiter that last ran at `last` runs again.
    fn next_run(&self, last: Instant) -> Instant {
        let spacing = SPACING
            .saturating_mul(u32::try_from(self.held()).unwrap_or(u32::MAX))
            .min(SPACING_MAX);
        last + spacing
    }

    /// Waits for a commit after those `sub` has seen, the deadline, or the end of
    /// all waits; after a commit, no earlier than the spacing allows.
    pub(crate) async fn next(
        &self,
        sub: &mut Subscription,
        deadline: Option<Instant>,
        last_run: Instant,
    ) -> Woke {
        let changed = match deadline {
            Some(at) => match tokio::time::timeout_at(at, sub.changed()).await {
                Ok(changed) => changed,
                Err(_) => return Woke::Deadline,
            },
            None => sub.changed().await,
        };
        if !changed {
            return Woke::Ended;
        }
        self.space(last_run, deadline).await;
        Woke::Changed
    }

    /// Sleeps until a waiter that last ran at `last_run` may run again (never past
    /// `deadline`).
    pub(crate) async fn space(&self, last_run: Instant, deadline: Option<Instant>) {
        let earliest = self.next_run(last_run);
        if earliest > Instant::now() {
            let until = deadline.map_or(earliest, |d| d.min(earliest));
            tokio::time::sleep_until(until).await;
        }
    }
}

/// Runs `run` (a blocking engine call) until `settled` says its answer is final
/// (it has items, or is a refusal) or `wait` has passed since the call began, as
/// SPEC §14.2 describes; no thread is held in between. `Err` is the answer to a
/// run that failed on the blocking pool.
pub(crate) async fn wait<T, R, S>(
    app: &App,
    token: Option<&str>,
    wait: Duration,
    run: R,
    settled: S,
) -> Result<Waited<T>, Response>
where
    T: Send + 'static,
    R: Fn() -> T + Send + Sync + 'static,
    S: Fn(&T) -> bool,
{
    let waits = &app.waits;
    let run = Arc::new(run);
    let again = || {
        let run = Arc::clone(&run);
        async move {
            app.readers
                .run(move || run())
                .await
                .ok_or_else(engine_failed)
        }
    };
    // Taken before the first run: a commit between that run and the wait is seen.
    let mut sub = app.forum.subscribe();
    let start = Instant::now();
    let deadline = start + wait;
    let first = again().await?;
    if settled(&first) {
        return Ok(Waited::Done(first));
    }
    let _place = match waits.enter(token) {
        Ok(place) => place,
        Err(refusal) => return Ok(Waited::Full(first, refusal)),
    };
    let mut last_run = Instant::now();
    loop {
        let woke = waits.next(&mut sub, Some(deadline), last_run).await;
        let result = again().await?;
        last_run = Instant::now();
        if woke != Woke::Changed || settled(&result) || last_run >= deadline {
            return Ok(Waited::Done(result));
        }
    }
}

/// Whether a read's result has at least one item.
pub(crate) fn has_items(result: &Value) -> bool {
    result["items"].as_array().is_some_and(|a| !a.is_empty())
}
