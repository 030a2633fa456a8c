//! The writes of one transaction, and its commit.

use std::sync::Arc;

use super::read::{big, Tx};
use crate::error::Result;
use crate::protocol::ids::IdKind;
use crate::protocol::words;
use crate::store::codec::{self, encode_json};
use crate::store::records::{
    ClaimRec, EventRec, IdentityRec, MessageRec, Remembered, ThreadRec, ThreadSpot, TokenRec,
};
use crate::store::{Durable, Forgot, ReadTx, WriteTx};

impl Tx<'_> {
    fn writing(&mut self) -> &mut super::read::Writing {
        self.writing
            .as_mut()
            .expect("write methods are reached only through Store::write")
    }
}

impl WriteTx for Tx<'_> {
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
        self.with(|c| {
            c.exec(
                "INSERT INTO tokens (key, rec) VALUES ($1, $2) \
                 ON CONFLICT (key) DO UPDATE SET rec = excluded.rec",
                &[&key, &rec],
            )
        })?;
        Ok(())
    }

    fn put_identity(&mut self, identity: &str, rec: &IdentityRec) -> Result<()> {
        let rec = encode_json(rec)?;
        self.with(|c| {
            c.exec(
                "INSERT INTO identities (name, rec) VALUES ($1, $2) \
                 ON CONFLICT (name) DO UPDATE SET rec = excluded.rec",
                &[&identity, &rec],
            )
        })?;
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
        let old_turn = before.and_then(turn);
        let new_turn = turn(after);
        let id = big(thread.id);
        let (msg, body, rec) = (
            codec::encode(message),
            message.body.clone(),
            codec::encode_thread(thread),
        );
        self.with(|c| {
            if old_turn != new_turn {
                if let Some((who, pos)) = &old_turn {
                    c.exec(
                        "DELETE FROM turns WHERE identity = $1 AND pos = $2",
                        &[who, pos],
                    )?;
                }
                if let Some((who, pos)) = &new_turn {
                    c.exec(
                        "INSERT INTO turns (identity, pos, thread) VALUES ($1, $2, $3)",
                        &[who, pos, &id],
                    )?;
                }
            }
            if let Some(b) = before {
                c.exec(
                    "DELETE FROM activity WHERE state = $1 AND pos = $2",
                    &[&i16::from(b.state.code()), &big(b.last_message)],
                )?;
            }
            c.exec(
                "INSERT INTO activity (state, pos, thread) VALUES ($1, $2, $3)",
                &[
                    &i16::from(after.state.code()),
                    &big(after.last_message),
                    &id,
                ],
            )?;
            c.exec(
                "INSERT INTO messages (id, thread, rec) VALUES ($1, $2, $3)",
                &[&big(message.id), &big(message.thread), &msg],
            )?;
            c.exec(
                "INSERT INTO threads (id, rec) VALUES ($1, $2) \
                 ON CONFLICT (id) DO UPDATE SET rec = excluded.rec",
                &[&id, &rec],
            )
        })?;
        self.writing().posted = Some((message.id, message.thread, body));
        Ok(())
    }

    fn put_claim(&mut self, claim: &ClaimRec) -> Result<()> {
        let rec = encode_json(claim)?;
        self.with(|c| {
            c.exec(
                "INSERT INTO claims (id, rec) VALUES ($1, $2) \
                 ON CONFLICT (id) DO UPDATE SET rec = excluded.rec",
                &[&big(claim.id), &rec],
            )
        })?;
        Ok(())
    }

    fn put_event(&mut self, event: &EventRec) -> Result<()> {
        let rec = encode_json(event)?;
        self.with(|c| {
            c.exec(
                "INSERT INTO events (id, thread, rec) VALUES ($1, $2, $3)",
                &[&big(event.id), &big(event.thread), &rec],
            )
        })?;
        Ok(())
    }

    fn index_words(&mut self, message: u64) -> Result<()> {
        let (thread, body) = match self.writing().posted.take() {
            Some((id, thread, body)) if id == message => (thread, body),
            _ => match self.message(message)? {
                Some(m) => (m.thread, m.body),
                None => return Ok(()),
            },
        };
        let held = words::distinct(&body);
        if held.is_empty() {
            return Ok(());
        }
        // One statement for all the words of the body.
        self.with(|c| {
            c.exec(
                "INSERT INTO words (word, message, thread) \
                 SELECT unnest($1::text[]), $2, $3",
                &[&held, &big(message), &big(thread)],
            )
        })?;
        Ok(())
    }

    fn remember(&mut self, identity: &str, key: &str, post: &Remembered) -> Result<()> {
        self.with(|c| {
            c.exec(
                "INSERT INTO idempotency (identity, key, message, at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (identity, key) DO UPDATE \
                 SET message = excluded.message, at = excluded.at",
                &[&identity, &key, &big(post.message), &post.at],
            )
        })?;
        Ok(())
    }

    fn forget_remembered(&mut self, before: i64, max: usize) -> Result<Forgot> {
        let limit = max as i64;
        // The index by age finds the oldest keys without a scan.
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
        self.with(|c| {
            c.exec(
                "DELETE FROM writes WHERE identity = $1 AND at < $2",
                &[&identity, &forget_before],
            )?;
            c.exec(
                "INSERT INTO writes (identity, message, at) VALUES ($1, $2, $3)",
                &[&identity, &big(message), &at.max(0)],
            )
        })?;
        Ok(())
    }

    fn commit_deferred(mut self: Box<Self>) -> Result<Durable> {
        let notify = std::mem::take(&mut self.writing().notify);
        // The notification is sent by the commit itself, so every engine hears of
        // exactly the commits that happened. With synchronous_commit on (the
        // default), COMMIT returns once the commit is in the server's WAL on disk.
        self.ended = true;
        self.with(|c| c.batch(&format!("{notify}; COMMIT")))?;
        Ok(Durable::done())
    }
}
