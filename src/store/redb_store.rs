//! The embedded backend: one redb file (or redb's in-memory backend).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::records::{
    Awaiting, ClaimRec, EventRec, IdentityRec, MessageRec, Remembered, ThreadRec, ThreadSpot,
    TokenRec,
};
use super::redb_open::{
    builder, commit_failed_on_io, holds_foreign_tables, is_io_failure, migrate_v1, migrate_words,
    open_file, unpanicked, Db, ALREADY_OPEN, REOPEN_WAIT,
};
use super::tables::*;
use super::{blocks, codec, Durable, Flow, Forgot, ReadTx, Store, Visit, WriteTx};
use crate::config::{Durability, Progress};
use crate::error::{Error, Result};
use crate::protocol::ids::IdKind;
use crate::protocol::state::State;

/// Thread records kept after a post, at most this many.
const CACHED_THREADS: usize = 4096;

/// Committed thread records, as the writer last stored or read them: a post to a
/// thread then neither looks its record up in redb nor decodes it. Only writers
/// use it; its lock is held across each commit, so the next writer sees the
/// records of the last commit (see `commit_deferred`).
type ThreadCache = Mutex<HashMap<u64, Arc<ThreadRec>>>;

/// A forum stored in redb.
pub struct RedbStore {
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
    threads: ThreadCache,
    durability: Durability,
    cursor_key: u64,
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| Error::Storage(format!("encoding a record: {e}")))
}

fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes)
        .map_err(|e| Error::Storage(format!("a stored record is unreadable: {e}")))
}

impl RedbStore {
    /// Creates or opens the forum file at `path` (see [`super::file`] for what is
    /// refused before anything is written). A durable forum commits through redb's
    /// durable commit; a volatile one commits without flushing.
    pub fn open(path: &Path, durability: Durability) -> Result<Self> {
        Self::open_with(path, durability, None)
    }

    /// [`RedbStore::open`], telling `progress` how a migration of an older file
    /// goes (the word index of a large forum takes a while to build).
    pub fn open_with(
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

    /// A forum over another redb storage backend (a raw device, an encrypted file,
    /// a test's fault injector). Unlike a forum file, it is not reopened by itself
    /// after an I/O error.
    pub fn with_backend(
        backend: impl redb::StorageBackend,
        durability: Durability,
    ) -> Result<Self> {
        let db = builder().create_with_backend(backend)?;
        Self::init(Db::new(db), durability)
    }

    /// A forum that lives in memory and vanishes with it.
    pub fn in_memory() -> Result<Self> {
        let db = Database::builder().create_with_backend(redb::backends::InMemoryBackend::new())?;
        Self::init(Db::new(db), Durability::Volatile)
    }

    fn init(db: Db, durability: Durability) -> Result<Self> {
        Self::init_with(db, durability, None)
    }

    fn init_with(db: Db, durability: Durability, progress: Option<&Progress>) -> Result<Self> {
        let txn = db.begin_write()?;
        let cursor_key;
        {
            let mut meta = txn.open_table(META)?;
            let version = meta.get("schema_version")?.map(|v| v.value());
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
                    meta.insert("schema_version", 2)?;
                }
                Some(_) => {}
                None => {
                    drop(meta);
                    if holds_foreign_tables(&txn)? {
                        return Err(Error::NotAForum(
                            "the file holds tables of another application".into(),
                        ));
                    }
                    meta = txn.open_table(META)?;
                    meta.insert("schema_version", SCHEMA_VERSION)?;
                    let mut key = [0u8; 8];
                    getrandom::fill(&mut key)
                        .map_err(|e| Error::Storage(format!("OS random source: {e}")))?;
                    meta.insert("cursor_key", u64::from_le_bytes(key))?;
                }
            }
            cursor_key = meta.get("cursor_key")?.map(|v| v.value()).unwrap_or(0);
        }
        // Every table exists from the start, so reads never meet a missing one.
        txn.open_table(TOKENS)?;
        txn.open_table(IDENTITIES)?;
        txn.open_table(MESSAGES)?;
        txn.open_table(CLAIMS)?;
        txn.open_table(EVENTS)?;
        txn.open_table(INDEX)?;
        txn.open_table(WORD_BLOCKS)?;
        txn.commit()?;
        // The message map first: the word index's migration reads it.
        super::map_migration::migrate(&db, progress)?;
        migrate_words(&db, progress)?;
        Ok(RedbStore {
            db: RwLock::new(Some(Arc::new(db))),
            path: None,
            last_ids: Mutex::new([None; 4]),
            words_merged: Mutex::new(None),
            threads: Mutex::new(HashMap::new()),
            durability,
            cursor_key,
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
            return Err(Error::Storage("the in-memory forum failed".into()));
        };
        let deadline = std::time::Instant::now() + REOPEN_WAIT;
        let db = loop {
            match unpanicked(path, || open_file(path, false)) {
                Err(Error::Storage(msg))
                    if msg.contains(ALREADY_OPEN) && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                other => break other?,
            }
        };
        // What the caches hold may be what a failed commit meant to write.
        *self.last_ids.lock().unwrap_or_else(|p| p.into_inner()) = [None; 4];
        *self.words_merged.lock().unwrap_or_else(|p| p.into_inner()) = None;
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
                let t = begin(&db)?;
                Ok((db, t))
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// Runs redb's integrity check (checksums of every page) on a closed forum file,
/// and then checks that it is a Parley forum this library can read. Never creates
/// a file.
pub fn check_integrity(path: &Path) -> Result<bool> {
    let mut db = open_file(path, false)?;
    let ok = unpanicked(path, || Ok(db.check_integrity()?))?;
    drop(db);
    drop(RedbStore::open_existing(path)?);
    Ok(ok)
}

impl RedbStore {
    /// Opens an existing forum file (never creating one).
    pub(crate) fn open_existing(path: &Path) -> Result<Self> {
        let mut store = unpanicked(path, || {
            Self::init(open_file(path, false)?, Durability::Durable)
        })?;
        store.path = Some(path.to_path_buf());
        Ok(store)
    }
}

impl Store for RedbStore {
    fn read(&self) -> Result<Box<dyn ReadTx + '_>> {
        let (db, txn) = self.begin(|db| db.begin_read())?;
        Ok(Box::new(Snapshot { txn, _db: db }))
    }

    fn write(&self) -> Result<Box<dyn WriteTx + '_>> {
        let (db, mut txn) = self.begin(|db| db.begin_write())?;
        if self.durability == Durability::Volatile {
            txn.set_durability(redb::Durability::None)?;
        }
        Ok(Box::new(Writer {
            txn,
            store: self,
            db,
            ids: [None; 4],
            written: HashMap::new(),
            words_merged: None,
        }))
    }

