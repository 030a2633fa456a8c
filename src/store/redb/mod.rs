//! The embedded backend: one redb file (or redb's in-memory backend).
//!
//! One typed table per record kind and per index (`tables`), each written in
//! the post's own write transaction: what a transaction commits is the whole
//! state, and nothing is kept in memory between transactions but the database.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use redb::{Database, ReadableDatabase, ReadableTable};

use self::open::{
    commit_failed_on_io, is_io_failure, open_file, unpanicked, Db, OrStorage, ALREADY_OPEN,
    REOPEN_WAIT,
};
use self::tables::{REALM_KEY, REALM_SEED};
use super::{Durable, ReadTx, Store, WriteTx};
use crate::config::{Durability, Progress};
use crate::error::{Error, Result};
use crate::protocol::ids::IdKind;
use crate::provenance::RealmSecret;

mod artifacts;
pub(super) mod check;
mod coordination;
mod file;
mod format;
mod keys;
mod open;
pub use open::held_open;
mod read;
mod tables;
mod words;
mod write;

#[cfg(test)]
mod power_loss;
#[cfg(test)]
mod tests;

/// A forum stored in redb.
pub(crate) struct RedbStore {
    /// The database, or `None` while it must be reopened: redb fails every call
    /// after an I/O error (a full disk, say) until it is opened anew, which the next
    /// call here does by itself (see [`RedbStore::database`]).
    db: RwLock<Option<Arc<Db>>>,
    /// The forum file, for reopening; `None` in memory.
    path: Option<PathBuf>,
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

    /// Creates or opens the forum file at `path`. `progress` would hear of a
    /// migration of an older format; format 1 has none.
    pub(crate) fn open_with(
        path: &Path,
        durability: Durability,
        progress: Option<&Progress>,
    ) -> Result<Self> {
        Self::open_path(path, true, durability, progress)
    }

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
        Self::open_path(path, false, durability, progress)
    }

    fn open_path(
        path: &Path,
        create: bool,
        durability: Durability,
        progress: Option<&Progress>,
    ) -> Result<Self> {
        let db = open_file(path, create, format::current())?;
        let mut store = unpanicked(path, || Self::init(db, durability, progress))?;
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
        let db = open::builder().create_with_backend(backend).or_storage()?;
        Self::init(Db::new(db), durability, None)
    }

    /// A forum that lives in memory and vanishes with it.
    pub(crate) fn in_memory() -> Result<Self> {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .or_storage()?;
        Self::init(Db::new(db), Durability::Volatile, None)
    }

    fn init(db: Db, durability: Durability, progress: Option<&Progress>) -> Result<Self> {
        let txn = db.begin_write().or_storage()?;
        let cursor_key = format::settle(&txn, progress)?;
        tables::create_all(&txn).or_storage()?;
        let realm_secret = realm_secret(&txn)?;
        txn.commit().or_storage()?;
        Ok(RedbStore {
            db: RwLock::new(Some(Arc::new(db))),
            path: None,
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
            match open_file(path, false, format::current()) {
                Err(Error::Storage(e))
                    if e.message().contains(ALREADY_OPEN)
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                other => break other?,
            }
        };
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
            Err(e) => Err(open::storage(e)),
        }
    }
}

/// Runs redb's integrity check (checksums of every page) on a closed forum file,
/// and then checks that it is a Parley forum this library can read. Never creates
/// a file.
pub fn check_integrity(path: &Path) -> Result<bool> {
    let mut db = open_file(path, false, format::current())?;
    let ok = unpanicked(path, || db.check_integrity().or_storage())?;
    drop(db);
    drop(RedbStore::open_existing(path)?);
    Ok(ok)
}

impl Store for RedbStore {
    fn read(&self) -> Result<Box<dyn ReadTx + '_>> {
        let (db, txn) = self.begin(|db| db.begin_read())?;
        Ok(Box::new(Snapshot { txn, _db: db }))
    }

    fn write(&self) -> Result<Box<dyn WriteTx + '_>> {
        let (db, mut txn) = self.begin(|db| db.begin_write())?;
        if self.durability == Durability::Volatile {
            txn.set_durability(redb::Durability::None).or_storage()?;
        }
        Ok(Box::new(Writer {
            txn,
            store: self,
            db,
            ids: [None; 4],
        }))
    }

    fn cursor_key(&self) -> u64 {
        self.cursor_key
    }

    fn realm_secret(&self) -> Option<RealmSecret> {
        Some(self.realm_secret.clone())
    }
}

/// The forum's realm key, made now if the file has none (a new file).
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
struct Snapshot {
    txn: redb::ReadTransaction,
    _db: Arc<Db>,
}

/// The one write transaction.
struct Writer<'s> {
    txn: redb::WriteTransaction,
    store: &'s RedbStore,
    db: Arc<Db>,
    /// The last id of each kind handed out in this transaction, stored or not.
    ids: [Option<u64>; 4],
}

impl Snapshot {
    fn table<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        def: redb::TableDefinition<K, V>,
    ) -> Result<redb::ReadOnlyTable<K, V>> {
        self.txn.open_table(def).or_storage()
    }
}

impl Writer<'_> {
    fn table<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        def: redb::TableDefinition<K, V>,
    ) -> Result<redb::Table<'_, K, V>> {
        self.txn.open_table(def).or_storage()
    }

    fn commit_now(self) -> Result<Durable> {
        let Writer { txn, store, db, .. } = self;
        if let Err(e) = txn.commit() {
            if commit_failed_on_io(&e) {
                store.failed(&db);
            }
            return Err(open::storage(e));
        }
        // redb's commit returned: durable (or, when volatile, visible).
        Ok(Durable::done())
    }

    fn next_of(&mut self, kind: IdKind) -> Result<u64> {
        let k = kind as usize;
        let last = match self.ids[k] {
            Some(last) => last,
            None => self.last_id(kind)?,
        };
        self.ids[k] = Some(last + 1);
        Ok(last + 1)
    }
}
