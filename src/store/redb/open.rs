//! Opening redb for a forum: the checks made before redb may write to a file,
//! the one panic boundary around redb's own calls, and redb's errors as Parley's.

use std::path::Path;

use redb::backends::FileBackend;
use redb::{Database, ReadableDatabase, ReadableTable, TableHandle};

use super::file;
use super::tables::{FORMAT_KEY, META};
use crate::error::{Error, Result};

/// The redb errors the store meets.
pub(super) trait RedbError: std::error::Error + Send + Sync + 'static {}

impl RedbError for redb::Error {}
impl RedbError for redb::DatabaseError {}
impl RedbError for redb::TransactionError {}
impl RedbError for redb::TableError {}
impl RedbError for redb::StorageError {}
impl RedbError for redb::CommitError {}
impl RedbError for redb::SetDurabilityError {}

/// A redb error as a storage failure that keeps it as its source. (A `From`
/// impl would be public, and redb is no part of the API.)
pub(super) fn storage<E: RedbError>(err: E) -> Error {
    Error::storage_caused_by(err.to_string(), err)
}

/// `.or_storage()?` where `?` alone would need a public `From`.
pub(super) trait OrStorage<T> {
    fn or_storage(self) -> Result<T>;
}

impl<T, E: RedbError> OrStorage<T> for std::result::Result<T, E> {
    fn or_storage(self) -> Result<T> {
        self.map_err(storage)
    }
}

/// redb's page cache. Its default (1 GiB) would let a large forum's resident size
/// grow far past what an embedded library should take from its host.
const CACHE_BYTES: usize = 64 << 20;

/// A redb database whose close cannot panic into the host: redb writes its
/// allocator state when it closes, and asserts on some damage it meets there.
pub(super) struct Db(Option<Database>);

impl Db {
    pub(super) fn new(db: Database) -> Self {
        Db(Some(db))
    }
}

impl std::ops::Deref for Db {
    type Target = Database;
    fn deref(&self) -> &Database {
        self.0.as_ref().expect("set until dropped")
    }
}

impl std::ops::DerefMut for Db {
    fn deref_mut(&mut self) -> &mut Database {
        self.0.as_mut().expect("set until dropped")
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Some(db) = self.0.take() {
            // A damaged file: what redb could not finish, a repair on the next open
            // redoes. The panic message is all that is lost.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(db)));
        }
    }
}

/// How long a reopen waits for the snapshots of the failed database to end.
pub(super) const REOPEN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
pub(super) const ALREADY_OPEN: &str = "already open";

pub(super) fn is_io_failure(e: &redb::TransactionError) -> bool {
    matches!(
        e,
        redb::TransactionError::Storage(redb::StorageError::Io(_) | redb::StorageError::PreviousIo)
    )
}

pub(super) fn commit_failed_on_io(e: &redb::CommitError) -> bool {
    matches!(
        e,
        redb::CommitError::Storage(redb::StorageError::Io(_) | redb::StorageError::PreviousIo)
    )
}

/// Whether a file without Parley's format number holds tables: it is then another
/// application's redb database.
pub(super) fn holds_foreign_tables(txn: &redb::WriteTransaction) -> Result<bool> {
    Ok(txn
        .list_tables()
        .or_storage()?
        .any(|t| t.name() != META.name()))
}

pub(super) fn cannot_open(path: &Path, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::storage_caused_by(format!("cannot open {}: {e}", path.display()), e)
}

pub(super) fn redb_open_error(path: &Path, e: redb::DatabaseError) -> Error {
    match e {
        redb::DatabaseError::DatabaseAlreadyOpen => Error::storage(format!(
            "cannot open {}: the forum is {ALREADY_OPEN} (by another handle or process)",
            path.display()
        )),
        redb::DatabaseError::Storage(redb::StorageError::Io(io)) => cannot_open(path, io),
        other => cannot_open(path, other),
    }
}

