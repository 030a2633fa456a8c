//! The thread list of `get_threads` (schema versions 5 and 6): per state, each
//! thread at the position of its latest message, kept in blocks.
//!
//! A block is one value of [`PLACES`] at `(state code, position / PER_BLOCK)`:
//! the entries of its range of positions, in order, each a slot (the position's
//! offset in the block, one byte) and a thread id (8 bytes, little-endian). A
//! block that loses its last entry is removed.
//!
//! Every post moves its thread to the end of the list. As one entry per thread in
//! `INDEX` (about 20 bytes), that rewrote a leaf of about two hundred entries,
//! which redb rebuilds entry by entry. A leaf holds a few blocks, so a move
//! rewrites one or two small values in a leaf of a few (measured in
//! `docs/decisions/0004-redb-file-layout.md`).
//!
//! From version 6 the lists hold only the threads whose latest message is at or
//! before the word index's merged mark (`words_merged_through`, see
//! `super::words`). A thread posted to in the index's tail, the at most
//! [`super::words::MERGE_AT`] newest messages, leaves its list with its first
//! post there, and the merge of the tail puts every such thread back at its
//! latest message ([`settle`]). So the lists' positions all lie at or before the
//! mark and the tail's threads all after it: a read takes the lists, then the
//! tail's threads from the message map ([`tail_threads`]), in position order
//! with no interleaving. A post then writes the newest map block and no block of
//! the lists, and a thread's first post in the tail still takes its old entry out
//! (measured in `docs/decisions/0004-redb-file-layout.md`).

use crate::store::redb_error::OrStorage;
use redb::{ReadableDatabase, ReadableTable};

use super::blocks;
use super::codec;
use super::redb_open::{in_steps, Db};
use super::tables::{key, INDEX, MESSAGES, META, PLACES, THREAD_RECORD};
use crate::config::Progress;
use crate::error::{Error, Result};
use crate::protocol::state::State;

/// Positions a block covers.
const PER_BLOCK: u64 = 64;
/// Bytes of one entry: the slot and the thread.
const ENTRY: usize = 9;

fn damaged() -> Error {
    Error::storage("a block of the thread list is unreadable".into())
}

/// The `(slot, thread)` entries of a block, refusing a damaged one.
fn entries(block: &[u8]) -> Result<Vec<(u8, u64)>> {
    if !block.len().is_multiple_of(ENTRY) || block.len() > PER_BLOCK as usize * ENTRY {
        return Err(damaged());
    }
    let mut out = Vec::with_capacity(block.len() / ENTRY);
    for entry in block.chunks_exact(ENTRY) {
        let slot = entry[0];
        let thread = u64::from_le_bytes(entry[1..].try_into().map_err(|_| damaged())?);
        if u64::from(slot) >= PER_BLOCK || out.last().is_some_and(|&(s, _)| s >= slot) {
            return Err(damaged());
        }
        out.push((slot, thread));
    }
    Ok(out)
}

fn encode(entries: &[(u8, u64)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * ENTRY);
    for &(slot, thread) in entries {
        out.push(slot);
        out.extend_from_slice(&thread.to_le_bytes());
    }
    out
}

/// Refuses a damaged block (the offline check).
pub(super) fn check(block: &[u8]) -> Result<()> {
    entries(block).map(|_| ())
}

fn place(pos: u64) -> (u64, u8) {
    (pos / PER_BLOCK, (pos % PER_BLOCK) as u8)
}

/// The entries of block `block` of the list of `state` (none when it is absent).
fn held(
    table: &redb::Table<'_, (u8, u64), &'static [u8]>,
    state: u8,
    block: u64,
) -> Result<Vec<(u8, u64)>> {
    match table.get((state, block)).or_storage()? {
        Some(v) => entries(v.value()),
        None => Ok(Vec::new()),
    }
}

/// Puts `thread` at `slot` of a block's entries, in place of whatever sat there.
fn set(held: &mut Vec<(u8, u64)>, slot: u8, thread: u64) {
    match held.binary_search_by_key(&slot, |&(s, _)| s) {
        Ok(i) => held[i].1 = thread,
        Err(i) => held.insert(i, (slot, thread)),
    }
}

