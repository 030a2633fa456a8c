//! The embedded backend: one redb file (or redb's in-memory backend).

use crate::store::redb_error::OrStorage;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::de::DeserializeOwned;

use super::codec::{decode_json as decode, encode_json as encode};
use super::records::{
    Awaiting, ClaimRec, EventRec, IdentityRec, MessageHead, MessageRec, Remembered, ThreadRec,
    ThreadSpot, TokenRec,
};
use super::redb_open::{
    commit_failed_on_io, holds_foreign_tables, is_io_failure, migrate_v1, migrate_words, open_file,
    unpanicked, Db, ALREADY_OPEN, REOPEN_WAIT,
};
use super::tables::*;
use super::tail::{Delta, KeyHasher, Tail};
use super::word_tail::{TailMessage, WordDelta};
use super::{activity, blocks, codec, Durable, Flow, Forgot, ReadTx, Store, Visit, WriteTx};
use crate::config::{Durability, Progress};
use crate::error::{Error, Result};
use crate::protocol::ids::IdKind;
use crate::protocol::state::State;
use crate::provenance::RealmSecret;

/// Thread records kept after a post, at most this many.
const CACHED_THREADS: usize = 4096;

/// Committed thread records, as the writer last stored or read them: a post to a
/// thread then neither looks its record up in redb nor decodes it. Only writers
/// use it; its lock is held across each commit, so the next writer sees the
/// records of the last commit (see `commit_deferred`).
type ThreadCache = Mutex<HashMap<u64, Arc<ThreadRec>>>;

/// A forum stored in redb.
pub(crate) struct RedbStore {
    /// The database, or `None` while it must be reopened: redb fails every call
    /// after an I/O error (a full disk, say) until it is opened anew, which the next
    /// call here does by itself (see [`RedbStore::database`]).
    db: RwLock<Option<Arc<Db>>>,
    /// The forum file, for reopening; `None` in memory.
    path: Option<PathBuf>,
    /// The last id of each kind as of the last commit, once read: a post then
    /// reads no index to number itself. Only the one writer reads or sets it.
    last_ids: Mutex<[Option<u64>; 4]>,
    /// Where the merged part of the word index ends, as of the last commit, once
    /// read (see `super::words`).
    words_merged: Mutex<Option<u64>>,
    /// The word index's tail as of the last commit, once read (see
    /// `super::tail`). Only writers change it, one at a time: each holds its lock
    /// from before its commit (which lets the next writer begin) until its
    /// changes are in.
    tail: Mutex<Option<Tail>>,
    /// Set when the file was reopened: the tail is read again by the next writer.
    /// It is never emptied under a writer, which relies on it for the committed
    /// tail its transaction began from.
    tail_stale: AtomicBool,
    /// Hashes the records of `INDEX` for the tail's count of them.
    key_hasher: KeyHasher,
    threads: ThreadCache,
    durability: Durability,
    cursor_key: u64,
    realm_secret: RealmSecret,
}

impl RedbStore {
    /// Creates or opens the forum file at `path` (see `docs/storage.md` for what is
    /// refused before anything is written). A durable forum commits through redb's
    /// durable commit; a volatile one commits without flushing.
    #[cfg(test)]
    pub(crate) fn open(path: &Path, durability: Durability) -> Result<Self> {
        Self::open_with(path, durability, None)
    }

    /// Creates or opens the forum file at `path` (see `docs/storage.md` for what is
    /// refused before anything is written), telling `progress` how a migration of
    /// an older file goes (the word index of a large forum takes a while to build).
    /// A durable forum commits through redb's durable commit; a volatile one
    /// commits without flushing.
    pub(crate) fn open_with(
        path: &Path,
        durability: Durability,
        progress: Option<&Progress>,
    ) -> Result<Self> {
        let mut store = unpanicked(path, || {
            Self::init_with(open_file(path, true)?, durability, progress)
        })?;
        store.path = Some(path.to_path_buf());
        Ok(store)
    }

