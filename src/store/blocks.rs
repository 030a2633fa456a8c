//! Which thread each message is in, by message id: the map a post must extend and
//! a read by id must consult, kept in blocks of [`PER_BLOCK`] ids.
//!
//! A block is one value of `PLACES` at `(MAP, id / PER_BLOCK)`: a `u64`
//! (little-endian) per id of its range, up to the last one stored, holding the
//! thread's id with [`KEYED`] set when the post was made under an idempotency key
//! (the expiry of keys walks only those), or 0 for an id that no message holds.
//!
//! One entry per message in a small-entry index made a post rebuild one more
//! leaf of about two hundred entries, with its branch pages; extending a block
//! rewrites one value in a leaf of a few. Version 4 kept the blocks in
//! `MESSAGES` (thread 0); they moved to the small table a post writes anyway,
//! which spares a post the branch pages of one more path of the large one
//! (measured in `docs/decisions/0004-redb-file-layout.md`).

use crate::store::redb_error::OrStorage;
use redb::{ReadableDatabase, ReadableTable};

use super::redb_open::{in_steps, Db};
use super::tables::{MESSAGES, PLACES};
use crate::config::Progress;
use crate::error::{Error, Result};

/// The slot of `PLACES` that holds the blocks (the thread lists use the state
/// codes, 0 to 6).
pub(super) const MAP: u8 = u8::MAX;
/// The thread slot of `MESSAGES` that held the blocks up to version 4.
const V4_SLOT: u64 = 0;
/// Ids a block covers.
const PER_BLOCK: u64 = 64;
/// Set on the entry of a message posted under an idempotency key.
const KEYED: u64 = 1 << 63;

/// A message's place: its thread, and whether its post was keyed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Place {
    pub thread: u64,
    pub keyed: bool,
}

fn damaged() -> Error {
    Error::storage("a block of the message map is unreadable".into())
}

fn entry(block: &[u8], slot: usize) -> Result<Option<Place>> {
    let Some(bytes) = block.get(slot * 8..slot * 8 + 8) else {
        return Ok(None);
    };
    let raw = u64::from_le_bytes(bytes.try_into().map_err(|_| damaged())?);
    Ok((raw != 0).then_some(Place {
        thread: raw & !KEYED,
        keyed: raw & KEYED != 0,
    }))
}

/// Refuses a block of the wrong size.
pub(super) fn check(block: &[u8]) -> Result<()> {
    if !block.len().is_multiple_of(8) || block.len() as u64 > PER_BLOCK * 8 {
        return Err(damaged());
    }
    Ok(())
}

/// Where message `id` is, if stored.
pub(super) fn place(
    places: &impl ReadableTable<(u8, u64), &'static [u8]>,
    id: u64,
) -> Result<Option<Place>> {
    match places.get((MAP, id / PER_BLOCK)).or_storage()? {
        Some(block) => {
            check(block.value())?;
            entry(block.value(), (id % PER_BLOCK) as usize)
        }
        None => Ok(None),
    }
}

/// Adds message `id` of `thread` to the map.
pub(super) fn put(
    places: &mut redb::Table<'_, (u8, u64), &'static [u8]>,
    id: u64,
    thread: u64,
    keyed: bool,
) -> Result<()> {
    if thread == 0 || thread & KEYED != 0 {
        return Err(Error::storage(format!(
            "thread id {thread} cannot be mapped"
        )));
    }
    let key = (MAP, id / PER_BLOCK);
    let slot = (id % PER_BLOCK) as usize;
    let mut block = match places.get(key).or_storage()? {
        Some(old) => old.value().to_vec(),
        None => Vec::with_capacity(PER_BLOCK as usize * 8),
    };
    check(&block)?;
    if block.len() < slot * 8 + 8 {
        block.resize(slot * 8 + 8, 0);
    }
    let raw = thread | if keyed { KEYED } else { 0 };
    block[slot * 8..slot * 8 + 8].copy_from_slice(&raw.to_le_bytes());
    places.insert(key, block.as_slice()).or_storage()?;
    Ok(())
}

/// Changes whether message `id` was keyed (a migration sets it).
pub(super) fn set_keyed(
    places: &mut redb::Table<'_, (u8, u64), &'static [u8]>,
    id: u64,
) -> Result<bool> {
    let found = place(places, id)?;
    match found {
        Some(p) => {
            put(places, id, p.thread, true)?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// The highest message id stored, or 0.
pub(super) fn last(places: &impl ReadableTable<(u8, u64), &'static [u8]>) -> Result<u64> {
    let last = places
        .range((MAP, 0)..=(MAP, u64::MAX))
        .or_storage()?
        .next_back()
        .transpose()
        .or_storage()?;
    let Some((k, block)) = last else {
        return Ok(0);
    };
    let block = block.value();
    check(block)?;
    // Entries are written up to the last message, which is never 0.
    let slots = (block.len() / 8) as u64;
    Ok(k.value().1 * PER_BLOCK + slots.saturating_sub(1))
}

/// Visits the messages with ids greater than `after`, in id order, as `(id,
/// place)`, while `visit` returns `true`.
pub(super) fn scan(
    places: &impl ReadableTable<(u8, u64), &'static [u8]>,
    after: u64,
    mut visit: impl FnMut(u64, Place) -> Result<bool>,
) -> Result<()> {
    let Some(from) = after.checked_add(1) else {
        return Ok(());
    };
    for item in places
        .range((MAP, from / PER_BLOCK)..=(MAP, u64::MAX))
        .or_storage()?
    {
        let (k, block) = item.or_storage()?;
        let block = block.value();
        check(block)?;
        let first = k.value().1 * PER_BLOCK;
        for slot in 0..block.len() / 8 {
            let id = first + slot as u64;
            if id < from {
                continue;
            }
            if let Some(p) = entry(block, slot)? {
                if !visit(id, p)? {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

/// Blocks one migration step moves.
const PER_STEP: usize = 2_000;

/// Moves the blocks of a version-4 file from `MESSAGES` (thread 0) to `PLACES`,
/// in steps of [`PER_STEP`] blocks, each its own transaction that writes them
/// and deletes what it moved: a crash resumes where the last step ended.
pub(super) fn migrate(db: &Db, progress: Option<&Progress>) -> Result<()> {
    let total = {
        let txn = db.begin_read().or_storage()?;
        let messages = txn.open_table(MESSAGES).or_storage()?;
        messages
            .range((V4_SLOT, 0)..=(V4_SLOT, u64::MAX))
            .or_storage()?
            .count() as u64
    };
    in_steps(db, progress, "moving the message map", total, |txn| {
        let moved = txn
            .open_table(MESSAGES)
            .or_storage()?
            .range((V4_SLOT, 0)..=(V4_SLOT, u64::MAX))
            .or_storage()?
            .take(PER_STEP)
            .map(|e| e.map(|(k, v)| (k.value().1, v.value().to_vec())))
            .collect::<std::result::Result<Vec<_>, _>>()
            .or_storage()?;
        let mut places = txn.open_table(PLACES).or_storage()?;
        let mut messages = txn.open_table(MESSAGES).or_storage()?;
        for (n, block) in &moved {
            check(block)?;
            places.insert((MAP, *n), block.as_slice()).or_storage()?;
            messages.remove((V4_SLOT, *n)).or_storage()?;
        }
        Ok(moved.len())
    })
}
