//! The idempotency records of the word index's tail, which a redb store holds in
//! memory (schema version 5).
//!
//! A keyed post's record, `KEY ‖ identity ‖ 0 ‖ key` → message in `INDEX`, lands
//! at a random place of a large index: a post that wrote it rebuilt one more leaf
//! and its branch pages, and committed them (measured in
//! `docs/decisions/0004-redb-file-layout.md`). So a post no longer writes it.
//! The records of the tail's posts (the messages after `words_merged_through`,
//! see `super::words`) are held here, and the post whose transaction merges the
//! tail into the word index writes them too, in key order, in that transaction.
//! Each message record holds its key, so the records are read again from at most
//! one tail of messages when a store opens, or reopens after a failure.
//!
//! What holds, and what the code keeps:
//! - `INDEX` holds the records of merged posts; [`KeyTail`] those of the tail's
//!   posts whose keys the expiry has not passed (`keys_expired_through`).
//! - A writer sees the store's [`Tail`] with its own changes ([`Delta`]); the store
//!   takes them only when the transaction commits, under the tail's lock, which
//!   the writer takes before its commit lets the next writer begin. A reopen never
//!   empties the tail under a writer; it marks it stale for the next one.
//! - A snapshot never waits for that lock. It may meet a tail newer than itself:
//!   it trusts an entry only when its own copy of the message holds that key, and
//!   otherwise reads `INDEX`. It may then miss a key (while a commit holds the
//!   lock, or merged after it began); a snapshot's answer is only a hint (the
//!   post's batch decides, `engine::post::replay_early`).
//!
//! The tail also counts the records `INDEX` holds, by a hash of each
//! ([`MergedKeys`]), so that a writer looks a key up in `INDEX` only when a record
//! of that hash is there: a first try, the common case, then opens no table (the
//! look-up cost a post about a twentieth of its time, measured in
//! `docs/decisions/0004-redb-file-layout.md`). The counts are exact for
//! the committed `INDEX` (loaded with the tail, changed only by committed
//! transactions), so a hash the counts lack is a record `INDEX` lacks; two
//! records of one hash only cost a look-up.

use crate::store::redb_error::OrStorage;
use std::collections::HashMap;
use std::hash::BuildHasher;

use redb::ReadableTable;

use super::blocks;
use super::codec;
use super::expiry::EXPIRED;
use super::tables::{key, INDEX, MESSAGES, META, PLACES};
use super::word_tail::WordTail;
use crate::error::Result;

/// The tail's records as of the last commit, the counts of `INDEX`'s, and the
/// tail's words (`super::word_tail`).
#[derive(Debug, Default)]
pub(super) struct Tail {
    pub(super) keys: KeyTail,
    pub(super) merged: MergedKeys,
    pub(super) words: WordTail,
}

/// How a record is hashed for [`MergedKeys`]: foldhash, seeded once per store
/// (the seed never leaves the process, so a writer cannot aim keys at one hash;
/// a collision would only cost a look-up anyway).
#[derive(Debug, Default)]
pub(super) struct KeyHasher(foldhash::fast::RandomState);

impl KeyHasher {
    pub(super) fn of(&self, record: &[u8]) -> u64 {
        self.0.hash_one(record)
    }
}

/// How many of `INDEX`'s idempotency records have each hash, as committed.
#[derive(Debug, Default)]
pub(super) struct MergedKeys(HashMap<u64, u32, foldhash::fast::RandomState>);

impl MergedKeys {
    /// Whether `INDEX` may hold a record of hash `hash`: `false` means it holds none.
    pub(super) fn may_hold(&self, hash: u64) -> bool {
        self.0.contains_key(&hash)
    }

    fn add(&mut self, hash: u64) {
        *self.0.entry(hash).or_insert(0) += 1;
    }

    fn remove(&mut self, hash: u64) {
        if let Some(n) = self.0.get_mut(&hash) {
            *n -= 1;
            if *n == 0 {
                self.0.remove(&hash);
            }
        }
    }

    /// Counts every idempotency record of `INDEX` as `txn` sees it.
    fn load(txn: &redb::WriteTransaction, hasher: &KeyHasher) -> Result<MergedKeys> {
        let index = txn.open_table(INDEX).or_storage()?;
        let (lo, hi) = key::all_idempotency();
        let mut counts = MergedKeys::default();
        for entry in index.range(lo.as_slice()..hi.as_slice()).or_storage()? {
            let (record, _) = entry.or_storage()?;
            counts.add(hasher.of(record.value()));
        }
        Ok(counts)
    }
}

