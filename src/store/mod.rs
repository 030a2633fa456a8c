//! The engine's storage interface, and its embedded backend over redb.
//!
//! The protocol logic sees only these traits: read records, scan an index from a
//! position, and apply the writes of one post inside one transaction. A backend
//! commits a [`WriteTx`] whole or not at all.

// Public through `storage::codec`: the PostgreSQL backend (crate parley-postgres)
// stores the same bytes.
pub(crate) mod codec;
pub use crate::protocol::records;
// The embedded backend (`redb/`); the crate of the same name is `::redb`.
mod redb;
mod url;

pub use redb::check::{check, CheckReport};
pub(crate) use redb::RedbStore;
pub use redb::{check_integrity, held_open};
pub(crate) use url::NO_POSTGRES;
pub use url::{is_postgres_url, scheme, without_password};

use records::{
    ArtifactRec, ClaimRec, EventRec, IdentityRec, LeaseRec, MessageHead, MessageRec, PresenceRec,
    Remembered, ThreadRec, ThreadSpot, TokenRec,
};

use std::sync::Arc;

use crate::error::Result;
use crate::protocol::ids::IdKind;
use crate::protocol::state::State;

/// What one pass of [`WriteTx::forget_remembered`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forgot {
    /// Records forgotten.
    pub keys: usize,
    /// `true` when the pass stopped at its bound with expired records perhaps
    /// left: the next keyed post should run another.
    pub more: bool,
}

/// Whether a scan goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Visit the next entry.
    Continue,
    /// Stop here.
    Stop,
}

/// A visitor of index entries: `(position, thread)`.
pub type Visit<'a> = &'a mut dyn FnMut(u64, u64) -> Result<Flow>;

