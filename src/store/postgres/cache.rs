//! Records a writer need not read again: the engine's own writes, kept while no
//! other engine has written.
//!
//! Every commit of any engine adds one to the forum's `generation` (in
//! `parley_meta`), and a writer reads it together with taking the forum's lock.
//! When it is the generation this engine's last commit left, and the server is the
//! same one (its start time: a restarted or promoted server is another), nobody
//! else has written since: the records this engine read and wrote before are still
//! the forum's, and a post reads its token, thread, parent and ids from memory
//! instead of over the network. Any other generation, and the cache is not used;
//! the writer's own commit then starts it afresh. Snapshots never use it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::store::records::{ClaimRec, IdentityRec, MessageRec, ThreadRec, TokenRec};

/// Records of one kind kept, at most; past it the kind starts over.
const KEPT: usize = 4096;

/// Where the forum stood: its generation on one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Version {
    pub(super) generation: i64,
    /// `pg_postmaster_start_time()` of the server, as text.
    pub(super) server: String,
}

/// Records by kind, `None` for one known to be absent.
#[derive(Default)]
pub(super) struct Records {
    pub(super) tokens: HashMap<Vec<u8>, Option<TokenRec>>,
    pub(super) identities: HashMap<String, Option<IdentityRec>>,
    pub(super) threads: HashMap<u64, Option<ThreadRec>>,
    pub(super) messages: HashMap<u64, Option<MessageRec>>,
    pub(super) claims: HashMap<u64, Option<ClaimRec>>,
    /// The last id of each kind.
    pub(super) last_ids: [Option<u64>; 4],
}

fn merge<K: Eq + Hash, V>(into: &mut HashMap<K, V>, from: HashMap<K, V>) {
    if into.len() + from.len() > KEPT {
        into.clear();
    }
    into.extend(from);
}

impl Records {
    fn absorb(&mut self, seen: Records) {
        merge(&mut self.tokens, seen.tokens);
        merge(&mut self.identities, seen.identities);
        merge(&mut self.threads, seen.threads);
        merge(&mut self.messages, seen.messages);
        merge(&mut self.claims, seen.claims);
        for (known, new) in self.last_ids.iter_mut().zip(seen.last_ids) {
            if new.is_some() {
                *known = new;
            }
        }
    }
}

/// The cache of one store.
#[derive(Default)]
pub(super) struct Cache {
    /// The version its records are the forum's at; `None`: not to be used.
    at: Option<Version>,
    records: Records,
}

/// A store's cache, shared by its writers.
pub(super) type Shared = Arc<Mutex<Cache>>;

fn lock(shared: &Shared) -> MutexGuard<'_, Cache> {
    // Every update below is whole: a panic elsewhere leaves nothing half-done.
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

/// Forgets everything (after a failed commit: what the forum holds is unknown).
pub(super) fn invalidate(shared: &Shared) {
    let mut cache = lock(shared);
    cache.at = None;
    cache.records = Records::default();
}

/// One writer's view: the shared records when they are current, and what the
/// writer itself read and wrote.
pub(super) struct View {
    shared: Shared,
    start: Version,
    warm: bool,
    pub(super) seen: RefCell<Records>,
}

/// Looks a record up in what the writer saw, then in the shared cache.
macro_rules! lookup {
    ($name:ident, $field:ident, $key:ty, $rec:ty) => {
        pub(super) fn $name(&self, key: &$key) -> Option<Option<$rec>> {
            if let Some(found) = self.seen.borrow().$field.get(key) {
                return Some(found.clone());
            }
            if !self.warm {
                return None;
            }
            lock(&self.shared).records.$field.get(key).cloned()
        }
    };
}

impl View {
    /// The view of a snapshot: what it read, and nothing shared.
    pub(super) fn detached() -> View {
        View {
            shared: Shared::default(),
            start: Version {
                generation: 0,
                server: String::new(),
            },
            warm: false,
            seen: RefCell::default(),
        }
    }

    /// The view of a writer that found the forum at `start`.
    pub(super) fn begin(shared: &Shared, start: Version) -> View {
        let warm = lock(shared).at.as_ref() == Some(&start);
        View {
            shared: Arc::clone(shared),
            start,
            warm,
            seen: RefCell::default(),
        }
    }

    lookup!(tokens, tokens, [u8], TokenRec);
    lookup!(identities, identities, str, IdentityRec);
    lookup!(threads, threads, u64, ThreadRec);
    lookup!(messages, messages, u64, MessageRec);
    lookup!(claims, claims, u64, ClaimRec);

    pub(super) fn last_id(&self, kind: usize) -> Option<u64> {
        if let Some(known) = self.seen.borrow().last_ids[kind] {
            return Some(known);
        }
        if !self.warm {
            return None;
        }
        lock(&self.shared).records.last_ids[kind]
    }

    /// After the commit: the forum is one generation on, holding what this writer
    /// saw over what the cache held (if it was current).
    pub(super) fn committed(self) {
        let mut cache = lock(&self.shared);
        if cache.at.as_ref() != Some(&self.start) {
            cache.records = Records::default();
        }
        cache.records.absorb(self.seen.into_inner());
        cache.at = Some(Version {
            generation: self.start.generation + 1,
            server: self.start.server,
        });
    }
}