/// Writes block `block` of the list of `state` back, or removes it when it holds
/// no entry.
fn store(
    table: &mut redb::Table<'_, (u8, u64), &'static [u8]>,
    state: u8,
    block: u64,
    held: &[(u8, u64)],
) -> Result<()> {
    if held.is_empty() {
        table.remove((state, block)).or_storage()?;
    } else {
        table
            .insert((state, block), encode(held).as_slice())
            .or_storage()?;
    }
    Ok(())
}

/// Puts `thread` at `pos` in the list of `state`.
pub(super) fn put(
    table: &mut redb::Table<'_, (u8, u64), &'static [u8]>,
    state: u8,
    pos: u64,
    thread: u64,
) -> Result<()> {
    let (block, slot) = place(pos);
    let mut held = held(table, state, block)?;
    set(&mut held, slot, thread);
    store(table, state, block, &held)
}

/// Takes whatever thread sits at `pos` out of the list of `state`.
pub(super) fn remove(
    table: &mut redb::Table<'_, (u8, u64), &'static [u8]>,
    state: u8,
    pos: u64,
) -> Result<()> {
    let (block, slot) = place(pos);
    let mut held = held(table, state, block)?;
    let Ok(i) = held.binary_search_by_key(&slot, |&(s, _)| s) else {
        return Ok(());
    };
    held.remove(i);
    store(table, state, block, &held)
}

/// The threads of the messages after `after` (in the word index's tail when
/// `after` is at or past its mark), each at its latest message there, as
/// `(position, thread)` in position order.
pub(super) fn tail_threads(
    places: &impl ReadableTable<(u8, u64), &'static [u8]>,
    after: u64,
) -> Result<Vec<(u64, u64)>> {
    let mut latest = std::collections::HashMap::new();
    blocks::scan(places, after, |id, place| {
        // In id order: the last one seen is the thread's latest message.
        latest.insert(place.thread, id);
        Ok(true)
    })?;
    let mut out: Vec<(u64, u64)> = latest.into_iter().map(|(t, id)| (id, t)).collect();
    out.sort_unstable();
    Ok(out)
}

/// Puts the threads of the tail `(after, upto]`, which the merge of the word index
/// has just passed, into their lists at their latest messages (see the module
/// docs), writing each block once.
pub(super) fn settle(txn: &redb::WriteTransaction, after: u64, upto: u64) -> Result<()> {
    let mut adds: std::collections::BTreeMap<(u8, u64), Vec<(u8, u64)>> = Default::default();
    {
        let places = txn.open_table(PLACES).or_storage()?;
        let messages = txn.open_table(MESSAGES).or_storage()?;
        for (pos, thread) in tail_threads(&places, after)? {
            if pos > upto {
                // Only a later post of this transaction can be past `upto`; it
                // is not merged, and its thread stays in the tail.
                continue;
            }
            // The position is the thread's latest message (see `tail_threads`);
            // its record gives only the list to join.
            let Some(rec) = messages.get((thread, THREAD_RECORD)).or_storage()? else {
                continue;
            };
            let rec = codec::decode_thread(rec.value())?;
            let (block, slot) = place(pos);
            adds.entry((rec.state.code(), block))
                .or_default()
                .push((slot, thread));
        }
    }
    let mut table = txn.open_table(PLACES).or_storage()?;
    for ((state, block), add) in adds {
        let mut held = held(&table, state, block)?;
        for (slot, thread) in add {
            set(&mut held, slot, thread);
        }
        store(&mut table, state, block, &held)?;
    }
    Ok(())
}