    /// A forum over another redb storage backend (here, the power-loss test's
    /// recorder). Unlike a forum file, it is not reopened by itself after an I/O
    /// error. Crate-private: redb is no part of the API.
    #[cfg(test)]
    pub(crate) fn with_backend(
        backend: impl redb::StorageBackend,
        durability: Durability,
    ) -> Result<Self> {
        let db = super::redb_open::builder()
            .create_with_backend(backend)
            .or_storage()?;
        Self::init(Db::new(db), durability)
    }

    /// A forum that lives in memory and vanishes with it.
    pub(crate) fn in_memory() -> Result<Self> {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .or_storage()?;
        Self::init(Db::new(db), Durability::Volatile)
    }

    fn init(db: Db, durability: Durability) -> Result<Self> {
        Self::init_with(db, durability, None)
    }

    fn init_with(db: Db, durability: Durability, progress: Option<&Progress>) -> Result<Self> {
        let txn = db.begin_write().or_storage()?;
        let cursor_key;
        {
            let mut meta = txn.open_table(META).or_storage()?;
            let version = meta.get("schema_version").or_storage()?.map(|v| v.value());
            match version {
                Some(found) if found > SCHEMA_VERSION => {
                    return Err(Error::SchemaTooNew {
                        found,
                        supported: SCHEMA_VERSION,
                    });
                }
                Some(1) => {
                    migrate_v1(&txn)?;
                    // Version 2 now; the word index follows (`migrate_words`).
                    meta.insert("schema_version", 2).or_storage()?;
                }
                Some(_) => {}
                None => {
                    drop(meta);
                    if holds_foreign_tables(&txn)? {
                        return Err(Error::NotAForum(
                            "the file holds tables of another application".into(),
                        ));
                    }
                    meta = txn.open_table(META).or_storage()?;
                    meta.insert("schema_version", SCHEMA_VERSION).or_storage()?;
                    let mut key = [0u8; 8];
                    getrandom::fill(&mut key)
                        .map_err(|e| Error::storage(format!("OS random source: {e}")))?;
                    meta.insert("cursor_key", u64::from_le_bytes(key))
                        .or_storage()?;
                }
            }
            cursor_key = meta
                .get("cursor_key")
                .or_storage()?
                .map(|v| v.value())
                .unwrap_or(0);
        }
        // Every table exists from the start, so reads never meet a missing one.
        txn.open_table(TOKENS).or_storage()?;
        txn.open_table(IDENTITIES).or_storage()?;
        txn.open_table(MESSAGES).or_storage()?;
        txn.open_table(CLAIMS).or_storage()?;
        txn.open_table(EVENTS).or_storage()?;
        txn.open_table(INDEX).or_storage()?;
        txn.open_table(WORD_BLOCKS).or_storage()?;
        txn.open_table(PLACES).or_storage()?;
        // Added after version 6 without a new version: an older file gains them
        // here, empty, and an older release never reads them.
        txn.open_table(PRESENCE).or_storage()?;
        txn.open_table(LEASES).or_storage()?;
        txn.open_table(ARTIFACTS).or_storage()?;
        txn.open_table(IMPORTS).or_storage()?;
        let realm_secret = realm_secret(&txn)?;
        txn.commit().or_storage()?;
        // The message map first: the word index's migration reads it.
        blocks::migrate(&db, progress)?;
        super::map_migration::migrate(&db, progress)?;
        migrate_words(&db, progress)?;
        activity::migrate(&db, progress)?;
        // Last: the thread list may only now be in its blocks.
        activity::leave_tail(&db)?;
        Ok(RedbStore {
            db: RwLock::new(Some(Arc::new(db))),
            path: None,
            last_ids: Mutex::new([None; 4]),
            words_merged: Mutex::new(None),
            tail: Mutex::new(None),
            tail_stale: AtomicBool::new(false),
            key_hasher: KeyHasher::default(),
            threads: Mutex::new(HashMap::new()),
            durability,
            cursor_key,
            realm_secret,
        })
    }

    /// The open database, reopened first if an I/O error closed it.
    fn database(&self) -> Result<Arc<Db>> {
        if let Some(db) = &*self.db.read().unwrap_or_else(|p| p.into_inner()) {
            return Ok(Arc::clone(db));
        }
        self.reopen()
    }

