//! redb's errors as Parley's [`Error`], inside the crate only: a `From` impl for
//! them would be public, as every impl of a public trait for a public type is,
//! and redb is no part of the API.

use crate::error::{Error, Result};

/// The redb errors the store meets.
pub(crate) trait RedbError: std::error::Error + Send + Sync + 'static {}

impl RedbError for redb::Error {}
impl RedbError for redb::DatabaseError {}
impl RedbError for redb::TransactionError {}
impl RedbError for redb::TableError {}
impl RedbError for redb::StorageError {}
impl RedbError for redb::CommitError {}
impl RedbError for redb::SetDurabilityError {}

/// A redb error as a storage failure that keeps it as its source.
pub(crate) fn storage<E: RedbError>(err: E) -> Error {
    Error::storage_caused_by(err.to_string(), err)
}

/// `.or_storage()?` where `?` alone would need a public `From`.
pub(crate) trait OrStorage<T> {
    fn or_storage(self) -> Result<T>;
}

impl<T, E: RedbError> OrStorage<T> for std::result::Result<T, E> {
    fn or_storage(self) -> Result<T> {
        self.map_err(storage)
    }
}