/// Takes the tail's threads out of the lists of a version-5 file, which kept every
/// thread there, and makes it version 6 (see the module docs). One transaction:
/// the tail is at most [`super::words::MERGE_AT`] messages.
pub(super) fn leave_tail(db: &Db) -> Result<()> {
    let txn = db.begin_write().or_storage()?;
    {
        let meta = txn.open_table(META).or_storage()?;
        if meta.get("schema_version").or_storage()?.map(|v| v.value()) != Some(5) {
            return Ok(());
        }
        let merged = super::words::merged_through(&meta)?;
        drop(meta);
        let mut table = txn.open_table(PLACES).or_storage()?;
        let first = merged.saturating_add(1) / PER_BLOCK;
        for state in State::FORWARD.into_iter().chain(State::SIDE) {
            let state = state.code();
            let found = table
                .range((state, first)..=(state, u64::MAX))
                .or_storage()?
                .map(|e| e.map(|(k, v)| (k.value().1, v.value().to_vec())))
                .collect::<std::result::Result<Vec<_>, _>>()
                .or_storage()?;
            for (block, bytes) in found {
                let base = block.checked_mul(PER_BLOCK).ok_or_else(damaged)?;
                let mut held = entries(&bytes)?;
                held.retain(|&(slot, _)| base + u64::from(slot) <= merged);
                store(&mut table, state, block, &held)?;
            }
        }
    }
    txn.open_table(META)
        .or_storage()?
        .insert("schema_version", 6)
        .or_storage()?;
    txn.commit().or_storage()?;
    Ok(())
}

/// The list of one state after a position, in position order.
pub(super) struct Cursor<'t> {
    range: redb::Range<'t, (u8, u64), &'static [u8]>,
    after: u64,
    /// The `(position, thread)` entries of the block being read, and the next one.
    block: Vec<(u64, u64)>,
    at: usize,
}

impl<'t> Cursor<'t> {
    pub(super) fn new(
        table: &'t impl ReadableTable<(u8, u64), &'static [u8]>,
        state: u8,
        after: u64,
    ) -> Result<Cursor<'t>> {
        let first = after.saturating_add(1) / PER_BLOCK;
        Ok(Cursor {
            range: table
                .range((state, first)..=(state, u64::MAX))
                .or_storage()?,
            after,
            block: Vec::new(),
            at: 0,
        })
    }

    /// The next `(position, thread)`, if any.
    pub(super) fn next(&mut self) -> Result<Option<(u64, u64)>> {
        loop {
            if let Some(&entry) = self.block.get(self.at) {
                self.at += 1;
                if entry.0 > self.after {
                    return Ok(Some(entry));
                }
                continue;
            }
            let Some(item) = self.range.next() else {
                return Ok(None);
            };
            let (k, v) = item.or_storage()?;
            let base = k.value().1.checked_mul(PER_BLOCK).ok_or_else(damaged)?;
            self.block = entries(v.value())?
                .into_iter()
                .map(|(slot, thread)| (base + u64::from(slot), thread))
                .collect();
            self.at = 0;
        }
    }
}

/// `INDEX` entries one migration step moves.
const PER_STEP: usize = 20_000;

