//! The migration of a version-2 or version-3 file to version 4's message map and
//! key records (see `super::blocks` and `super::expiry`).
//!
//! It runs in steps of [`PER_STEP`] entries, each its own transaction that writes
//! the new form and deletes the old entries it replaced, so a crash resumes where
//! the last step ended and a step never leaves an entry in both forms.

use redb::ReadableTable;

use super::blocks;
use super::codec;
use super::expiry::EXPIRED;
use super::records::PostKey;
use super::redb_open::Db;
use super::tables::*;
use crate::config::Progress;
use crate::error::{Error, Result};

/// Old entries one step moves.
const PER_STEP: usize = 20_000;

fn damaged(what: &str) -> Error {
    Error::storage(format!("an entry of the version-3 {what} is unreadable"))
}

/// Migrates the message map, then the keys' digests. A version-3 file is then
/// version 4, and it or a version-4 file then version 5 (`super::key_tail`); a
/// version-2 file still needs its word index, whose migration sets the version.
pub(super) fn migrate(db: &Db, progress: Option<&Progress>) -> Result<()> {
    while step_map(db, progress)? {}
    while step_keys(db, progress)? {}
    let txn = db.begin_write()?;
    let version = txn
        .open_table(META)?
        .get("schema_version")?
        .map(|v| v.value());
    if matches!(version, Some(3 | 4)) {
        // Version 5 keeps the tail's idempotency records out of the index.
        super::tail::Tail::migrate(&txn)?;
        // Version 5; `activity::leave_tail` then makes it 6.
        txn.open_table(META)?.insert("schema_version", 5)?;
    }
    txn.commit()?;
    Ok(())
}

fn older(meta: &impl ReadableTable<&'static str, u64>) -> Result<bool> {
    let version = meta.get("schema_version")?.map(|v| v.value());
    Ok(matches!(version, Some(2 | 3)))
}

/// Moves up to [`PER_STEP`] entries `MESSAGE ‖ id → thread` into blocks; `false`
/// once none is left.
fn step_map(db: &Db, progress: Option<&Progress>) -> Result<bool> {
    let txn = db.begin_write()?;
    if !older(&txn.open_table(META)?)? {
        return Ok(false);
    }
    let (lo, hi) = key::messages();
    let (moved, last) = {
        let index = txn.open_table(INDEX)?;
        let last = index
            .range(lo.as_slice()..=hi.as_slice())?
            .next_back()
            .transpose()?
            .map_or(0, |(k, _)| key::tail(k.value()));
        let moved = index
            .range(lo.as_slice()..=hi.as_slice())?
            .take(PER_STEP)
            .map(|e| e.map(|(k, v)| (k.value().to_vec(), v.value())))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        (moved, last)
    };
    if moved.is_empty() {
        return Ok(false);
    }
    {
        let mut meta = txn.open_table(META)?;
        // No key of a post before the migration is older than the oldest one it
        // carries over (`step_keys` lowers the mark to it); later ones come after.
        if meta.get(EXPIRED)?.is_none() {
            meta.insert(EXPIRED, last)?;
        }
    }
    {
        let mut places = txn.open_table(PLACES)?;
        for (k, thread) in &moved {
            if k.len() != 9 {
                return Err(damaged("message index"));
            }
            blocks::put(&mut places, key::tail(k), *thread, false)?;
        }
    }
    let done = {
        let mut index = txn.open_table(INDEX)?;
        for (k, _) in &moved {
            index.remove(k.as_slice())?;
        }
        moved.last().map_or(0, |(k, _)| key::tail(k))
    };
    txn.commit()?;
    if let Some(report) = progress {
        report("moving the message map", done, last);
    }
    Ok(true)
}

/// Moves up to [`PER_STEP`] digests of the age index into their messages'
/// records; `false` once none is left.
fn step_keys(db: &Db, progress: Option<&Progress>) -> Result<bool> {
    let txn = db.begin_write()?;
    if !older(&txn.open_table(META)?)? {
        return Ok(false);
    }
    let (lo, hi) = key::all_remembered();
    let aged = txn
        .open_table(INDEX)?
        .range(lo.as_slice()..hi.as_slice())?
        .take(PER_STEP)
        .map(|e| e.map(|(k, v)| (k.value().to_vec(), v.value())))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    if aged.is_empty() {
        return Ok(false);
    }
    let mut oldest = u64::MAX;
    for (k, digest) in &aged {
        let (_, record) = key::split_remembered(k).ok_or_else(|| damaged("age index"))?;
        let (_, sent) = key::split_idempotency(record).ok_or_else(|| damaged("age index"))?;
        let id = txn.open_table(INDEX)?.get(record)?.map(|v| v.value());
        // A record the key no longer names was replaced; it has nothing to carry.
        let Some(id) = id else { continue };
        let mut places = txn.open_table(PLACES)?;
        let Some(place) = blocks::place(&places, id)? else {
            continue;
        };
        let mut messages = txn.open_table(MESSAGES)?;
        let found = messages
            .get((place.thread, id))?
            .map(|r| r.value().to_vec());
        let Some(bytes) = found else { continue };
        let mut message = codec::decode(&bytes)?;
        if message.key.is_none() {
            message.key = Some(PostKey {
                key: sent.to_string(),
                digest: *digest,
            });
            messages.insert((place.thread, id), codec::encode(&message).as_slice())?;
            blocks::set_keyed(&mut places, id)?;
        }
        oldest = oldest.min(id);
    }
    {
        let mut index = txn.open_table(INDEX)?;
        for (k, _) in &aged {
            index.remove(k.as_slice())?;
        }
    }
    if oldest != u64::MAX {
        let mut meta = txn.open_table(META)?;
        let mark = meta.get(EXPIRED)?.map_or(u64::MAX, |v| v.value());
        meta.insert(EXPIRED, mark.min(oldest - 1))?;
    }
    txn.commit()?;
    if let Some(report) = progress {
        report(
            "moving the idempotency keys",
            aged.len() as u64,
            aged.len() as u64,
        );
    }
    Ok(true)
}
