//! The shared backend: one forum in a schema of a PostgreSQL database, which any
//! number of engines (processes, servers) may open at once.
//!
//! What keeps the protocol exact with many engines:
//! - **One writer at a time, per forum.** A write transaction first takes a
//!   transaction-scoped advisory lock on the forum; ids are handed out under it, so
//!   they increase strictly in commit order and no cursor skips or repeats an item.
//! - **Snapshots.** A read is one `REPEATABLE READ READ ONLY` transaction: one
//!   consistent view, and it never blocks a writer.
//! - **No cache of shared state.** Tokens, writes for the rate limit and ids are read
//!   from the database in each transaction ([`Store::shared`] tells the engine not
//!   to cache callers), so a revocation or another engine's post counts at once.
//! - **Wake-ups.** Each commit sends a `NOTIFY` on the forum's channel; every engine
//!   listens on it (`listen`) and rings its waiting calls (SPEC §14.2).
//!
//! Records are stored in the same encodings as in the redb file, so every result
//! is byte for byte what the embedded backend gives.

mod artifacts;
mod begin;
mod cache;
mod conn;
mod coordination;
mod listen;
mod posts;
mod read;
mod schema;
mod sql;
mod tls;
mod write;

use std::sync::Arc;

use conn::{Pool, Target};

use super::{ReadTx, Store, WriteTx};
use crate::config::Durability;
use crate::error::Result;
use crate::provenance::RealmSecret;

/// A forum stored in PostgreSQL.
pub struct PgStore {
    pool: Arc<Pool>,
    cursor_key: u64,
    realm_secret: RealmSecret,
    listener: listen::Listener,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("forum", &self.pool.target.shown)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Opens the forum a `postgres://` (or `postgresql://`) URL names, creating its
    /// schema or migrating it. The URL's `forum` parameter names the forum (its
    /// schema is `parley_<forum>`; `main` when absent); every other part is
    /// PostgreSQL's own (libpq's URL form). A schema that holds tables of another
    /// application is refused and left untouched; one written by a newer release is
    /// refused with [`crate::Error::SchemaTooNew`].
    pub fn open(url: &str, durability: Durability) -> Result<Self> {
        PgStore::open_in(url, durability, true)
    }

    /// Opens the forum `url` names only if it is already there: a forum missing from
    /// the database is refused and nothing is created, so that a mistyped
    /// `?forum=` on a read never starts one.
    pub fn open_existing(url: &str, durability: Durability) -> Result<Self> {
        PgStore::open_in(url, durability, false)
    }

    fn open_in(url: &str, durability: Durability, create: bool) -> Result<Self> {
        let target = Target::parse(url, durability)?;
        let pool = Arc::new(Pool::new(target)?);
        let (cursor_key, realm_secret) = {
            let mut conn = pool.take()?;
            schema::prepare(&mut conn, create)?
        };
        let listener = listen::Listener::start(Arc::clone(&pool));
        Ok(PgStore {
            pool,
            cursor_key,
            realm_secret,
            listener,
        })
    }
}

impl Store for PgStore {
    fn read(&self) -> Result<Box<dyn ReadTx + '_>> {
        Ok(Box::new(read::Tx::snapshot(self.pool.take()?)?))
    }

    fn write(&self) -> Result<Box<dyn WriteTx + '_>> {
        Ok(Box::new(read::Tx::writer(
            self.pool.take()?,
            Arc::clone(&self.pool),
        )?))
    }

    fn cursor_key(&self) -> u64 {
        self.cursor_key
    }

    fn realm_secret(&self) -> Option<RealmSecret> {
        Some(self.realm_secret.clone())
    }

    fn shared(&self) -> bool {
        true
    }

    fn on_foreign_commit(&self, ring: Arc<dyn Fn() + Send + Sync>) {
        self.listener.add(ring);
    }
}
