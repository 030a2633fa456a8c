//! The connections being served, and what a new connection does when the cap is
//! full: it waits a moment for a place, given back by a connection that ends or
//! taken from the connection that has waited on its client longest.
//!
//! A connection waits on its client while the client has yet to finish a request's
//! head, or a body its handler is reading, or (kept alive) to begin its next
//! request. Past [`STALL_MIN`] such a connection holds things up: a prompt client
//! sends a request of this server's size (`request_max_bytes`) far faster. The
//! header, body and idle timeouts close such connections in the end, but until then
//! as many of them as the cap would keep every other client out; so when a place is
//! wanted, the one that has waited on its client longest is closed and its place
//! given to the newcomer. Trickling a byte now and then does not keep a request
//! from being the oldest. Closing an idle kept-alive connection is what HTTP
//! allows a server at any time (RFC 9112 §9.6); its client opens another. A
//! connection being served (the engine at work, a waiting read, an event stream) is
//! never taken: the waits have a cap of their own (`--max-waits`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::Cycle;

/// How long a connection must have waited for its client to finish a head or a
/// body before its place may be taken.
pub(super) const STALL_MIN: Duration = Duration::from_millis(200);
/// How long a new connection waits for a place when the cap is full before it is
/// refused (503 `too_many_connections`).
pub(super) const WAIT_MAX: Duration = Duration::from_millis(500);
/// How often a waiting connection looks again.
const LOOK_EVERY: Duration = Duration::from_millis(25);

/// One connection being served.
struct Entry {
    cycle: Arc<Cycle>,
    /// Told when the connection's place has been taken: it closes.
    evicted: Arc<Notify>,
    /// Its place under the cap.
    slot: OwnedSemaphorePermit,
}

/// The registry of connections being served.
#[derive(Default)]
pub(crate) struct Held {
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    next: u64,
    map: HashMap<u64, Entry>,
}

impl Held {
    fn lock(&self) -> MutexGuard<'_, Entries> {
        // Every critical section leaves the map whole.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a connection holding `slot`; its id, for [`Held::remove`].
    pub(super) fn insert(
        &self,
        cycle: Arc<Cycle>,
        evicted: Arc<Notify>,
        slot: OwnedSemaphorePermit,
    ) -> u64 {
        let mut entries = self.lock();
        let id = entries.next;
        entries.next += 1;
        entries.map.insert(
            id,
            Entry {
                cycle,
                evicted,
                slot,
            },
        );
        id
    }

    /// Forgets a connection that ended, giving back its place if it still has it.
    pub(super) fn remove(&self, id: u64) {
        let entry = self.lock().map.remove(&id);
        drop(entry);
    }

    /// Takes the place of the connection that has waited on its client longest (at
    /// least [`STALL_MIN`]), telling it to close.
    fn evict(&self) -> Option<OwnedSemaphorePermit> {
        let now = Instant::now();
        let mut entries = self.lock();
        let victim = entries
            .map
            .iter()
            .filter_map(|(id, e)| e.cycle.waiting_on_client_since().map(|since| (since, *id)))
            .filter(|(since, _)| now.saturating_duration_since(*since) >= STALL_MIN)
            .min()
            .map(|(_, id)| id)?;
        let entry = entries.map.remove(&victim)?;
        entry.evicted.notify_one();
        Some(entry.slot)
    }

    /// A place for a new connection while the cap is full: one given back, or one
    /// taken from one waiting on its client, within [`WAIT_MAX`]; `None` when neither
    /// comes.
    pub(super) async fn place_for(&self, slots: &Arc<Semaphore>) -> Option<OwnedSemaphorePermit> {
        let deadline = Instant::now() + WAIT_MAX;
        loop {
            if let Ok(slot) = Arc::clone(slots).try_acquire_owned() {
                return Some(slot);
            }
            if let Some(slot) = self.evict() {
                return Some(slot);
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(LOOK_EVERY).await;
        }
    }
}