pub(super) fn builder() -> redb::Builder {
    let mut builder = Database::builder();
    builder.set_cache_size(CACHE_BYTES);
    builder
}

/// Opens the redb database of a forum file, creating the file when `create` is set.
/// An empty file is adopted as a new forum only when `create` is set: otherwise it
/// is refused unwritten, since a read or a check must never start a forum.
///
/// An existing redb file that was closed cleanly is first opened read-only and
/// refused, unwritten, unless it is a Parley forum (or holds no table at all). One
/// that was not closed cleanly cannot be read without redb's repair; it is repaired
/// (as its owner's next open would) and then checked, in a transaction that is
/// never committed for a foreign file.
///
/// A file of a format newer than `newest` is refused the same way, unwritten.
pub(super) fn open_file(path: &Path, create: bool, newest: u64) -> Result<Db> {
    let opened = file::open(path, create)?;
    if let file::Opened::Existing(f) = &opened {
        if f.metadata().map_err(|e| cannot_open(path, e))?.len() > 0 {
            unpanicked(path, || check_read_only(path, newest))?;
        } else if !create {
            return Err(Error::NotAForum(format!(
                "{} is empty, not a forum; Parley left it untouched (only an open that \
                 may create a forum adopts an empty file)",
                path.display()
            )));
        }
    }
    let backend = FileBackend::new(opened.into_file());
    unpanicked(path, || {
        builder()
            .create_with_backend(backend)
            .map(Db::new)
            .map_err(|e| redb_open_error(path, e))
    })
}

/// Runs `f`, a call of redb's on a file it may find damaged, turning a panic into
/// a storage error: redb asserts on some damage it meets in a file (a malformed
/// allocator state, say), and a damaged file is an error to report, never a crash
/// of the host. The store's only panic boundary besides [`Db`]'s drop; nothing
/// of Parley's own runs inside it.
pub(super) fn unpanicked<T>(path: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        Err(Error::storage(format!(
            "{} is damaged: redb stopped reading it ({})",
            path.display(),
            crate::error::panic_message(&*panic)
        )))
    })
}

/// Whether a process holds the redb file at `path` open for writing (a running
/// forum). redb marks an open with byte-range locks, not a lock of the whole file,
/// so a read-only open is how to ask: redb refuses it while a writer holds the
/// file. Writes nothing; a file that is not redb's is refused as `open_file`
/// refuses it.
pub fn held_open(path: &Path) -> Result<bool> {
    let backend = FileBackend::new(file::open_read_only(path)?);
    let opened = unpanicked(path, || Ok(builder().open_read_only_with_backend(backend)))?;
    Ok(matches!(
        opened,
        Err(redb::DatabaseError::DatabaseAlreadyOpen)
    ))
}

/// Refuses a cleanly closed redb file of another application, or of a format
/// newer than `newest`, without writing to it.
fn check_read_only(path: &Path, newest: u64) -> Result<()> {
    let file = file::open_read_only(path)?;
    let backend = FileBackend::new(file);
    let db = match builder().open_read_only_with_backend(backend) {
        Ok(db) => db,
        // Not closed cleanly: only a repair can tell (see `open_file`).
        Err(redb::DatabaseError::RepairAborted) => return Ok(()),
        Err(e) => return Err(redb_open_error(path, e)),
    };
    let txn = db.begin_read().or_storage()?;
    let ours = match txn.open_table(META) {
        Ok(meta) => match meta.get(FORMAT_KEY).or_storage()?.map(|v| v.value()) {
            Some(found) if found > newest => {
                return Err(Error::SchemaTooNew {
                    found,
                    supported: newest,
                })
            }
            found => found.is_some(),
        },
        Err(redb::TableError::TableDoesNotExist(_)) => false,
        Err(e) => return Err(storage(e)),
    };
    if !ours && txn.list_tables().or_storage()?.next().is_some() {
        return Err(Error::NotAForum(format!(
            "{} is a redb database of another application; Parley left it untouched",
            path.display()
        )));
    }
    Ok(())
}
