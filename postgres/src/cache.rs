//! Records a writer need not read again: the engine's own writes, kept while no
//! other engine has written.
//!
//! Every commit of any engine adds one to the forum's `generation` (in
//! `parley_meta`), and a writer reads it together with taking the forum's lock.
//! When it is the generation this engine's last commit left, and the server and
//! forum are the same ones (see [`Version::server`]), nobody else has written
//! since: the records this engine read and wrote before are still the forum's, and
//! a post reads its token, thread, parent and ids from memory instead of over the
//! network. When other engines committed since, their commits' change records
//! say which records to forget ([`catch_up`], called by `begin.rs`); without an
//! unbroken run of them the cache is not used, except for the messages it holds,
//! which never change, and the writer's own commit starts the rest afresh.
//! Snapshots never use it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use parley_forum::storage::records::{ClaimRec, IdentityRec, MessageRec, ThreadRec, TokenRec};

/// Records of one kind kept, at most; past it the kind starts over.
const KEPT: usize = 4096;

/// Where the forum stood: its generation on one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Version {
    pub(super) generation: i64,
    /// `pg_postmaster_start_time()` of the server and the object id of the
    /// forum's `messages` table, as text: a restarted or promoted server is
    /// another, and so is a forum dropped and made again under the same name.
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

/// What one commit changed of the records a cache holds, stored with the commit
/// (table `changes`, one row per generation, JSON): another engine whose cache is
/// a few generations behind forgets just these instead of everything.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Changed {
    /// Token keys.
    pub(super) tokens: Vec<Vec<u8>>,
    pub(super) identities: Vec<String>,
    pub(super) threads: Vec<u64>,
    pub(super) claims: Vec<u64>,
    /// The last id of each kind after the commit.
    pub(super) last_ids: [u64; 4],
}

/// Brings the cache from its version to `now` by the changes of the commits in
/// between (`(generation, change)` in order), when they are all there and the
/// server and forum are the same: each changed record is forgotten, and so is
/// every record known to be absent (another engine may have made it). Returns
/// whether it did; else the cache is left as it was.
pub(super) fn catch_up(shared: &Shared, now: &Version, changes: &[(i64, Changed)]) -> bool {
    let mut cache = lock(shared);
    let Some(at) = &cache.at else {
        return false;
    };
    let contiguous = at.server == now.server
        && changes.len() as i64 == now.generation - at.generation
        && changes
            .iter()
            .zip(at.generation + 1..)
            .all(|((generation, _), want)| *generation == want);
    if !contiguous || changes.is_empty() {
        return false;
    }
    let records = &mut cache.records;
    for (_, change) in changes {
        for key in &change.tokens {
            records.tokens.remove(key);
        }
        for name in &change.identities {
            records.identities.remove(name);
        }
        for id in &change.threads {
            records.threads.remove(id);
        }
        for id in &change.claims {
            records.claims.remove(id);
        }
    }
    records.tokens.retain(|_, r| r.is_some());
    records.identities.retain(|_, r| r.is_some());
    records.threads.retain(|_, r| r.is_some());
    records.messages.retain(|_, r| r.is_some());
    records.claims.retain(|_, r| r.is_some());
    let last = &changes[changes.len() - 1].1;
    records.last_ids = last.last_ids.map(Some);
    cache.at = Some(now.clone());
    true
}

/// The version the cache's records are the forum's at, if any.
pub(super) fn known(shared: &Shared) -> Option<Version> {
    lock(shared).at.clone()
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
    /// The cache's records come from this server, current or not: its stored
    /// messages are still the forum's (see [`View::messages`]).
    same_server: bool,
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
            same_server: false,
            seen: RefCell::default(),
        }
    }

    /// The view of a writer that found the forum at `start`.
    pub(super) fn begin(shared: &Shared, start: Version) -> View {
        let (warm, same_server) = match &lock(shared).at {
            Some(at) => (at == &start, at.server == start.server),
            None => (false, false),
        };
        View {
            shared: Arc::clone(shared),
            start,
            warm,
            same_server,
            seen: RefCell::default(),
        }
    }

    /// The generation the forum was at when the writer took its lock.
    pub(super) fn generation(&self) -> i64 {
        self.start.generation
    }

    /// Whether the shared records are the forum's now.
    pub(super) fn is_warm(&self) -> bool {
        self.warm
    }

    lookup!(tokens, tokens, [u8], TokenRec);
    lookup!(identities, identities, str, IdentityRec);
    lookup!(threads, threads, u64, ThreadRec);

    /// A message as [`lookup!`] finds it, and also from a cache another engine's
    /// commits made stale: a stored message never changes, and its id is never
    /// given to another (ids only grow). Only that it is absent can change.
    pub(super) fn messages(&self, id: &u64) -> Option<Option<MessageRec>> {
        if let Some(found) = self.seen.borrow().messages.get(id) {
            return Some(found.clone());
        }
        if !self.same_server {
            return None;
        }
        match lock(&self.shared).records.messages.get(id) {
            Some(None) if !self.warm => None,
            found => found.cloned(),
        }
    }
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
            let stored = match &cache.at {
                Some(at) if at.server == self.start.server => {
                    let mut messages = std::mem::take(&mut cache.records.messages);
                    messages.retain(|_, m| m.is_some());
                    messages
                }
                _ => HashMap::new(),
            };
            cache.records = Records {
                messages: stored,
                ..Records::default()
            };
        }
        cache.records.absorb(self.seen.into_inner());
        cache.at = Some(Version {
            generation: self.start.generation + 1,
            server: self.start.server,
        });
    }
}
