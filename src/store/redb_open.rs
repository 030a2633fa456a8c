//! Opening redb for a forum: the checks made before redb may write to a file, the
//! panic boundary around redb on a damaged file, and the migrations of older
//! schema versions.

use crate::store::redb_error::OrStorage;
use std::path::Path;

use redb::backends::FileBackend;
use redb::{Database, ReadableDatabase, ReadableTable, TableHandle};

use super::file;
use super::tables::*;
use crate::config::Progress;
use crate::error::{Error, Result};

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

/// Whether a file without Parley's metadata holds tables: it is then another
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
pub(super) fn open_file(path: &Path, create: bool) -> Result<Db> {
    let opened = file::open(path, create)?;
    if let file::Opened::Existing(f) = &opened {
        if f.metadata().map_err(|e| cannot_open(path, e))?.len() > 0 {
            unpanicked(path, || check_read_only(path))?;
        } else if !create {
            return Err(Error::NotAForum(format!(
                "{} is empty, not a forum; Parley left it untouched (only an open that \
                 may create a forum adopts an empty file)",
                path.display()
            )));
        }
    }
    let backend = FileBackend::new(opened.into_file()).map_err(|e| redb_open_error(path, e))?;
    unpanicked(path, || {
        builder()
            .create_with_backend(backend)
            .map(Db::new)
            .map_err(|e| redb_open_error(path, e))
    })
}

/// Runs `f`, turning a panic into a storage error. redb asserts on some damage
/// it meets in a file (a malformed allocator state, say); a damaged file is an
/// error to report, never a crash of the host.
pub(super) fn unpanicked<T>(path: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        Err(Error::storage(format!(
            "{} is damaged: redb stopped reading it ({})",
            path.display(),
            crate::error::panic_message(&*panic)
        )))
    })
}

/// Refuses a cleanly closed redb file of another application without writing to it.
fn check_read_only(path: &Path) -> Result<()> {
    let file = file::open_read_only(path)?;
    let backend = FileBackend::new(file).map_err(|e| redb_open_error(path, e))?;
    let db = match builder().open_read_only_with_backend(backend) {
        Ok(db) => db,
        // Not closed cleanly: only a repair can tell (see `open_file`).
        Err(redb::DatabaseError::RepairAborted) => return Ok(()),
        Err(e) => return Err(redb_open_error(path, e)),
    };
    let txn = db.begin_read().or_storage()?;
    let ours = match txn.open_table(META) {
        Ok(meta) => meta.get("schema_version").or_storage()?.is_some(),
        Err(redb::TableError::TableDoesNotExist(_)) => false,
        Err(e) => return Err(super::redb_error::storage(e)),
    };
    if !ours && txn.list_tables().or_storage()?.next().is_some() {
        return Err(Error::NotAForum(format!(
            "{} is a redb database of another application; Parley left it untouched",
            path.display()
        )));
    }
    Ok(())
}

/// Runs a migration in steps, each its own transaction: `step` moves what it
/// takes (a bounded number of entries) and says how many; a crash between steps
/// resumes where the last one ended. Each step tells `progress` how many of
/// `total` have moved under `what`.
pub(super) fn in_steps(
    db: &Db,
    progress: Option<&Progress>,
    what: &str,
    total: u64,
    mut step: impl FnMut(&redb::WriteTransaction) -> Result<usize>,
) -> Result<()> {
    let mut done = 0u64;
    while done < total {
        let txn = db.begin_write().or_storage()?;
        let moved = step(&txn)?;
        if moved == 0 {
            break;
        }
        txn.commit().or_storage()?;
        done += moved as u64;
        if let Some(report) = progress {
            report(what, done.min(total), total);
        }
    }
    Ok(())
}

/// Messages whose words one migration transaction indexes.
const WORDS_PER_STEP: u64 = 5000;

/// Builds the word index of a version-2 file, in steps of [`WORDS_PER_STEP`]
/// messages, each its own transaction: a crash resumes where the last step ended.
/// The file is version 3 once the last step commits.
pub(super) fn migrate_words(db: &Db, progress: Option<&Progress>) -> Result<()> {
    loop {
        let txn = db.begin_write().or_storage()?;
        let (done, total, finished);
        {
            let meta = txn.open_table(META).or_storage()?;
            if meta.get("schema_version").or_storage()?.map(|v| v.value()) != Some(2) {
                return Ok(());
            }
            let from = super::words::merged_through(&meta)?;
            drop(meta);
            total = super::blocks::last(&txn.open_table(PLACES).or_storage()?)?;
            done = total.min(from.saturating_add(WORDS_PER_STEP));
            super::words::merge(&txn, from, done)?;
            // The merged tail's threads belong in the thread list's blocks (see
            // `super::activity`); a file with its list still in the index gets the
            // same entries again when the list moves.
            super::activity::settle(&txn, from, done)?;
            finished = done >= total;
            if finished {
                // Version 5 (the steps of versions 3 to 5 are done for a version-2
                // file); `activity::leave_tail` then makes it 6.
                txn.open_table(META)
                    .or_storage()?
                    .insert("schema_version", 5)
                    .or_storage()?;
            }
        }
        txn.commit().or_storage()?;
        if let Some(report) = progress {
            report("indexing words for search", done, total);
        }
        if finished {
            return Ok(());
        }
    }
}

/// Moves version 1's thread records into [`MESSAGES`], after each thread's messages.
pub(super) fn migrate_v1(txn: &redb::WriteTransaction) -> Result<()> {
    {
        let old = txn.open_table(THREADS_V1).or_storage()?;
        let mut messages = txn.open_table(MESSAGES).or_storage()?;
        for entry in old.iter().or_storage()? {
            let (id, record) = entry.or_storage()?;
            messages
                .insert((id.value(), THREAD_RECORD), record.value())
                .or_storage()?;
        }
    }
    txn.delete_table(THREADS_V1).or_storage()?;
    Ok(())
}