    /// Opens the forum file anew after redb gave up on it. The old database must be
    /// gone first (it holds the file's lock): the slot is emptied by [`Self::failed`],
    /// and the snapshots still holding it end within a call.
    fn reopen(&self) -> Result<Arc<Db>> {
        let mut slot = self.db.write().unwrap_or_else(|p| p.into_inner());
        if let Some(db) = &*slot {
            return Ok(Arc::clone(db));
        }
        let Some(path) = &self.path else {
            return Err(Error::storage("the in-memory forum failed".into()));
        };
        let deadline = std::time::Instant::now() + REOPEN_WAIT;
        let db = loop {
            match unpanicked(path, || open_file(path, false)) {
                Err(Error::Storage(e))
                    if e.message().contains(ALREADY_OPEN)
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                other => break other?,
            }
        };
        // What the caches hold may be what a failed commit meant to write.
        *self.last_ids.lock().unwrap_or_else(|p| p.into_inner()) = [None; 4];
        *self.words_merged.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.tail_stale.store(true, Ordering::SeqCst);
        lock_threads(&self.threads).clear();
        let db = Arc::new(db);
        *slot = Some(Arc::clone(&db));
        Ok(db)
    }

    /// Forgets `db` after an I/O error, so the next call reopens the file.
    fn failed(&self, db: &Arc<Db>) {
        if self.path.is_none() {
            return;
        }
        let mut slot = self.db.write().unwrap_or_else(|p| p.into_inner());
        if slot.as_ref().is_some_and(|d| Arc::ptr_eq(d, db)) {
            *slot = None;
        }
    }

    /// Runs `begin` on the database; an I/O failure reopens the file and tries once
    /// more, so a forum recovers by itself once the disk has room again.
    fn begin<T>(
        &self,
        begin: impl Fn(&Database) -> std::result::Result<T, redb::TransactionError>,
    ) -> Result<(Arc<Db>, T)> {
        let db = self.database()?;
        match begin(&db) {
            Ok(t) => Ok((db, t)),
            Err(e) if self.path.is_some() && is_io_failure(&e) => {
                self.failed(&db);
                drop(db);
                let db = self.reopen()?;
                let t = begin(&db).or_storage()?;
                Ok((db, t))
            }
            Err(e) => Err(super::redb_error::storage(e)),
        }
    }
}

/// Runs redb's integrity check (checksums of every page) on a closed forum file,
/// and then checks that it is a Parley forum this library can read. Never creates
/// a file.
pub fn check_integrity(path: &Path) -> Result<bool> {
    let mut db = open_file(path, false)?;
    let ok = unpanicked(path, || db.check_integrity().or_storage())?;
    drop(db);
    drop(RedbStore::open_existing(path)?);
    Ok(ok)
}

impl RedbStore {
    /// Opens an existing forum file (never creating one).
    pub(crate) fn open_existing(path: &Path) -> Result<Self> {
        Self::open_existing_with(path, Durability::Durable, None)
    }

    /// Opens an existing forum file as [`Self::open_with`] does, but refuses a
    /// missing or empty file, writing nothing to it.
    pub(crate) fn open_existing_with(
        path: &Path,
        durability: Durability,
        progress: Option<&Progress>,
    ) -> Result<Self> {
        let mut store = unpanicked(path, || {
            Self::init_with(open_file(path, false)?, durability, progress)
        })?;
        store.path = Some(path.to_path_buf());
        Ok(store)
    }
}

