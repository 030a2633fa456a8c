//! The writes of one transaction, and its commit: each record and each index
//! entry goes to its own table, in the post's transaction.

use std::sync::Arc;

use redb::ReadableTable;

use super::open::OrStorage;
use super::tables::*;
use super::{keys, words, Writer};
use crate::error::{Error, Result};
use crate::protocol::ids::IdKind;
use crate::store::codec::{self, encode_json as encode};
use crate::store::records::{
    ArtifactRec, Awaiting, ClaimRec, EventRec, IdentityRec, LeaseRec, MessageRec, PresenceRec,
    Remembered, ThreadRec, ThreadSpot, TokenRec,
};
use crate::store::{Durable, Forgot, WriteTx};

impl WriteTx for Writer<'_> {
    fn next_id(&mut self, kind: IdKind) -> Result<u64> {
        self.next_of(kind)
    }

    fn put_token(&mut self, key: &[u8], token: &TokenRec) -> Result<()> {
        self.table(TOKENS)?
            .insert(key, encode(token)?.as_slice())
            .or_storage()?;
        Ok(())
    }

    fn put_identity(&mut self, identity: &str, rec: &IdentityRec) -> Result<()> {
        self.table(IDENTITIES)?
            .insert(identity, encode(rec)?.as_slice())
            .or_storage()?;
        Ok(())
    }

    fn put_post(
        &mut self,
        message: &MessageRec,
        thread: &Arc<ThreadRec>,
        before: Option<&ThreadSpot>,
        after: &ThreadSpot,
    ) -> Result<()> {
        self.table(MESSAGES)?
            .insert(
                (message.thread, message.id),
                codec::encode(message).as_slice(),
            )
            .or_storage()?;
        self.table(MESSAGE_THREADS)?
            .insert(message.id, message.thread)
            .or_storage()?;
        self.table(THREADS)?
            .insert(thread.id, codec::encode_thread(thread).as_slice())
            .or_storage()?;
        // The thread list: the thread's old bump goes, its new one is appended.
        let mut activity = self.table(ACTIVITY)?;
        if let Some(b) = before {
            activity
                .remove((b.state.code(), b.last_message))
                .or_storage()?;
        }
        activity
            .insert((after.state.code(), after.last_message), thread.id)
            .or_storage()?;
        drop(activity);
        let turn = |a: &Option<Awaiting>| a.as_ref().map(|a| (a.identity.clone(), a.message));
        let (old, new) = (
            before.and_then(|b| turn(&b.awaiting)),
            turn(&after.awaiting),
        );
        if old != new {
            let mut turns = self.table(TURNS)?;
            if let Some((identity, pos)) = &old {
                turns.remove((identity.as_str(), *pos)).or_storage()?;
            }
            if let Some((identity, pos)) = &new {
                turns
                    .insert((identity.as_str(), *pos), thread.id)
                    .or_storage()?;
            }
        }
        Ok(())
    }

    fn put_thread(&mut self, thread: &Arc<ThreadRec>) -> Result<()> {
        self.table(THREADS)?
            .insert(thread.id, codec::encode_thread(thread).as_slice())
            .or_storage()?;
        Ok(())
    }

    fn put_claim(&mut self, claim: &ClaimRec) -> Result<()> {
        self.table(CLAIMS)?
            .insert(claim.id, encode(claim)?.as_slice())
            .or_storage()?;
        Ok(())
    }

    fn put_event(&mut self, event: &EventRec) -> Result<()> {
        self.table(EVENTS)?
            .insert(event.id, encode(event)?.as_slice())
            .or_storage()?;
        self.table(THREAD_EVENTS)?
            .insert((event.thread, event.id), ())
            .or_storage()?;
        Ok(())
    }

    fn index_words(&mut self, message: u64) -> Result<()> {
        let thread = self
            .table(MESSAGE_THREADS)?
            .get(message)
            .or_storage()?
            .map(|v| v.value())
            .ok_or_else(|| Error::Internal(format!("index_words: no message {message}")))?;
        let messages = self.table(MESSAGES)?;
        let record = messages
            .get((thread, message))
            .or_storage()?
            .ok_or_else(|| Error::Internal(format!("index_words: no message {message}")))?;
        let body = codec::body(record.value())?.to_owned();
        drop(record);
        drop(messages);
        words::index(&self.txn, message, thread, &body)
    }

    fn remember(&mut self, identity: &str, key: &str, post: &Remembered) -> Result<()> {
        keys::put(&self.txn, identity, key, post.message, post.at)
    }

    fn forget_remembered(&mut self, before: i64, max: usize) -> Result<Forgot> {
        keys::forget(&self.txn, before, max)
    }

    fn record_write(
        &mut self,
        identity: &str,
        message: u64,
        at: i64,
        forget_before: i64,
    ) -> Result<()> {
        let mut writes = self.table(WRITES)?;
        let stale: Vec<u64> = writes
            .range((identity, 0)..=(identity, u64::MAX))
            .or_storage()?
            .filter_map(|e| e.ok())
            .filter(|(_, v)| v.value() < forget_before)
            .map(|(k, _)| k.value().1)
            .collect();
        for m in stale {
            writes.remove((identity, m)).or_storage()?;
        }
        writes.insert((identity, message), at).or_storage()?;
        Ok(())
    }

    fn put_presence(&mut self, rec: &PresenceRec) -> Result<()> {
        self.write_presence(rec)
    }

    fn next_lease_id(&mut self) -> Result<u64> {
        self.take_lease_id()
    }

    fn put_lease(&mut self, rec: &LeaseRec) -> Result<()> {
        self.write_lease(rec)
    }

    fn remove_lease(&mut self, id: u64) -> Result<()> {
        self.delete_lease(id)
    }

    fn put_artifact(&mut self, digest: &[u8; 32], rec: &ArtifactRec) -> Result<()> {
        self.write_artifact(digest, rec)
    }

    fn put_imported(&mut self, realm: &str, claim: &str, local: u64) -> Result<()> {
        self.table(IMPORTS)?
            .insert((realm, claim), local)
            .or_storage()?;
        Ok(())
    }

    fn commit_deferred(self: Box<Self>) -> Result<Durable> {
        (*self).commit_now()
    }
}
