//! The writes of one transaction, and its commit.
//!
//! Writes are queued as statements with literal values (`sql.rs`) and sent in one
//! round trip before the transaction's next read, or together with its commit.

use std::sync::Arc;

use super::read::{big, Tx};
use super::sql::Stmt;
use parley_forum::storage::codec::{self, encode_json};
use parley_forum::storage::distinct_words;
use parley_forum::storage::records::{
    ClaimRec, EventRec, IdentityRec, MessageRec, Remembered, ThreadRec, ThreadSpot, TokenRec,
};
use parley_forum::storage::IdKind;
use parley_forum::storage::{Durable, Forgot, ReadTx, WriteTx};
use parley_forum::Durability;
use parley_forum::Result;

impl Tx<'_> {
    fn writing(&mut self) -> &mut super::read::Writing {
        self.writing
            .as_mut()
            .expect("write methods are reached only through Store::write")
    }

    /// What this transaction read and wrote (`cache.rs`).
    fn seen(&mut self) -> &mut crate::cache::Records {
        self.cache.seen.get_mut()
    }

    /// The statements not sent yet.
    fn queue(&mut self) -> &mut String {
        &mut self.pending.get_mut().sql
    }
}

impl WriteTx for Tx<'_> {
    fn put_presence(&mut self, rec: &parley_forum::storage::records::PresenceRec) -> Result<()> {
        self.write_presence(rec)
    }

    fn next_lease_id(&mut self) -> Result<u64> {
        self.take_lease_id()
    }

    fn put_lease(&mut self, rec: &parley_forum::storage::records::LeaseRec) -> Result<()> {
        self.write_lease(rec)
    }

    fn remove_lease(&mut self, id: u64) -> Result<()> {
        self.delete_lease(id)
    }

    fn put_artifact(
        &mut self,
        digest: &[u8; 32],
        rec: &parley_forum::storage::records::ArtifactRec,
    ) -> Result<()> {
        self.write_artifact(digest, rec)
    }

    fn put_imported(&mut self, realm: &str, claim: &str, local: u64) -> Result<()> {
        self.write_imported(realm, claim, local)
    }

    fn next_id(&mut self, kind: IdKind) -> Result<u64> {
        let k = kind as usize;
        let last = match self.writing().ids[k] {
            Some(last) => last,
            // Read under the forum's lock: no other engine hands out ids now.
            None => self.last_id(kind)?,
        };
        self.writing().ids[k] = Some(last + 1);
        Ok(last + 1)
    }

    fn put_token(&mut self, key: &[u8], token: &TokenRec) -> Result<()> {
        let rec = encode_json(token)?;
        Stmt::new(self.queue(), "INSERT INTO tokens (key, rec) VALUES (")
            .bytes(key)
            .sql(", ")
            .bytes(&rec)
            .sql(") ON CONFLICT (key) DO UPDATE SET rec = excluded.rec")
            .end();
        self.seen().tokens.insert(key.to_vec(), Some(token.clone()));
        self.writing().changed.tokens.push(key.to_vec());
        Ok(())
    }

    fn put_identity(&mut self, identity: &str, rec: &IdentityRec) -> Result<()> {
        let bytes = encode_json(rec)?;
        Stmt::new(self.queue(), "INSERT INTO identities (name, rec) VALUES (")
            .text(identity)
            .sql(", ")
            .bytes(&bytes)
            .sql(") ON CONFLICT (name) DO UPDATE SET rec = excluded.rec")
            .end();
        self.seen()
            .identities
            .insert(identity.to_string(), Some(rec.clone()));
        self.writing().changed.identities.push(identity.to_string());
        Ok(())
    }

    fn put_post(
        &mut self,
        message: &MessageRec,
        thread: &Arc<ThreadRec>,
        before: Option<&ThreadSpot>,
        after: &ThreadSpot,
    ) -> Result<()> {
        let turn = |s: &ThreadSpot| {
            s.awaiting
                .as_ref()
                .map(|a| (a.identity.clone(), big(a.message)))
        };
        let place = |s: &ThreadSpot| (i64::from(s.state.code()), big(s.last_message));
        // Queued as rows, sent with the batch's other posts (`posts.rs`).
        self.pending.get_mut().posts.post(
            (big(message.id), big(message.thread), codec::encode(message)),
            (big(thread.id), codec::encode_thread(thread)),
            (before.and_then(turn), turn(after)),
            (before.map(place), place(after)),
        );
        self.writing().changed.threads.push(thread.id);
        let seen = self.seen();
        seen.messages.insert(message.id, Some(message.clone()));
        seen.threads.insert(thread.id, Some((**thread).clone()));
        Ok(())
    }

    fn put_thread(&mut self, thread: &Arc<ThreadRec>) -> Result<()> {
        // With the batch's other thread records: the last one of a thread wins.
        self.pending
            .get_mut()
            .posts
            .thread(big(thread.id), codec::encode_thread(thread));
        self.writing().changed.threads.push(thread.id);
        self.seen()
            .threads
            .insert(thread.id, Some((**thread).clone()));
        Ok(())
    }

    fn put_claim(&mut self, claim: &ClaimRec) -> Result<()> {
        let rec = encode_json(claim)?;
        Stmt::new(self.queue(), "INSERT INTO claims (id, rec) VALUES (")
            .int(big(claim.id))
            .sql(", ")
            .bytes(&rec)
            .sql(") ON CONFLICT (id) DO UPDATE SET rec = excluded.rec")
            .end();
        self.seen().claims.insert(claim.id, Some(claim.clone()));
        self.writing().changed.claims.push(claim.id);
        Ok(())
    }

    fn put_event(&mut self, event: &EventRec) -> Result<()> {
        let rec = encode_json(event)?;
        Stmt::new(
            self.queue(),
            "INSERT INTO events (id, thread, rec) VALUES (",
        )
        .int(big(event.id))
        .sql(", ")
        .int(big(event.thread))
        .sql(", ")
        .bytes(&rec)
        .sql(")")
        .end();
        Ok(())
    }

    fn index_words(&mut self, message: u64) -> Result<()> {
        // The message was just stored: it is read from what this writer saw.
        let Some(MessageRec { thread, body, .. }) = self.message(message)? else {
            return Ok(());
        };
        let held = distinct_words(&body);
        if held.is_empty() {
            return Ok(());
        }
        self.pending
            .get_mut()
            .posts
            .words(big(message), big(thread), held);
        Ok(())
    }

    fn remember(&mut self, identity: &str, key: &str, post: &Remembered) -> Result<()> {
        Stmt::new(
            self.queue(),
            "INSERT INTO idempotency (identity, key, message, at) VALUES (",
        )
        .text(identity)
        .sql(", ")
        .text(key)
        .sql(", ")
        .int(big(post.message))
        .sql(", ")
        .int(post.at)
        .sql(") ON CONFLICT (identity, key) DO UPDATE SET message = excluded.message, at = excluded.at")
        .end();
        Ok(())
    }

    fn forget_remembered(&mut self, before: i64, max: usize) -> Result<Forgot> {
        let limit = max as i64;
        // The index by age finds the oldest keys without a scan. The count is
        // needed now: this one runs at once.
        let forgotten = self.with(|c| {
            c.exec(
                "DELETE FROM idempotency WHERE (identity, key) IN \
                 (SELECT identity, key FROM idempotency WHERE at < $1 ORDER BY at LIMIT $2)",
                &[&before, &limit],
            )
        })? as usize;
        Ok(Forgot {
            keys: forgotten,
            more: forgotten == max,
        })
    }

    fn record_write(
        &mut self,
        identity: &str,
        message: u64,
        at: i64,
        forget_before: i64,
    ) -> Result<()> {
        let q = self.queue();
        Stmt::new(q, "DELETE FROM writes WHERE identity = ")
            .text(identity)
            .sql(" AND at < ")
            .int(forget_before)
            .end();
        Stmt::new(q, "INSERT INTO writes (identity, message, at) VALUES (")
            .text(identity)
            .sql(", ")
            .int(big(message))
            .sql(", ")
            .int(at.max(0))
            .sql(")")
            .end();
        Ok(())
    }

    fn commit_deferred(mut self: Box<Self>) -> Result<Durable> {
        let notify = std::mem::take(&mut self.writing().notify);
        let pool = std::sync::Arc::clone(&self.writing().pool);
        // The ids handed out are the last ones now.
        let handed = self.writing().ids;
        for (known, handed) in self.seen().last_ids.iter_mut().zip(handed) {
            if handed.is_some() {
                *known = handed;
            }
        }
        // What other engines' caches must forget (`begin.rs`), with the last ids.
        for kind in [
            IdKind::Thread,
            IdKind::Message,
            IdKind::Claim,
            IdKind::Event,
        ] {
            self.writing().changed.last_ids[kind as usize] = self.last_id(kind)?;
        }
        let change = serde_json::to_string(&self.writing().changed)
            .map_err(|e| parley_forum::Error::storage(format!("a change record: {e}")))?;
        let generation = self.cache.generation() + 1;
        // The last writes and the commit go in one round trip, with the forum's
        // generation one on (`cache.rs`).
        let mut batch = self.pending.get_mut().take();
        batch.push_str("UPDATE parley_meta SET value = value + 1 WHERE key = 'generation';\n");
        Stmt::new(&mut batch, "INSERT INTO changes (generation, rec) VALUES (")
            .int(generation)
            .sql(", ")
            .text(&change)
            .sql(")")
            .end();
        // Old records go in bulk, one statement in so many commits.
        if generation % super::begin::CHANGES_PRUNED_EVERY == 0 {
            Stmt::new(&mut batch, "DELETE FROM changes WHERE generation <= ")
                .int(generation - super::begin::CHANGES_KEPT)
                .end();
        }
        self.ended = true;
        let durable = match pool.target.durability {
            Durability::Volatile => {
                batch.push_str(&notify);
                batch.push_str(";\nCOMMIT");
                Durable::done()
            }
            // The commit returns before its WAL is flushed, and with it the forum's
            // lock: the next batch (of any engine) writes while this one reaches the
            // disk. It is durable once a later synchronous commit has returned: WAL
            // is flushed in order, so that commit's flush holds this one's record.
            Durability::Durable => {
                batch.push_str("SET LOCAL synchronous_commit TO off;\nCOMMIT");
                let pool = std::sync::Arc::clone(&pool);
                Durable::when(move || flushed(&pool, &notify))
            }
        };
        if let Err(e) = self.with(|c| c.batch(&batch)) {
            // Committed or not, the cache no longer knows.
            super::cache::invalidate(&pool.cache);
            return Err(e);
        }
        let view = std::mem::replace(&mut self.cache, super::cache::View::detached());
        view.committed();
        Ok(durable)
    }
}

/// Returns once every commit made before the call is on disk: a transaction that
/// takes an id commits synchronously (its commit record is flushed, and every
/// record before it). It also sends the commit's notification, so other engines
/// wake for durable commits only.
///
/// `synchronous_commit` is forced on for that transaction: a role or database
/// set to `off` would otherwise make this commit return before the flush, and
/// posts would be acknowledged that a crash of the server's host loses.
fn flushed(pool: &super::conn::Pool, notify: &str) -> Result<()> {
    let mut pooled = pool.take()?;
    let sent = pooled.get().batch(&format!(
        "BEGIN; SET LOCAL synchronous_commit TO on; SELECT txid_current(); {notify}; COMMIT"
    ));
    if sent.is_err() {
        pooled.discard();
    }
    sent
}