    fn cursor_key(&self) -> u64 {
        self.cursor_key
    }
}

/// A read snapshot. The transaction is dropped before the database it came from.
struct Snapshot {
    txn: redb::ReadTransaction,
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
}

fn lock_threads(threads: &ThreadCache) -> MutexGuard<'_, HashMap<u64, Arc<ThreadRec>>> {
    // Entries are whole records, inserted or removed at once: a panic elsewhere
    // leaves none half-written.
    threads.lock().unwrap_or_else(|p| p.into_inner())
}

impl Snapshot {
    fn table<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        def: TableDefinition<K, V>,
    ) -> Result<redb::ReadOnlyTable<K, V>> {
        Ok(self.txn.open_table(def)?)
    }
}

impl Writer<'_> {
    fn table<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        def: TableDefinition<K, V>,
    ) -> Result<redb::Table<'_, K, V>> {
        Ok(self.txn.open_table(def)?)
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

impl Snapshot {
    fn thread_record(&self, id: u64) -> Result<Option<ThreadRec>> {
        read_thread(&self.table(MESSAGES)?, id)
    }
}

fn read_thread(
    messages: &impl ReadableTable<(u64, u64), &'static [u8]>,
    id: u64,
) -> Result<Option<ThreadRec>> {
    match messages.get((id, THREAD_RECORD))? {
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
    match table.get(id)? {
        Some(guard) => Ok(Some(decode(guard.value())?)),
        None => Ok(None),
    }
}

/// The next `(position, thread)` of an index range.
fn next_entry(range: &mut redb::Range<'_, &'static [u8], u64>) -> Result<Option<(u64, u64)>> {
    match range.next() {
        Some(entry) => {
            let (k, v) = entry?;
            Ok(Some((key::tail(k.value()), v.value())))
        }
        None => Ok(None),
    }
}

/// One implementation of the reads for snapshots and writers alike.
macro_rules! impl_read {
    ($ty:ty) => {
        impl ReadTx for $ty {
            fn last_id(&self, kind: IdKind) -> Result<u64> {
                let last = match kind {
                    // Each thread's record is the last key of its range.
                    IdKind::Thread => self.table(MESSAGES)?.last()?.map(|(k, _)| k.value().0),
                    IdKind::Message => Some(blocks::last(&self.table(MESSAGES)?)?),
                    IdKind::Claim => self.table(CLAIMS)?.last()?.map(|(k, _)| k.value()),
                    IdKind::Event => self.table(EVENTS)?.last()?.map(|(k, _)| k.value()),
                };
                Ok(last.unwrap_or(0))
            }

            fn token(&self, key: &[u8]) -> Result<Option<TokenRec>> {
                match self.table(TOKENS)?.get(key)? {
                    Some(guard) => Ok(Some(decode(guard.value())?)),
                    None => Ok(None),
                }
            }

            fn identity(&self, identity: &str) -> Result<Option<IdentityRec>> {
                match self.table(IDENTITIES)?.get(identity)? {
                    Some(guard) => Ok(Some(decode(guard.value())?)),
                    None => Ok(None),
                }
            }

            fn identities(&self) -> Result<Vec<(String, IdentityRec)>> {
                let table = self.table(IDENTITIES)?;
                let mut out = Vec::new();
                for entry in table.iter()? {
                    let (k, v) = entry?;
                    out.push((k.value().to_string(), decode(v.value())?));
                }
                Ok(out)
            }

            fn thread(&self, id: u64) -> Result<Option<ThreadRec>> {
                self.thread_record(id)
            }

            fn message(&self, id: u64) -> Result<Option<MessageRec>> {
                let table = self.table(MESSAGES)?;
                let Some(place) = blocks::place(&table, id)? else {
                    return Ok(None);
                };
                let found = match table.get((place.thread, id))? {
                    Some(guard) => Some(codec::decode(guard.value())?),
                    None => None,
                };
                Ok(found)
            }

            fn thread_messages(&self, thread: u64, expected: usize) -> Result<Vec<MessageRec>> {
                if thread == blocks::BLOCKS {
                    return Ok(Vec::new());
                }
                let table = self.table(MESSAGES)?;
                // Sized once: grown by doubling, a long thread's list is copied and
                // freed several times over, and glibc sweeps its small free chunks
                // at each large free.
                let mut out = Vec::with_capacity(expected.min(1 << 16));
                for entry in table.range((thread, 0)..(thread, THREAD_RECORD))? {
                    out.push(codec::decode(entry?.1.value())?);
                }
                Ok(out)
            }

            fn claim(&self, id: u64) -> Result<Option<ClaimRec>> {
                get_json(&self.table(CLAIMS)?, id)
            }

            fn event(&self, id: u64) -> Result<Option<EventRec>> {
                get_json(&self.table(EVENTS)?, id)
            }

            fn writes_since(&self, identity: &str, since: i64) -> Result<Vec<i64>> {
                let table = self.table(INDEX)?;
                let (lo, hi) = (key::write(identity, 0), key::write(identity, u64::MAX));
                let mut out = Vec::new();
                for entry in table.range(lo.as_slice()..=hi.as_slice())? {
                    let at = entry?.1.value() as i64;
                    if at >= since {
                        out.push(at);
                    }
                }
                out.sort_unstable();
                Ok(out)
            }

            fn scan_turns(&self, identity: &str, after: u64, visit: Visit<'_>) -> Result<()> {
                let table = self.table(INDEX)?;
                let (lo, hi) = (
                    key::turn(identity, after.saturating_add(1)),
                    key::turn(identity, u64::MAX),
                );
                for entry in table.range(lo.as_slice()..=hi.as_slice())? {
                    let (k, v) = entry?;
                    if visit(key::tail(k.value()), v.value())? == Flow::Stop {
                        break;
                    }
                }
                Ok(())
            }

            fn scan_activity(
                &self,
                state: Option<State>,
                after: u64,
                visit: Visit<'_>,
            ) -> Result<()> {
                // Each thread sits once, under its state. The whole list is the
                // merge of the per-state lists, each already in position order.
                let table = self.table(INDEX)?;
                let states: Vec<State> = match state {
                    Some(s) => vec![s],
                    None => State::FORWARD.into_iter().chain(State::SIDE).collect(),
                };
                let mut ranges = Vec::with_capacity(states.len());
                for s in states {
                    let (lo, hi) = (
                        key::activity(s.code(), after.saturating_add(1)),
                        key::activity(s.code(), u64::MAX),
                    );
                    let mut range = table.range(lo.as_slice()..=hi.as_slice())?;
                    let head = next_entry(&mut range)?;
                    ranges.push((range, head));
                }
                loop {
                    let Some(i) = (0..ranges.len())
                        .filter(|i| ranges[*i].1.is_some())
                        .min_by_key(|i| ranges[*i].1.map(|(pos, _)| pos))
                    else {
                        break;
                    };
                    let (pos, thread) = ranges[i].1.take().expect("chosen for its head");
                    if visit(pos, thread)? == Flow::Stop {
                        break;
                    }
                    ranges[i].1 = next_entry(&mut ranges[i].0)?;
                }
                Ok(())
            }

            fn search_words(&self, words: &[String], before: u64, visit: Visit<'_>) -> Result<()> {
                let tables = super::words::Tables {
                    blocks: &self.table(WORD_BLOCKS)?,
                    messages: &self.table(MESSAGES)?,
                    merged: super::words::merged_through(&self.table(META)?)?,
                    last: self.last_id(IdKind::Message)?,
                };
                super::words::search(&tables, words, before, &mut |m, t| {
                    Ok(visit(m, t)? == Flow::Continue)
                })
            }

            fn remembered(
                &self,
                identity: &str,
                key: &str,
            ) -> Result<Option<(Remembered, MessageRec)>> {
                let record = key::idempotency(identity, key);
                let found = self
                    .table(INDEX)?
                    .get(record.as_slice())?
                    .map(|v| v.value());
                let Some(id) = found else {
                    return Ok(None);
                };
                // The post's time and digest are its message's.
                let Some(message) = self.message(id)? else {
                    return Ok(None);
                };
                let Some(digest) = message.key.as_ref().map(|k| k.digest) else {
                    return Ok(None);
                };
                let post = Remembered {
                    message: id,
                    at: message.created_at,
                    digest,
                };
                Ok(Some((post, message)))
            }

            fn scan_messages(
                &self,
                thread: Option<u64>,
                after: u64,
                visit: Visit<'_>,
            ) -> Result<()> {
                let from = after.saturating_add(1);
                match thread {
                    None => blocks::scan(&self.table(MESSAGES)?, after, |id, place| {
                        Ok(visit(id, place.thread)? == Flow::Continue)
                    })?,
                    Some(blocks::BLOCKS) => {}
                    Some(thread) => {
                        let table = self.table(MESSAGES)?;
                        for entry in table.range((thread, from)..(thread, THREAD_RECORD))? {
                            let (k, _) = entry?;
                            if visit(k.value().1, thread)? == Flow::Stop {
                                break;
                            }
                        }
                    }
                }
                Ok(())
            }

            fn scan_events(&self, thread: Option<u64>, after: u64, visit: Visit<'_>) -> Result<()> {
                let from = after.saturating_add(1);
                match thread {
                    None => {
                        let table = self.table(EVENTS)?;
                        for entry in table.range(from..)? {
                            let (k, v) = entry?;
                            let event: EventRec = decode(v.value())?;
                            if visit(k.value(), event.thread)? == Flow::Stop {
                                break;
                            }
                        }
                    }
                    Some(thread) => {
                        let table = self.table(INDEX)?;
                        let (lo, hi) = (
                            key::thread_event(thread, from),
                            key::thread_event(thread, u64::MAX),
                        );
                        for entry in table.range(lo.as_slice()..=hi.as_slice())? {
                            let (k, _) = entry?;
                            if visit(key::tail(k.value()), thread)? == Flow::Stop {
                                break;
                            }
                        }
                    }
                }
                Ok(())
            }
        }
    };
}

impl_read!(Snapshot);
impl_read!(Writer<'_>);

impl WriteTx for Writer<'_> {
    fn next_id(&mut self, kind: IdKind) -> Result<u64> {
        let k = kind as usize;
        let last = match self.ids[k] {
            Some(last) => last,
            None => {
                let known = self
                    .store
                    .last_ids
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())[k];
                match known {
                    Some(last) => last,
                    None => self.last_id(kind)?,
                }
            }
        };
        self.ids[k] = Some(last + 1);
        Ok(last + 1)
    }

    fn put_token(&mut self, key: &[u8], token: &TokenRec) -> Result<()> {
        self.table(TOKENS)?.insert(key, encode(token)?.as_slice())?;
        Ok(())
    }

    fn put_identity(&mut self, identity: &str, rec: &IdentityRec) -> Result<()> {
        self.table(IDENTITIES)?
            .insert(identity, encode(rec)?.as_slice())?;
        Ok(())
    }

    fn put_post(
        &mut self,
        message: &MessageRec,
        thread: &Arc<ThreadRec>,
        before: Option<&ThreadSpot>,
        after: &ThreadSpot,
    ) -> Result<()> {
        let turn = |a: &Option<Awaiting>| a.as_ref().map(|a| key::turn(&a.identity, a.message));
        let old_turn = before.and_then(|b| turn(&b.awaiting));
        let new_turn = turn(&after.awaiting);
        // Each table is opened once: an open costs about as much as an insert.
        {
            let mut index = self.table(INDEX)?;
            if old_turn != new_turn {
                if let Some(k) = &old_turn {
                    index.remove(k.as_slice())?;
                }
                if let Some(k) = &new_turn {
                    index.insert(k.as_slice(), thread.id)?;
                }
            }
            if let Some(b) = before {
                index.remove(key::activity(b.state.code(), b.last_message).as_slice())?;
            }
            index.insert(
                key::activity(after.state.code(), after.last_message).as_slice(),
                thread.id,
            )?;
        }
        let mut messages = self.table(MESSAGES)?;
        blocks::put(
            &mut messages,
            message.id,
            message.thread,
            message.key.is_some(),
        )?;
        messages.insert(
            (message.thread, message.id),
            codec::encode(message).as_slice(),
        )?;
        messages.insert(
            (thread.id, THREAD_RECORD),
            codec::encode_thread(thread).as_slice(),
        )?;
        drop(messages);
        self.written.insert(thread.id, Arc::clone(thread));
        Ok(())
    }

    fn put_claim(&mut self, claim: &ClaimRec) -> Result<()> {
        self.table(CLAIMS)?
            .insert(claim.id, encode(claim)?.as_slice())?;
        Ok(())
    }

    fn index_words(&mut self, message: u64) -> Result<()> {
        let merged = match self.words_merged {
            Some(m) => m,
            None => {
                let known = *self
                    .store
                    .words_merged
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                match known {
                    Some(m) => m,
                    None => super::words::merged_through(&self.table(META)?)?,
                }
            }
        };
        let now = super::words::note(&self.txn, merged, message)?;
        self.words_merged = Some(now.unwrap_or(merged));
        Ok(())
    }

    fn remember(&mut self, identity: &str, key: &str, post: &Remembered) -> Result<()> {
        // The digest and time are in the message's record (put by `put_post`); an
        // expired record under the same key is replaced, and its message's entry
        // in the map of keyed posts no longer matches it (see `forget_remembered`).
        self.table(INDEX)?
            .insert(key::idempotency(identity, key).as_slice(), post.message)?;
        Ok(())
    }

    fn forget_remembered(&mut self, before: i64, max: usize) -> Result<Forgot> {
        super::expiry::forget(&self.txn, before, max)
    }

    fn put_event(&mut self, event: &EventRec) -> Result<()> {
        self.table(EVENTS)?
            .insert(event.id, encode(event)?.as_slice())?;
        self.table(INDEX)?
            .insert(key::thread_event(event.thread, event.id).as_slice(), 0)?;
        Ok(())
    }

    fn record_write(
        &mut self,
        identity: &str,
        message: u64,
        at: i64,
        forget_before: i64,
    ) -> Result<()> {
        let mut index = self.table(INDEX)?;
        let (lo, hi) = (key::write(identity, 0), key::write(identity, u64::MAX));
        let stale: Vec<Vec<u8>> = index
            .range(lo.as_slice()..=hi.as_slice())?
            .filter_map(|e| e.ok())
            .filter(|(_, v)| (v.value() as i64) < forget_before)
            .map(|(k, _)| k.value().to_vec())
            .collect();
        for k in stale {
            index.remove(k.as_slice())?;
        }
        index.insert(key::write(identity, message).as_slice(), at.max(0) as u64)?;
        Ok(())
    }

    fn commit_deferred(self: Box<Self>) -> Result<Durable> {
        let Writer {
            txn,
            store,
            db,
            ids,
            written,
            words_merged,
        } = *self;
        // The cache's lock is held from before the commit (which lets the next
        // writer begin) until its records are in, so that writer sees them; a
        // failed commit leaves the cache as it was.
        let mut cache = lock_threads(&store.threads);
        if let Err(e) = txn.commit() {
            drop(cache);
            if commit_failed_on_io(&e) {
                store.failed(&db);
            }
            return Err(e.into());
        }
        for thread in written.into_values() {
            keep_thread(&mut cache, thread);
        }
        drop(cache);
        let mut known = store.last_ids.lock().unwrap_or_else(|p| p.into_inner());
        for (known, handed) in known.iter_mut().zip(ids) {
            if handed.is_some() {
                *known = handed;
            }
        }
        drop(known);
        if words_merged.is_some() {
            *store.words_merged.lock().unwrap_or_else(|p| p.into_inner()) = words_merged;
        }
        // redb's durable commit returned: the commit is on disk.
        Ok(Durable::done())
    }
}

#[cfg(test)]
mod tests;