impl Store for RedbStore {
    fn read(&self) -> Result<Box<dyn ReadTx + '_>> {
        let (db, txn) = self.begin(|db| db.begin_read())?;
        Ok(Box::new(Snapshot {
            txn,
            store: self,
            _db: db,
        }))
    }

    fn write(&self) -> Result<Box<dyn WriteTx + '_>> {
        let (db, mut txn) = self.begin(|db| db.begin_write())?;
        if self.durability == Durability::Volatile {
            txn.set_durability(redb::Durability::None).or_storage()?;
        }
        {
            let mut tail = lock_tail(&self.tail);
            if tail.is_none() || self.tail_stale.swap(false, Ordering::SeqCst) {
                // Read as committed, before this transaction writes anything.
                *tail = Some(Tail::load(&txn, &self.key_hasher)?);
            }
        }
        Ok(Box::new(Writer {
            txn,
            store: self,
            db,
            ids: [None; 4],
            written: HashMap::new(),
            words_merged: None,
            keys: Delta::default(),
            words: WordDelta::default(),
        }))
    }

    fn cursor_key(&self) -> u64 {
        self.cursor_key
    }

    fn realm_secret(&self) -> Option<RealmSecret> {
        Some(self.realm_secret.clone())
    }
}

/// The forum's realm key, made now if the file has none (a new file, or one
/// written before SPEC §18.3). Added without a new schema version: an older
/// release never reads the table.
fn realm_secret(txn: &redb::WriteTransaction) -> Result<RealmSecret> {
    let mut table = txn.open_table(REALM_KEY).or_storage()?;
    if let Some(seed) = table.get(REALM_SEED).or_storage()? {
        if let Ok(seed) = <[u8; 32]>::try_from(seed.value()) {
            return Ok(RealmSecret::from_seed(&seed));
        }
        return Err(Error::storage(
            "the realm key is damaged (not 32 bytes)".to_owned(),
        ));
    }
    let secret =
        RealmSecret::generate().map_err(|e| Error::storage(format!("OS random source: {e}")))?;
    table
        .insert(REALM_SEED, secret.seed().as_slice())
        .or_storage()?;
    Ok(secret)
}

/// A read snapshot. The transaction is dropped before the database it came from.
struct Snapshot<'s> {
    txn: redb::ReadTransaction,
    store: &'s RedbStore,
    _db: Arc<Db>,
}

struct Writer<'s> {
    txn: redb::WriteTransaction,
    store: &'s RedbStore,
    db: Arc<Db>,
    /// The last id of each kind handed out in this transaction.
    ids: [Option<u64>; 4],
    /// Thread records stored in this transaction: the store's cache takes them
    /// only if it commits.
    written: HashMap<u64, Arc<ThreadRec>>,
    /// The end of the merged word index as this transaction leaves it, once known.
    words_merged: Option<u64>,
    /// This transaction's changes to the tail's key records.
    keys: Delta,
    /// This transaction's changes to the tail's words.
    words: WordDelta,
}

/// The tail a writer holds, which `Store::write` loaded.
fn loaded(tail: &Option<Tail>) -> Result<&Tail> {
    tail.as_ref()
        .ok_or_else(|| Error::storage("the word index's tail is not loaded".into()))
}

/// The store's tail. It changes only whole, after a commit.
fn lock_tail(tail: &Mutex<Option<Tail>>) -> MutexGuard<'_, Option<Tail>> {
    tail.lock().unwrap_or_else(|p| p.into_inner())
}

fn lock_threads(threads: &ThreadCache) -> MutexGuard<'_, HashMap<u64, Arc<ThreadRec>>> {
    // Entries are whole records, inserted or removed at once: a panic elsewhere
    // leaves none half-written.
    threads.lock().unwrap_or_else(|p| p.into_inner())
}

impl Snapshot<'_> {
    fn table<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        def: TableDefinition<K, V>,
    ) -> Result<redb::ReadOnlyTable<K, V>> {
        self.txn.open_table(def).or_storage()
    }
}