/// Moves the thread list of a file written before version 5 (one `INDEX` entry
/// per thread, `ACTIVITY ‖ state ‖ position` → thread) into blocks, in steps of
/// [`PER_STEP`] entries, each its own transaction that writes the blocks and
/// deletes the entries it moved: a crash resumes where the last step ended.
pub(super) fn migrate(db: &Db, progress: Option<&Progress>) -> Result<()> {
    let (lo, hi) = key::all_activity();
    let total = {
        let txn = db.begin_read().or_storage()?;
        let index = txn.open_table(INDEX).or_storage()?;
        index
            .range(lo.as_slice()..hi.as_slice())
            .or_storage()?
            .count() as u64
    };
    in_steps(db, progress, "moving the thread list", total, |txn| {
        let moved = txn
            .open_table(INDEX)
            .or_storage()?
            .range(lo.as_slice()..hi.as_slice())
            .or_storage()?
            .take(PER_STEP)
            .map(|e| e.map(|(k, v)| (k.value().to_vec(), v.value())))
            .collect::<std::result::Result<Vec<_>, _>>()
            .or_storage()?;
        let mut list = txn.open_table(PLACES).or_storage()?;
        let mut index = txn.open_table(INDEX).or_storage()?;
        for (k, thread) in &moved {
            let (state, pos) = key::split_activity(k).ok_or_else(damaged)?;
            put(&mut list, state, pos, *thread)?;
            index.remove(k.as_slice()).or_storage()?;
        }
        Ok(moved.len())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_round_trip_and_damage_is_refused() {
        let held = [(0u8, 7u64), (5, 1 << 40), (63, 2)];
        assert_eq!(entries(&encode(&held)).unwrap(), held.to_vec());
        assert!(entries(&[0u8; 8]).is_err(), "a cut entry");
        assert!(entries(&encode(&[(64, 1)])).is_err(), "a slot out of range");
        assert!(
            entries(&encode(&[(3, 1), (3, 2)])).is_err(),
            "slots out of order"
        );
        assert!(entries(&vec![0u8; (PER_BLOCK as usize + 1) * ENTRY]).is_err());
    }

    #[test]
    fn a_version_5_file_loses_the_entries_of_its_tail_and_only_those() {
        let db = Db::new(
            redb::Database::builder()
                .create_with_backend(redb::backends::InMemoryBackend::new())
                .unwrap(),
        );
        let txn = db.begin_write().unwrap();
        {
            let mut meta = txn.open_table(META).unwrap();
            meta.insert("schema_version", 5).unwrap();
            meta.insert(super::super::words::MERGED, 100).unwrap();
            let mut t = txn.open_table(PLACES).unwrap();
            for (state, pos, thread) in [(0, 50, 1), (0, 100, 2), (0, 101, 3), (1, 90, 4)] {
                put(&mut t, state, pos, thread).unwrap();
            }
            put(&mut t, 6, 130, 5).unwrap();
            put(&mut t, 1, 200, 6).unwrap();
        }
        txn.commit().unwrap();
        leave_tail(&db).unwrap();
        let list = |state| {
            let txn = db.begin_read().unwrap();
            let t = txn.open_table(PLACES).unwrap();
            let mut c = Cursor::new(&t, state, 0).unwrap();
            let mut all = Vec::new();
            while let Some(e) = c.next().unwrap() {
                all.push(e);
            }
            all
        };
        assert_eq!(list(0), [(50, 1), (100, 2)], "up to the mark, kept");
        assert_eq!(list(1), [(90, 4)]);
        assert_eq!(list(6), [], "an emptied block is gone");
        let version = |db: &Db| {
            let txn = db.begin_read().unwrap();
            let meta = txn.open_table(META).unwrap();
            meta.get("schema_version").unwrap().unwrap().value()
        };
        assert_eq!(version(&db), 6);
        // A version-6 file is left as it is.
        let txn = db.begin_write().unwrap();
        put(&mut txn.open_table(PLACES).unwrap(), 0, 150, 7).unwrap();
        txn.commit().unwrap();
        leave_tail(&db).unwrap();
        assert_eq!(list(0), [(50, 1), (100, 2), (150, 7)]);
    }

    #[test]
    fn moves_and_scans_give_the_list_in_position_order() {
        let db = redb::Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(PLACES).unwrap();
            for (pos, thread) in [(5, 1), (70, 2), (64, 3), (200, 4), (6, 5)] {
                put(&mut t, 1, pos, thread).unwrap();
            }
            put(&mut t, 2, 65, 9).unwrap();
            remove(&mut t, 1, 6).unwrap();
            remove(&mut t, 1, 200).unwrap();
            remove(&mut t, 1, 999).unwrap();
            assert!(t.get((1, 3)).unwrap().is_none(), "an emptied block is gone");
            let mut all = Vec::new();
            let mut c = Cursor::new(&t, 1, 5).unwrap();
            while let Some(e) = c.next().unwrap() {
                all.push(e);
            }
            assert_eq!(all, [(64, 3), (70, 2)], "after position 5, state 1 only");
        }
        txn.commit().unwrap();
    }
}