impl Tail {
    /// The committed tail, read by a write transaction that has written nothing
    /// yet, with `INDEX`'s records counted.
    pub(super) fn load(txn: &redb::WriteTransaction, hasher: &KeyHasher) -> Result<Tail> {
        let merged = super::words::merged_through(&txn.open_table(META).or_storage()?)?;
        let last = blocks::last(&txn.open_table(PLACES).or_storage()?)?;
        Ok(Tail {
            keys: KeyTail::load(txn)?,
            merged: MergedKeys::load(txn, hasher)?,
            words: WordTail::new(merged, super::words::tail_messages(txn, merged, last)?),
        })
    }
}

impl KeyTail {
    /// The committed tail's records. A key used twice names the later post; the
    /// records of posts the expiry has passed are left out.
    fn load(txn: &redb::WriteTransaction) -> Result<KeyTail> {
        let after = {
            let meta = txn.open_table(META).or_storage()?;
            let merged = super::words::merged_through(&meta)?;
            let expired = meta.get(EXPIRED).or_storage()?.map_or(0, |v| v.value());
            merged.max(expired)
        };
        let places = txn.open_table(PLACES).or_storage()?;
        let messages = txn.open_table(MESSAGES).or_storage()?;
        let mut keys = HashMap::new();
        blocks::scan(&places, after, |id, place| {
            if !place.keyed {
                return Ok(true);
            }
            if let Some(record) = messages.get((place.thread, id)).or_storage()? {
                let message = codec::decode(record.value())?;
                if let Some(k) = &message.key {
                    keys.insert(key::idempotency(&message.identity, &k.key), id);
                }
            }
            Ok(true)
        })?;
        Ok(KeyTail(keys))
    }
}

impl Tail {
    /// Versions 3 and 4 wrote every keyed post's record to `INDEX`. Removes the
    /// tail's (the merge writes them again), so that `INDEX` holds exactly the
    /// merged posts' records, as version 5 keeps it.
    pub(super) fn migrate(txn: &redb::WriteTransaction) -> Result<()> {
        let keys = KeyTail::load(txn)?;
        let mut index = txn.open_table(INDEX).or_storage()?;
        for (record, id) in &keys.0 {
            if index
                .get(record.as_slice())
                .or_storage()?
                .map(|v| v.value())
                == Some(*id)
            {
                index.remove(record.as_slice()).or_storage()?;
            }
        }
        Ok(())
    }

    /// Takes a committed transaction's changes.
    pub(super) fn apply(&mut self, keys: Delta) {
        for &hash in &keys.indexed {
            self.merged.add(hash);
        }
        for &hash in &keys.unindexed {
            self.merged.remove(hash);
        }
        keys.apply(&mut self.keys);
    }
}

/// Record key → the message its post made, for the tail's keyed posts.
#[derive(Debug, Default)]
pub(super) struct KeyTail(HashMap<Vec<u8>, u64>);

impl KeyTail {
    pub(super) fn get(&self, record: &[u8]) -> Option<u64> {
        self.0.get(record).copied()
    }
}

/// One write transaction's changes to the map.
#[derive(Debug, Default)]
pub(super) struct Delta {
    added: HashMap<Vec<u8>, u64>,
    /// Records the expiry forgot, with the message each named.
    removed: Vec<(Vec<u8>, u64)>,
    /// The end of the tail this transaction merged into `INDEX`, if it did.
    merged: Option<u64>,
    /// Hashes of the records this transaction added to `INDEX` (not replaced).
    indexed: Vec<u64>,
    /// Hashes of the records this transaction removed from `INDEX`.
    unindexed: Vec<u64>,
}

impl Delta {
    /// Whether `INDEX` may hold a record of hash `hash` as this transaction sees
    /// it: the committed counts, or a record this transaction added. (A record it
    /// removed may still be counted: a look-up then finds nothing.)
    pub(super) fn index_may_hold(&self, merged: &MergedKeys, hash: u64) -> bool {
        merged.may_hold(hash) || self.indexed.contains(&hash)
    }

    /// This transaction added a record of hash `hash` to `INDEX`, where none was.
    pub(super) fn indexed(&mut self, hash: u64) {
        self.indexed.push(hash);
    }

    /// This transaction removed a record of hash `hash` from `INDEX`.
    pub(super) fn unindexed(&mut self, hash: u64) {
        self.unindexed.push(hash);
    }

    /// The message `record` names in the tail as the transaction sees it.
    pub(super) fn get(&self, tail: &KeyTail, record: &[u8]) -> Option<u64> {
        if let Some(id) = self.added.get(record) {
            return Some(*id);
        }
        let id = tail.get(record)?;
        let forgotten = self.removed.iter().any(|(r, i)| *i == id && r == record);
        (!forgotten).then_some(id)
    }

