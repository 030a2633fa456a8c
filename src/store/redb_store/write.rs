//! The writes of one transaction, and its commit.

use super::*;
use crate::store::redb_error::OrStorage;

impl WriteTx for Writer<'_> {
    fn put_presence(&mut self, rec: &crate::store::records::PresenceRec) -> Result<()> {
        self.write_presence(rec)
    }

    fn next_lease_id(&mut self) -> Result<u64> {
        self.take_lease_id()
    }

    fn put_lease(&mut self, rec: &crate::store::records::LeaseRec) -> Result<()> {
        self.write_lease(rec)
    }

    fn remove_lease(&mut self, id: u64) -> Result<()> {
        self.delete_lease(id)
    }

    fn put_artifact(
        &mut self,
        digest: &[u8; 32],
        rec: &crate::store::records::ArtifactRec,
    ) -> Result<()> {
        self.write_artifact(digest, rec)
    }

    fn put_imported(&mut self, realm: &str, claim: &str, local: u64) -> Result<()> {
        self.table(IMPORTS)?
            .insert((realm, claim), local)
            .or_storage()?;
        Ok(())
    }

    fn next_id(&mut self, kind: IdKind) -> Result<u64> {
        let k = kind as usize;
        let last = match self.ids[k] {
            Some(last) => last,
            None => {
                let known = self
                    .store
                    .last_ids
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())[k];
                match known {
                    Some(last) => last,
                    None => self.last_id(kind)?,
                }
            }
        };
        self.ids[k] = Some(last + 1);
        Ok(last + 1)
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
        let turn = |a: &Option<Awaiting>| a.as_ref().map(|a| key::turn(&a.identity, a.message));
        let old_turn = before.and_then(|b| turn(&b.awaiting));
        let new_turn = turn(&after.awaiting);
        // Each table is opened once, and only when written: an open costs about as
        // much as an insert.
        if old_turn != new_turn {
            let mut index = self.table(INDEX)?;
            if let Some(k) = &old_turn {
                index.remove(k.as_slice()).or_storage()?;
            }
            if let Some(k) = &new_turn {
                index.insert(k.as_slice(), thread.id).or_storage()?;
            }
        }
        {
            // The thread leaves its list with its first post in the word index's
            // tail, and the tail's merge puts it back (see `activity`).
            let merged = self.merged_mark()?;
            let mut places = self.table(PLACES)?;
            if let Some(b) = before.filter(|b| b.last_message <= merged) {
                activity::remove(&mut places, b.state.code(), b.last_message)?;
            }
            blocks::put(
                &mut places,
                message.id,
                message.thread,
                message.key.is_some(),
            )?;
        }
        let mut messages = self.table(MESSAGES)?;
        messages
            .insert(
                (message.thread, message.id),
                codec::encode(message).as_slice(),
            )
            .or_storage()?;
        messages
            .insert(
                (thread.id, THREAD_RECORD),
                codec::encode_thread(thread).as_slice(),
            )
            .or_storage()?;
        drop(messages);
        // Every stored message is in the tail's words (see `super::super::word_tail`).
        self.words.add(message.id, message.thread, &message.body);
        self.written.insert(thread.id, Arc::clone(thread));
        Ok(())
    }

    fn put_thread(&mut self, thread: &Arc<ThreadRec>) -> Result<()> {
        self.table(MESSAGES)?
            .insert(
                (thread.id, THREAD_RECORD),
                codec::encode_thread(thread).as_slice(),
            )
            .or_storage()?;
        self.written.insert(thread.id, Arc::clone(thread));
        Ok(())
    }

    fn put_claim(&mut self, claim: &ClaimRec) -> Result<()> {
        self.table(CLAIMS)?
            .insert(claim.id, encode(claim)?.as_slice())
            .or_storage()?;
        Ok(())
    }

    fn index_words(&mut self, message: u64) -> Result<()> {
        let merged = self.merged_mark()?;
        if !crate::store::words::due(merged, message) {
            self.words_merged = Some(merged);
            return Ok(());
        }
        // The tail's words from memory, and its idempotency records, which move
        // into the index with its words: both from one look at the store's tail.
        // Should its words follow another mark, the bodies are read from the file,
        // and the next writer loads the tail anew (a snapshot no longer trusts it
        // meanwhile).
        let (held, records) = {
            let tail = lock_tail(&self.store.tail);
            let tail = loaded(&tail)?;
            (
                self.words.merge(&tail.words, merged, message),
                self.keys.merge(&tail.keys, message),
            )
        };
        let by_word = match held {
            Some(by_word) => by_word,
            None => {
                self.store.tail_stale.store(true, Ordering::SeqCst);
                crate::store::words::collect(&self.txn, merged, message)?
            }
        };
        crate::store::words::write(&self.txn, by_word, message)?;
        activity::settle(&self.txn, merged, message)?;
        let mut index = self.txn.open_table(INDEX).or_storage()?;
        for (record, id) in records {
            index_key(
                &mut index,
                &mut self.keys,
                &self.store.key_hasher,
                &record,
                id,
            )?;
        }
        self.words_merged = Some(message);
        Ok(())
    }

    fn remember(&mut self, identity: &str, key: &str, post: &Remembered) -> Result<()> {
        // The digest and time are in the message's record (put by `put_post`). A
        // post of the tail is remembered by the tail until the merge writes its
        // record (see `super::key_tail`); one the merge has passed already (the
        // post that made the merge) goes to the index now. An expired record under
        // the same key is replaced, and its message's entry in the map of keyed
        // posts no longer matches it (see `forget_remembered`).
        let record = key::idempotency(identity, key);
        if post.message > self.merged_mark()? {
            self.keys.add(record, post.message);
        } else {
            let mut index = self.txn.open_table(INDEX).or_storage()?;
            let hasher = &self.store.key_hasher;
            index_key(&mut index, &mut self.keys, hasher, &record, post.message)?;
        }
        Ok(())
    }

    fn forget_remembered(&mut self, before: i64, max: usize) -> Result<Forgot> {
        let merged = self.merged_mark()?;
        let tail = lock_tail(&self.store.tail);
        let tail = loaded(&tail)?;
        let keys = &mut self.keys;
        let mut unindexed = Vec::new();
        let forgot = crate::store::expiry::forget(
            &self.txn,
            before,
            max,
            merged,
            &mut |record, id| keys.forget(&tail.keys, record, id),
            &mut unindexed,
        )?;
        for record in unindexed {
            keys.unindexed(self.store.key_hasher.of(&record));
        }
        Ok(forgot)
    }

    fn put_event(&mut self, event: &EventRec) -> Result<()> {
        self.table(EVENTS)?
            .insert(event.id, encode(event)?.as_slice())
            .or_storage()?;
        self.table(INDEX)?
            .insert(key::thread_event(event.thread, event.id).as_slice(), 0)
            .or_storage()?;
        Ok(())
    }

    fn record_write(
        &mut self,
        identity: &str,
        message: u64,
        at: i64,
        forget_before: i64,
    ) -> Result<()> {
        let mut index = self.table(INDEX)?;
        let (lo, hi) = (key::write(identity, 0), key::write(identity, u64::MAX));
        let stale: Vec<Vec<u8>> = index
            .range(lo.as_slice()..=hi.as_slice())
            .or_storage()?
            .filter_map(|e| e.ok())
            .filter(|(_, v)| (v.value() as i64) < forget_before)
            .map(|(k, _)| k.value().to_vec())
            .collect();
        for k in stale {
            index.remove(k.as_slice()).or_storage()?;
        }
        index
            .insert(key::write(identity, message).as_slice(), at.max(0) as u64)
            .or_storage()?;
        Ok(())
    }

    fn commit_deferred(self: Box<Self>) -> Result<Durable> {
        let Writer {
            txn,
            store,
            db,
            ids,
            written,
            words_merged,
            keys,
            words,
        } = *self;
        // The caches' locks are held from before the commit (which lets the next
        // writer begin) until its records are in, so that writer sees them; a
        // failed commit leaves the caches as they were.
        let mut tail = lock_tail(&store.tail);
        let mut cache = lock_threads(&store.threads);
        if let Err(e) = txn.commit() {
            drop(cache);
            drop(tail);
            if commit_failed_on_io(&e) {
                store.failed(&db);
            }
            return Err(crate::store::redb_error::storage(e));
        }
        for thread in written.into_values() {
            keep_thread(&mut cache, thread);
        }
        drop(cache);
        if let Some(tail) = tail.as_mut() {
            tail.apply(keys);
            words.apply(&mut tail.words);
        }
        drop(tail);
        let mut known = store.last_ids.lock().unwrap_or_else(|p| p.into_inner());
        for (known, handed) in known.iter_mut().zip(ids) {
            if handed.is_some() {
                *known = handed;
            }
        }
        drop(known);
        if words_merged.is_some() {
            *store.words_merged.lock().unwrap_or_else(|p| p.into_inner()) = words_merged;
        }
        // redb's durable commit returned: the commit is on disk.
        Ok(Durable::done())
    }
}

/// Writes the idempotency record `record` → `message` to `INDEX`, and tells the
/// transaction's delta when it added a record where none was (a replaced one
/// keeps its count; see `super::super::tail`).
fn index_key(
    index: &mut redb::Table<'_, &'static [u8], u64>,
    keys: &mut Delta,
    hasher: &KeyHasher,
    record: &[u8],
    message: u64,
) -> Result<()> {
    if index.insert(record, message).or_storage()?.is_none() {
        keys.indexed(hasher.of(record));
    }
    Ok(())
}
