//! A transaction on one pooled connection: a snapshot, or the forum's one writer.

use std::cell::RefCell;

use postgres::Row;

use super::cache::View;
use super::conn::{Conn, Pooled};
use super::sql::damaged;
use parley_forum::storage::codec::{self, decode_json};
use parley_forum::storage::records::{
    ClaimRec, EventRec, IdentityRec, MessageHead, MessageRec, Remembered, ThreadRec, TokenRec,
};
use parley_forum::storage::IdKind;
use parley_forum::storage::{Flow, ReadTx, Visit};
use parley_forum::Result;
use parley_forum::State;

/// Rows fetched by the first page of a scan; each further page is 4× larger, up to
/// [`PAGE_MAX`]. Scans usually stop early (a page of a listing), and a page the
/// visitor does not use is rows sent for nothing.
const PAGE_FIRST: i64 = 64;
const PAGE_MAX: i64 = 4096;

/// What a writer keeps beside its transaction.
pub(super) struct Writing {
    /// The last id of each kind handed out in this transaction.
    pub(super) ids: [Option<u64>; 4],
    /// The statement that announces the commit to every engine: a `NOTIFY` on the
    /// forum's channel, with this engine's name as payload.
    pub(super) notify: String,
    /// The store's pool: its cache, and a connection for the wait that makes the
    /// commit durable (`write.rs`).
    pub(super) pool: std::sync::Arc<super::conn::Pool>,
    /// The cached records this transaction writes, for other engines' caches.
    pub(super) changed: super::cache::Changed,
}

/// A writer's statements not sent yet: in order, then its posts' rows.
#[derive(Debug, Default)]
pub(super) struct Pending {
    pub(super) sql: String,
    pub(super) posts: super::posts::Posts,
}

impl Pending {
    /// Everything queued, as one batch of statements; the queue is left empty.
    pub(super) fn take(&mut self) -> String {
        let mut sql = std::mem::take(&mut self.sql);
        self.posts.drain_into(&mut sql);
        sql
    }
}

/// A transaction. Its statements run in order on one connection; the connection
/// sits in a `RefCell` because reads take `&self`. No borrow is held while a
/// visitor runs, so a visitor may read through the same transaction.
pub(super) struct Tx<'p> {
    pub(super) conn: RefCell<Pooled<'p>>,
    pub(super) writing: Option<Writing>,
    /// Writes not sent yet (`sql.rs`, `posts.rs`): sent before the next read, or
    /// with the commit, in one round trip.
    pub(super) pending: RefCell<Pending>,
    /// Records read or written in this transaction, and for a writer the store's
    /// cache when it is current (`cache.rs`). A writer holds the forum's lock, and
    /// a snapshot sees one state: no record changes under either.
    pub(super) cache: View,
    /// Committed or rolled back: nothing left to end on drop.
    pub(super) ended: bool,
}

impl<'p> Tx<'p> {
    /// A consistent snapshot of everything committed.
    pub(super) fn snapshot(mut pooled: Pooled<'p>) -> Result<Tx<'p>> {
        if let Err(e) = pooled
            .get()
            .batch("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        {
            pooled.discard();
            return Err(e);
        }
        Ok(Tx {
            conn: RefCell::new(pooled),
            writing: None,
            pending: RefCell::default(),
            cache: View::detached(),
            ended: false,
        })
    }

    /// The forum's writer: waits for the forum's advisory lock, held until commit
    /// or rollback, so writers of every engine run one at a time.
    pub(super) fn writer(
        mut pooled: Pooled<'p>,
        pool: std::sync::Arc<super::conn::Pool>,
    ) -> Result<Tx<'p>> {
        let (lock, notify) = {
            let t = pooled.target();
            // Both names are [a-z0-9_]: no quoting is needed.
            (
                t.lock,
                format!("NOTIFY {}, '{}'", t.channel, pooled.engine()),
            )
        };
        let cache = match super::begin::begin(pooled.get(), &pool, lock) {
            Ok(cache) => cache,
            Err(e) => {
                pooled.discard();
                return Err(e);
            }
        };
        Ok(Tx {
            conn: RefCell::new(pooled),
            writing: Some(Writing {
                ids: [None; 4],
                notify,
                pool,
                changed: Default::default(),
            }),
            pending: RefCell::default(),
            cache,
            ended: false,
        })
    }