/// Reads, from a snapshot or from inside a write transaction.
pub trait ReadTx {
    /// The highest id of this kind issued so far (0 when none).
    fn last_id(&self, kind: IdKind) -> Result<u64>;
    /// A token by its key (a prefix of the SHA-256 of its secret).
    fn token(&self, key: &[u8]) -> Result<Option<TokenRec>>;
    /// An identity.
    fn identity(&self, identity: &str) -> Result<Option<IdentityRec>>;
    /// Every identity, in name order.
    fn identities(&self) -> Result<Vec<(String, IdentityRec)>>;
    /// A thread.
    fn thread(&self, id: u64) -> Result<Option<ThreadRec>>;
    /// A message.
    fn message(&self, id: u64) -> Result<Option<MessageRec>>;
    /// The messages of a thread, in creation order; `expected` is how many there
    /// should be (the thread's count), to size the list once.
    fn thread_messages(&self, thread: u64, expected: usize) -> Result<Vec<MessageRec>>;
    /// The heads (id, act, parent) of a thread's messages, in creation order: what
    /// the digest (SPEC §17) reads of every message. A backend should read them
    /// without decoding the bodies; this default decodes whole messages.
    fn thread_heads(&self, thread: u64, expected: usize) -> Result<Vec<MessageHead>> {
        Ok(self
            .thread_messages(thread, expected)?
            .iter()
            .map(|m| MessageHead {
                id: m.id,
                kind: m.kind,
                parent: m.parent,
            })
            .collect())
    }
    /// A claim.
    fn claim(&self, id: u64) -> Result<Option<ClaimRec>>;
    /// An event.
    fn event(&self, id: u64) -> Result<Option<EventRec>>;
    /// Times of the writes of `identity` at or after `since` (ms), oldest first.
    fn writes_since(&self, identity: &str, since: i64) -> Result<Vec<i64>>;
    /// Turn index: threads awaiting `identity` (or `"*"`), by turn-setting message
    /// id, from positions greater than `after`.
    fn scan_turns(&self, identity: &str, after: u64, visit: Visit<'_>) -> Result<()>;
    /// Activity index: threads by their latest message id, greater than `after`,
    /// optionally of one state only.
    fn scan_activity(&self, state: Option<State>, after: u64, visit: Visit<'_>) -> Result<()>;
    /// Event index: `(event id, thread)` greater than `after`, of one thread or all.
    fn scan_events(&self, thread: Option<u64>, after: u64, visit: Visit<'_>) -> Result<()>;
    /// The word index: messages whose body holds every one of `words` (distinct,
    /// sorted), newest first, with ids below `before`, as `(message, thread)`.
    fn search_words(&self, words: &[String], before: u64, visit: Visit<'_>) -> Result<()>;
    /// The post `identity` made under idempotency `key`, if remembered.
    /// (The message is read to find the post's time; it comes along.)
    fn remembered(&self, identity: &str, key: &str) -> Result<Option<(Remembered, MessageRec)>>;
    /// Message feed: messages by id from ids greater than `after`, of one thread or
    /// of the whole forum, as `(message, thread)`.
    fn scan_messages(&self, thread: Option<u64>, after: u64, visit: Visit<'_>) -> Result<()>;
    /// The presence records (SPEC §16.1) of one identity, or of all, ordered by
    /// identity, then extension (none first).
    fn presences(&self, identity: Option<&str>) -> Result<Vec<PresenceRec>>;
    /// The stored leases (SPEC §16.2), by id: the active ones and the expired ones
    /// not removed yet (the engine tells them apart by time).
    fn leases(&self) -> Result<Vec<LeaseRec>>;
    /// A stored lease.
    fn lease(&self, id: u64) -> Result<Option<LeaseRec>>;
    /// The artifact (SPEC §18.1) whose bytes have this SHA-256.
    fn artifact(&self, digest: &[u8; 32]) -> Result<Option<ArtifactRec>>;
    /// Whether an artifact with this SHA-256 is stored (its bytes not read).
    fn has_artifact(&self, digest: &[u8; 32]) -> Result<bool> {
        Ok(self.artifact(digest)?.is_some())
    }
    /// The local claim that imported claim `claim` of `realm` (SPEC §18.3), if
    /// one did. A backend that keeps no imports finds none.
    fn imported_claim(&self, realm: &str, claim: &str) -> Result<Option<u64>> {
        let _ = (realm, claim);
        Ok(None)
    }
}

/// The writes of one post (or one token change), applied atomically on commit.
pub trait WriteTx: ReadTx {
    /// The next id of a kind: one past the last one stored or handed out in this
    /// transaction. An id handed out is spent: store its record, or fail the
    /// transaction.
    fn next_id(&mut self, kind: IdKind) -> Result<u64> {
        Ok(self.last_id(kind)? + 1)
    }
    /// Stores a token record.
    fn put_token(&mut self, key: &[u8], token: &TokenRec) -> Result<()>;
    /// Stores an identity record.
    fn put_identity(&mut self, identity: &str, rec: &IdentityRec) -> Result<()>;
    /// Stores a new message and its thread's new record. `before` is where the
    /// engine had placed the thread in the turn and activity indexes (absent for a
    /// new thread), `after` where it places it now: the store moves its entries
    /// and knows no rule of its own. The record is shared so a backend may keep it
    /// for the next post to the thread without copying it.
    fn put_post(
        &mut self,
        message: &MessageRec,
        thread: &Arc<ThreadRec>,
        before: Option<&ThreadSpot>,
        after: &ThreadSpot,
    ) -> Result<()>;
    /// Stores a new record of an existing thread that a post to another thread
    /// changed (the guards' count, SPEC §15), its places in the indexes unchanged.
    fn put_thread(&mut self, thread: &Arc<ThreadRec>) -> Result<()>;
    /// Stores a claim.
    fn put_claim(&mut self, claim: &ClaimRec) -> Result<()>;
    /// Stores an event and indexes it by thread.
    fn put_event(&mut self, event: &EventRec) -> Result<()>;
    /// Keeps the word index of search up to date after `message` was stored.
    fn index_words(&mut self, message: u64) -> Result<()>;
    /// Remembers the post `identity` made under `key` (replacing an expired one).
    fn remember(&mut self, identity: &str, key: &str, post: &Remembered) -> Result<()>;
    /// Forgets up to `max` idempotency records made before `before` (ms), oldest
    /// first, looking at a bounded number of records.
    fn forget_remembered(&mut self, before: i64, max: usize) -> Result<Forgot>;
    /// Records a write of an llm identity for the rate limit, and forgets the ones
    /// before `forget_before`.
    fn record_write(
        &mut self,
        identity: &str,
        message: u64,
        at: i64,
        forget_before: i64,
    ) -> Result<()>;
    /// Stores the presence of the record's (identity, extension), replacing it.
    fn put_presence(&mut self, rec: &PresenceRec) -> Result<()>;
    /// The next lease id: one past the last one ever issued, removed leases
    /// included. An id handed out is spent, as with [`WriteTx::next_id`].
    fn next_lease_id(&mut self) -> Result<u64>;
    /// Stores a lease, replacing the one of the same id.
    fn put_lease(&mut self, rec: &LeaseRec) -> Result<()>;
    /// Removes a lease (released, or expired).
    fn remove_lease(&mut self, id: u64) -> Result<()>;
    /// Stores an artifact under the SHA-256 of its bytes. The engine calls it only
    /// for a digest not stored yet (the first put is kept).
    fn put_artifact(&mut self, digest: &[u8; 32], rec: &ArtifactRec) -> Result<()>;
    /// Records that claim `claim` of `realm` was imported as local claim `local`
    /// (SPEC §18.3), once: the engine checked [`ReadTx::imported_claim`] in this
    /// transaction first. A backend that keeps no imports refuses the import.
    fn put_imported(&mut self, realm: &str, claim: &str, local: u64) -> Result<()> {
        let _ = (realm, claim, local);
        Err(crate::error::Error::storage(
            "this storage backend keeps no imported claims".to_owned(),
        ))
    }
    /// Commits and returns once the commit is durable (visible, when volatile).
    fn commit(self: Box<Self>) -> Result<()> {
        self.commit_deferred()?.wait()
    }
    /// Commits, visible to later transactions at once; durable once the returned
    /// [`Durable`] says so. Lets a batch leader hand the write lock on while its
    /// commit reaches the disk.
    fn commit_deferred(self: Box<Self>) -> Result<Durable>;
}

/// A commit on its way to disk.
#[must_use = "a commit is only durable once `wait` returned Ok"]
pub struct Durable(Option<Box<dyn Fn() -> Result<()> + Send + Sync>>);

impl Durable {
    /// A commit with nothing left to wait for.
    pub fn done() -> Self {
        Durable(None)
    }

    /// A commit that is durable once `wait` returns `Ok`.
    pub fn when(wait: impl Fn() -> Result<()> + Send + Sync + 'static) -> Self {
        Durable(Some(Box::new(wait)))
    }

    /// Returns once the commit is durable, or why it never will be.
    pub fn wait(&self) -> Result<()> {
        self.0.as_ref().map_or(Ok(()), |wait| wait())
    }
}

/// A storage backend: snapshots for reads, one writer at a time.
pub trait Store: Send + Sync {
    /// A consistent snapshot. It holds only durable commits, except that on
    /// PostgreSQL it may also hold a commit whose WAL flush is still under way
    /// (`docs/deployment.md`); no call acknowledges a post before it is durable.
    fn read(&self) -> Result<Box<dyn ReadTx + '_>>;
    /// The one write transaction; blocks while another is open.
    fn write(&self) -> Result<Box<dyn WriteTx + '_>>;
    /// A 64-bit secret of this forum, for signing cursors.
    fn cursor_key(&self) -> u64;
    /// The forum's realm key pair (SPEC §18.3), kept in the store. A backend that
    /// keeps none returns `None`; the forum then signs with a pair of its own,
    /// made when it opens and lost when it closes.
    fn realm_secret(&self) -> Option<crate::provenance::RealmSecret> {
        None
    }
    /// Whether other engines may write to the same forum at once. The engine then
    /// keeps no cache of what they may change (the callers of tokens).
    fn shared(&self) -> bool {
        false
    }
    /// Asks the backend to call `ring` after each commit made by another engine, so
    /// that waiting calls (SPEC §14.2) run again. A backend of one engine has none.
    fn on_foreign_commit(&self, ring: std::sync::Arc<dyn Fn() + Send + Sync>) {
        let _ = ring;
    }
}
