//! # parley-postgres — a Parley forum in PostgreSQL
//!
//! The shared storage backend of the Parley engine ([`parley_forum`]): one forum in
//! a schema of a PostgreSQL database, which any number of engines (processes,
//! servers) may open at once. A crate of its own so that the embedded engine links
//! no async runtime, TLS stack or socket code: the client (`postgres`) runs on
//! tokio, and TLS is rustls. It implements the engine's public storage interface
//! ([`parley_forum::storage`]) over the engine's record codec.
//!
//! [`open`] and [`open_existing`] take what [`Forum::open`] takes: a
//! `postgres://` (or `postgresql://`) URL opens the forum in that database,
//! anything else is handed to [`Forum::open`] (a forum file). `parley_forum` alone
//! refuses a `postgres://` URL, saying to open it here.
//!
//! ```no_run
//! # fn main() -> Result<(), parley_forum::Error> {
//! let forum = parley_postgres::open(
//!     "postgres://parley@db.internal/agents?forum=team",
//!     parley_forum::Config::default(),
//! )?;
//! assert!(forum.is_shared());
//! # Ok(())
//! # }
//! ```
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
//! Records are stored in the same encodings as in the redb file
//! ([`parley_forum::storage::codec`]), so every result is byte for byte what the
//! embedded backend gives. The URL's parameters, TLS and deployment are told in
//! `docs/deployment.md`.
#![warn(missing_docs, unreachable_pub)]

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

use std::path::Path;
use std::sync::Arc;

use conn::{Pool, Target};

use parley_forum::provenance::RealmSecret;
use parley_forum::storage::{is_postgres_url, ReadTx, Store, WriteTx};
use parley_forum::{Config, Durability, Forum, Result};

/// Creates or opens the forum at `path` as [`Forum::open`] does, and, when `path`
/// is a `postgres://` (or `postgresql://`) URL, the forum in that PostgreSQL
/// database ([`PgStore::open`]), which other engines may share. The URL's `forum`
/// parameter names the forum (`main` when absent); every other part is libpq's URL
/// form (`docs/deployment.md`). The settings are checked before the database is
/// reached.
pub fn open(path: impl AsRef<Path>, config: Config) -> Result<Forum> {
    open_in(path.as_ref(), config, true)
}

/// Opens the forum at `path` as [`Forum::open_existing`] does, and, for a
/// `postgres://` URL, only a forum the database already holds: a missing one is
/// refused and nothing is created ([`PgStore::open_existing`]).
pub fn open_existing(path: impl AsRef<Path>, config: Config) -> Result<Forum> {
    open_in(path.as_ref(), config, false)
}

fn open_in(path: &Path, config: Config, create: bool) -> Result<Forum> {
    let Some(url) = path.to_str().filter(|text| is_postgres_url(text)) else {
        return if create {
            Forum::open(path, config)
        } else {
            Forum::open_existing(path, config)
        };
    };
    // Bad settings are refused before a connection is made, as for a file.
    config.validate()?;
    let store = if create {
        PgStore::open(url, config.durability)?
    } else {
        PgStore::open_existing(url, config.durability)?
    };
    Forum::with_store(Box::new(store), config)
}

/// A forum stored in PostgreSQL: the [`Store`] that [`open`] hands to
/// [`Forum::with_store`]. Public for hosts that open it themselves, and for tests
/// that hold a snapshot beside a forum.
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
    /// refused with [`parley_forum::Error::SchemaTooNew`].
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