    /// Runs `f` on the connection. A failure leaves the connection's state unknown
    /// (an aborted transaction, a lost socket): it is not reused.
    pub(super) fn with<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        let mut pooled = self.conn.borrow_mut();
        // A read sees this transaction's own writes: the queued ones go first.
        let pending = self.pending.borrow_mut().take();
        let sent = if pending.is_empty() {
            Ok(())
        } else {
            pooled.get().batch(&pending)
        };
        let out = sent.and_then(|()| f(pooled.get()));
        if out.is_err() {
            pooled.discard();
        }
        out
    }

    /// A feed of `table` (`messages` or `events`, both `(id, thread)`): its ids
    /// after `after`, of one thread or all, in order.
    fn feed(&self, table: &str, thread: Option<u64>, after: u64, visit: Visit<'_>) -> Result<()> {
        match thread {
            None => {
                let sql =
                    format!("SELECT id, thread FROM {table} WHERE id > $1 ORDER BY id LIMIT $2");
                self.pages(
                    big(after),
                    |c, from, limit| c.rows(&sql, &[&from, &limit]),
                    visit,
                )
            }
            Some(t) => {
                let sql = format!(
                    "SELECT id, thread FROM {table} WHERE thread = $1 AND id > $2 ORDER BY id LIMIT $3"
                );
                let t = big(t);
                self.pages(
                    big(after),
                    |c, from, limit| c.rows(&sql, &[&t, &from, &limit]),
                    visit,
                )
            }
        }
    }

    fn rows(&self, sql: &str, params: &[&(dyn postgres::types::ToSql + Sync)]) -> Result<Vec<Row>> {
        self.with(|c| c.rows(sql, params))
    }

    fn record(&self, sql: &str, id: i64) -> Result<Option<Vec<u8>>> {
        Ok(self.with(|c| c.row(sql, &[&id]))?.map(|r| r.get(0)))
    }

    /// Visits `(position, thread)` rows page by page. `fetch(conn, from, limit)`
    /// returns the rows after (or, descending, before) `from`, in order.
    fn pages(
        &self,
        mut from: i64,
        mut fetch: impl FnMut(&mut Conn, i64, i64) -> Result<Vec<Row>>,
        visit: Visit<'_>,
    ) -> Result<()> {
        let mut limit = PAGE_FIRST;
        loop {
            let rows = self.with(|c| fetch(c, from, limit))?;
            let full = rows.len() as i64 == limit;
            for row in rows {
                let (pos, thread): (i64, i64) = (row.get(0), row.get(1));
                from = pos;
                if visit(pos as u64, thread as u64)? == Flow::Stop {
                    return Ok(());
                }
            }
            if !full {
                return Ok(());
            }
            limit = (limit * 4).min(PAGE_MAX);
        }
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        let pooled = self.conn.get_mut();
        if !self.ended && !pooled.discarded() && pooled.get().batch("ROLLBACK").is_err() {
            pooled.discard();
        }
    }
}