    pub(super) fn add(&mut self, record: Vec<u8>, message: u64) {
        self.added.insert(record, message);
    }

    /// Forgets `record` if it names `message`; whether it did.
    pub(super) fn forget(&mut self, tail: &KeyTail, record: &[u8], message: u64) -> bool {
        if self.get(tail, record) != Some(message) {
            return false;
        }
        self.added.remove(record);
        self.removed.push((record.to_vec(), message));
        true
    }

    /// The records of the tail through message `upto`, in key order, for the merge
    /// to write; from then on the transaction counts them as merged.
    pub(super) fn merge(&mut self, tail: &KeyTail, upto: u64) -> Vec<(Vec<u8>, u64)> {
        let mut records: Vec<(Vec<u8>, u64)> = tail
            .0
            .iter()
            .filter(|(r, _)| !self.added.contains_key(*r))
            .map(|(r, id)| (r.clone(), *id))
            .filter(|(r, id)| self.get(tail, r) == Some(*id))
            .chain(self.added.iter().map(|(r, id)| (r.clone(), *id)))
            .filter(|(_, id)| *id <= upto)
            .collect();
        records.sort_unstable();
        self.merged = Some(upto);
        records
    }

    /// Applies a committed transaction's changes.
    fn apply(self, tail: &mut KeyTail) {
        for (record, message) in &self.removed {
            if tail.get(record) == Some(*message) {
                tail.0.remove(record);
            }
        }
        let merged = self.merged.unwrap_or(0);
        if self.merged.is_some() {
            tail.0.retain(|_, id| *id > merged);
        }
        tail.0
            .extend(self.added.into_iter().filter(|(_, id)| *id > merged));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(entries: &[(&str, u64)]) -> KeyTail {
        KeyTail(
            entries
                .iter()
                .map(|(r, id)| (r.as_bytes().to_vec(), *id))
                .collect(),
        )
    }

    #[test]
    fn a_transaction_sees_its_own_changes_and_the_store_takes_them_on_apply() {
        let mut t = tail(&[("a", 1), ("b", 2)]);
        let mut d = Delta::default();
        d.add(b"c".to_vec(), 3);
        d.add(b"a".to_vec(), 4); // reused after it expired: the later post
        assert!(d.forget(&t, b"b", 2));
        assert!(!d.forget(&t, b"a", 1), "`a` names message 4 now");
        assert_eq!(
            (d.get(&t, b"a"), d.get(&t, b"b"), d.get(&t, b"c")),
            (Some(4), None, Some(3))
        );
        assert_eq!(t.get(b"b"), Some(2), "the store is untouched until apply");
        d.apply(&mut t);
        assert_eq!(
            (t.get(b"a"), t.get(b"b"), t.get(b"c")),
            (Some(4), None, Some(3))
        );
    }

    #[test]
    fn the_counts_of_merged_keys_change_only_with_a_committed_delta() {
        let mut t = Tail::default();
        let mut d = Delta::default();
        d.indexed(7);
        d.indexed(7); // two records of one hash
        d.indexed(9);
        assert!(
            d.index_may_hold(&t.merged, 7),
            "the transaction's own records"
        );
        assert!(!t.merged.may_hold(7), "nothing committed yet");
        t.apply(d);
        let mut d = Delta::default();
        d.unindexed(7);
        d.unindexed(9);
        assert!(d.index_may_hold(&t.merged, 9), "a removal may still look");
        t.apply(d);
        assert!(t.merged.may_hold(7), "one record of hash 7 is left");
        assert!(!t.merged.may_hold(9));
        let mut d = Delta::default();
        d.unindexed(7);
        t.apply(d);
        assert!(!t.merged.may_hold(7));
    }

    #[test]
    fn a_merge_hands_out_the_tail_in_key_order_and_keeps_only_what_follows() {
        let mut t = tail(&[("b", 1), ("d", 2), ("x", 3)]);
        let mut d = Delta::default();
        d.add(b"a".to_vec(), 4);
        assert!(d.forget(&t, b"x", 3));
        assert_eq!(
            d.merge(&t, 4),
            vec![(b"a".to_vec(), 4), (b"b".to_vec(), 1), (b"d".to_vec(), 2)]
        );
        d.add(b"e".to_vec(), 5);
        d.apply(&mut t);
        assert_eq!(t.0.len(), 1);
        assert_eq!(t.get(b"e"), Some(5));
    }
}
