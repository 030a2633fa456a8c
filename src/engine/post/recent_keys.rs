//! Hints of keyed posts this handle committed (SPEC §14.3), kept apart from the
//! post's checks.

use super::PostJob;

/// Hints of the (token, key) pairs this handle committed a keyed post under, so
/// that only a likely retry reads a snapshot before it queues. A hint is never
/// trusted: the snapshot (or the batch) decides. Bounded: past its size the set
/// starts over, and retries then replay inside the batch, as after a reopen.
#[derive(Default)]
pub(crate) struct RecentKeys(std::sync::Mutex<std::collections::HashSet<u64>>);

/// Hints kept before the set starts over.
const RECENT_KEYS: usize = 1 << 16;

impl RecentKeys {
    pub(super) fn hint(job: &PostJob) -> Option<u64> {
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

    pub(super) fn note(&self, hint: u64) {
        let mut set = self.lock();
        if set.len() >= RECENT_KEYS {
            set.clear();
        }
        set.insert(hint);
    }

    pub(super) fn holds(&self, hint: u64) -> bool {
        self.lock().contains(&hint)
    }
}