/// An id or position as PostgreSQL's `bigint`; the largest ones (`u64::MAX` as
/// "no bound") become the largest `bigint`.
pub(super) fn big(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Reads through the transaction's cache: a record found there is not read again,
/// one read is kept there.
macro_rules! cached {
    ($self:ident, $kind:ident, $key:expr, $read:expr) => {{
        if let Some(known) = $self.cache.$kind($key) {
            return Ok(known);
        }
        let found = $read;
        $self
            .cache
            .seen
            .borrow_mut()
            .$kind
            .insert($key.to_owned(), found.clone());
        Ok(found)
    }};
}

impl ReadTx for Tx<'_> {
    fn presences(
        &self,
        identity: Option<&str>,
    ) -> Result<Vec<parley_forum::storage::records::PresenceRec>> {
        self.read_presences(identity)
    }

    fn leases(&self) -> Result<Vec<parley_forum::storage::records::LeaseRec>> {
        self.read_leases()
    }

    fn lease(&self, id: u64) -> Result<Option<parley_forum::storage::records::LeaseRec>> {
        self.read_lease(id)
    }

    fn artifact(
        &self,
        digest: &[u8; 32],
    ) -> Result<Option<parley_forum::storage::records::ArtifactRec>> {
        self.read_artifact(digest)
    }

    fn has_artifact(&self, digest: &[u8; 32]) -> Result<bool> {
        self.artifact_stored(digest)
    }

    fn imported_claim(&self, realm: &str, claim: &str) -> Result<Option<u64>> {
        self.read_imported(realm, claim)
    }

    fn last_id(&self, kind: IdKind) -> Result<u64> {
        if let Some(known) = self.cache.last_id(kind as usize) {
            return Ok(known);
        }
        let sql = match kind {
            IdKind::Thread => "SELECT coalesce(max(id), 0) FROM threads",
            IdKind::Message => "SELECT coalesce(max(id), 0) FROM messages",
            IdKind::Claim => "SELECT coalesce(max(id), 0) FROM claims",
            IdKind::Event => "SELECT coalesce(max(id), 0) FROM events",
        };
        let row = self
            .with(|c| c.row(sql, &[]))?
            .ok_or_else(|| damaged("id"))?;
        let last = row.get::<_, i64>(0) as u64;
        self.cache.seen.borrow_mut().last_ids[kind as usize] = Some(last);
        Ok(last)
    }

    fn token(&self, key: &[u8]) -> Result<Option<TokenRec>> {
        cached!(self, tokens, key, {
            let row = self.with(|c| c.row("SELECT rec FROM tokens WHERE key = $1", &[&key]))?;
            row.map(|r| decode_json::<TokenRec>(r.get::<_, &[u8]>(0)))
                .transpose()?
        })
    }

    fn identity(&self, identity: &str) -> Result<Option<IdentityRec>> {
        cached!(self, identities, identity, {
            let row =
                self.with(|c| c.row("SELECT rec FROM identities WHERE name = $1", &[&identity]))?;
            row.map(|r| decode_json::<IdentityRec>(r.get::<_, &[u8]>(0)))
                .transpose()?
        })
    }

    fn identities(&self) -> Result<Vec<(String, IdentityRec)>> {
        self.rows("SELECT name, rec FROM identities ORDER BY name", &[])?
            .iter()
            .map(|r| Ok((r.get::<_, String>(0), decode_json(r.get::<_, &[u8]>(1))?)))
            .collect()
    }

    fn thread(&self, id: u64) -> Result<Option<ThreadRec>> {
        cached!(self, threads, &id, {
            self.record("SELECT rec FROM threads WHERE id = $1", big(id))?
                .map(|b| codec::decode_thread(&b))
                .transpose()?
        })
    }

    fn message(&self, id: u64) -> Result<Option<MessageRec>> {
        cached!(self, messages, &id, {
            self.record("SELECT rec FROM messages WHERE id = $1", big(id))?
                .map(|b| codec::decode(&b))
                .transpose()?
        })
    }

    fn thread_messages(&self, thread: u64, expected: usize) -> Result<Vec<MessageRec>> {
        let rows = self.rows(
            "SELECT rec FROM messages WHERE thread = $1 ORDER BY id",
            &[&big(thread)],
        )?;
        let mut out = Vec::with_capacity(expected.min(1 << 16).max(rows.len()));
        for r in &rows {
            out.push(codec::decode(r.get::<_, &[u8]>(0))?);
        }
        Ok(out)
    }

    fn thread_heads(&self, thread: u64, expected: usize) -> Result<Vec<MessageHead>> {
        // Only the front of each record crosses the wire: the bodies stay put.
        let rows = self.rows(
            &format!(
                "SELECT substring(rec FROM 1 FOR {}) FROM messages WHERE thread = $1 ORDER BY id",
                codec::HEAD_BYTES
            ),
            &[&big(thread)],
        )?;
        let mut out = Vec::with_capacity(expected.min(1 << 16).max(rows.len()));
        for r in &rows {
            out.push(codec::head(r.get::<_, &[u8]>(0))?);
        }
        Ok(out)
    }

    fn claim(&self, id: u64) -> Result<Option<ClaimRec>> {
        cached!(self, claims, &id, {
            self.record("SELECT rec FROM claims WHERE id = $1", big(id))?
                .map(|b| decode_json::<ClaimRec>(&b))
                .transpose()?
        })
    }

    fn event(&self, id: u64) -> Result<Option<EventRec>> {
        self.record("SELECT rec FROM events WHERE id = $1", big(id))?
            .map(|b| decode_json(&b))
            .transpose()
    }

    fn writes_since(&self, identity: &str, since: i64) -> Result<Vec<i64>> {
        Ok(self
            .rows(
                "SELECT at FROM writes WHERE identity = $1 AND at >= $2 ORDER BY at",
                &[&identity, &since],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    fn scan_turns(&self, identity: &str, after: u64, visit: Visit<'_>) -> Result<()> {
        self.pages(
            big(after),
            |c, from, limit| {
                c.rows(
                    "SELECT pos, thread FROM turns WHERE identity = $1 AND pos > $2 \
                     ORDER BY pos LIMIT $3",
                    &[&identity, &from, &limit],
                )
            },
            visit,
        )
    }

    fn scan_activity(&self, state: Option<State>, after: u64, visit: Visit<'_>) -> Result<()> {
        match state {
            Some(s) => {
                let code = i16::from(s.code());
                self.pages(
                    big(after),
                    |c, from, limit| {
                        c.rows(
                            "SELECT pos, thread FROM activity WHERE state = $1 AND pos > $2 \
                             ORDER BY pos LIMIT $3",
                            &[&code, &from, &limit],
                        )
                    },
                    visit,
                )
            }
            None => self.pages(
                big(after),
                |c, from, limit| {
                    c.rows(
                        "SELECT pos, thread FROM activity WHERE pos > $1 ORDER BY pos LIMIT $2",
                        &[&from, &limit],
                    )
                },
                visit,
            ),
        }
    }

    fn scan_events(&self, thread: Option<u64>, after: u64, visit: Visit<'_>) -> Result<()> {
        self.feed("events", thread, after, visit)
    }

    fn search_words(&self, words: &[String], before: u64, visit: Visit<'_>) -> Result<()> {
        if words.is_empty() {
            return Ok(());
        }
        // Every word at once (`@>`): GIN intersects the words' posting lists,
        // skipping through the longer ones from the entries of the rarest, so the
        // cost follows the rarest word's matches; the planner may instead walk
        // the messages newest first when the words are common.
        let sql = "SELECT message, thread FROM message_words \
                   WHERE words @> $1::text[] AND message < $2 \
                   ORDER BY message DESC LIMIT $3";
        self.pages(
            big(before),
            |c, from, limit| c.rows(sql, &[&words, &from, &limit]),
            visit,
        )
    }

    fn remembered(&self, identity: &str, key: &str) -> Result<Option<(Remembered, MessageRec)>> {
        let row = self.with(|c| {
            c.row(
                "SELECT message FROM idempotency WHERE identity = $1 AND key = $2",
                &[&identity, &key],
            )
        })?;
        let Some(id) = row.map(|r| r.get::<_, i64>(0) as u64) else {
            return Ok(None);
        };
        let Some(message) = self.message(id)? else {
            return Ok(None);
        };
        Ok(Remembered::of(&message).map(|post| (post, message)))
    }

    fn scan_messages(&self, thread: Option<u64>, after: u64, visit: Visit<'_>) -> Result<()> {
        self.feed("messages", thread, after, visit)
    }
}