impl Writer<'_> {
    fn table<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        def: TableDefinition<K, V>,
    ) -> Result<redb::Table<'_, K, V>> {
        self.txn.open_table(def).or_storage()
    }

    /// The end of the merged word index as this transaction sees it.
    fn merged_mark(&self) -> Result<u64> {
        if let Some(m) = self.words_merged {
            return Ok(m);
        }
        let known = *self
            .store
            .words_merged
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        match known {
            Some(m) => Ok(m),
            None => crate::store::words::merged_through(&self.table(META)?),
        }
    }

    /// The message `record` names in the tail as this transaction sees it.
    fn tail_key(&self, record: &[u8]) -> Option<u64> {
        let tail = lock_tail(&self.store.tail);
        self.keys.get(&tail.as_ref()?.keys, record)
    }

    /// Whether `INDEX` may hold `record` as this transaction sees it; `false`
    /// means it does not (see `super::tail`, the counts of merged keys).
    fn index_may_hold(&self, record: &[u8]) -> bool {
        let hash = self.store.key_hasher.of(record);
        let tail = lock_tail(&self.store.tail);
        tail.as_ref()
            .is_none_or(|t| self.keys.index_may_hold(&t.merged, hash))
    }

    /// A writer reads the tail from its tables, which hold its own posts.
    fn tail_messages(&self, _merged: u64, _last: u64) -> Option<Vec<TailMessage>> {
        None
    }

    /// A thread as this transaction sees it: written here, else committed (from
    /// the store's cache, or read and then cached).
    fn thread_record(&self, id: u64) -> Result<Option<ThreadRec>> {
        if let Some(thread) = self.written.get(&id) {
            return Ok(Some(ThreadRec::clone(thread)));
        }
        if let Some(thread) = lock_threads(&self.store.threads).get(&id) {
            return Ok(Some(ThreadRec::clone(thread)));
        }
        let read = read_thread(&self.table(MESSAGES)?, id)?;
        // Not written in this transaction, so what was read is committed.
        if let Some(thread) = &read {
            keep_thread(
                &mut lock_threads(&self.store.threads),
                Arc::new(thread.clone()),
            );
        }
        Ok(read)
    }
}

impl Snapshot<'_> {
    /// The end of the merged word index as this snapshot sees it.
    fn merged_mark(&self) -> Result<u64> {
        crate::store::words::merged_through(&self.table(META)?)
    }

    fn thread_record(&self, id: u64) -> Result<Option<ThreadRec>> {
        read_thread(&self.table(MESSAGES)?, id)
    }

    /// The message the tail says `record` names; the caller checks it against
    /// this snapshot. `None` while a commit holds the tail (see `super::tail`).
    fn tail_key(&self, record: &[u8]) -> Option<u64> {
        let tail = self.store.tail.try_lock().ok()?;
        tail.as_ref()?.keys.get(record)
    }

    /// A snapshot may be older or newer than the tail's counts: it always looks.
    fn index_may_hold(&self, _record: &[u8]) -> bool {
        true
    }

    /// The tail's messages as this snapshot sees them, when the store's memory
    /// holds them for it (see `super::word_tail`).
    fn tail_messages(&self, merged: u64, last: u64) -> Option<Vec<TailMessage>> {
        let tail = self.store.tail.try_lock().ok()?;
        if self.store.tail_stale.load(Ordering::SeqCst) {
            return None;
        }
        tail.as_ref()?.words.through(merged, last)
    }
}

fn read_thread(
    messages: &impl ReadableTable<(u64, u64), &'static [u8]>,
    id: u64,
) -> Result<Option<ThreadRec>> {
    match messages.get((id, THREAD_RECORD)).or_storage()? {
        Some(guard) => Ok(Some(codec::decode_thread(guard.value())?)),
        None => Ok(None),
    }
}

/// Adds a committed thread record to the store's cache, emptying it first when
/// full (a simple bound: the cache only saves reads).
fn keep_thread(cache: &mut HashMap<u64, Arc<ThreadRec>>, thread: Arc<ThreadRec>) {
    if cache.len() >= CACHED_THREADS && !cache.contains_key(&thread.id) {
        cache.clear();
    }
    cache.insert(thread.id, thread);
}

fn get_json<T: DeserializeOwned>(
    table: &impl ReadableTable<u64, &'static [u8]>,
    id: u64,
) -> Result<Option<T>> {
    match table.get(id).or_storage()? {
        Some(guard) => Ok(Some(decode(guard.value())?)),
        None => Ok(None),
    }
}

mod artifacts;
mod coordination;
mod read;
mod write;

#[cfg(test)]
mod power_loss;
#[cfg(test)]
mod tests;
