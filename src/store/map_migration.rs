//! The migration of a version-2 or version-3 file to version 4's message map and
//! key records (see `super::blocks` and `super::expiry`).
//!
//! It runs in steps of [`PER_STEP`] entries, each its own transaction that writes
//! the new form and deletes the old entries it replaced, so a crash resumes where
//! the last step ended and a step never leaves an entry in both forms.

use crate::store::redb_error::OrStorage;
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
    let txn = db.begin_write().or_storage()?;
    let version = txn
        .open_table(META)
        .or_storage()?
        .get("schema_version")
        .or_storage()?
        .map(|v| v.value());
    if matches!(version, Some(3 | 4)) {
        // Version 5 keeps the tail's idempotency records out of the index.
        super::tail::Tail::migrate(&txn)?;
        // Version 5; `activity::leave_tail` then makes it 6.
        txn.open_table(META)
            .or_storage()?
            .insert("schema_version", 5)
            .or_storage()?;
    }
    txn.commit().or_storage()?;
    Ok(())
}

fn older(meta: &impl ReadableTable<&'static str, u64>) -> Result<bool> {
    let version = meta.get("schema_version").or_storage()?.map(|v| v.value());
    Ok(matches!(version, Some(2 | 3)))
}

/// Moves up to [`PER_STEP`] entries `MESSAGE ‖ id → thread` into blocks; `false`
/// once none is left.
fn step_map(db: &Db, progress: Option<&Progress>) -> Result<bool> {
    let txn = db.begin_write().or_storage()?;
    if !older(&txn.open_table(META).or_storage()?)? {
        return Ok(false);
    }
    let (lo, hi) = key::messages();
    let (moved, last) = {
        let index = txn.open_table(INDEX).or_storage()?;
        let last = index
            .range(lo.as_slice()..=hi.as_slice())
            .or_storage()?
            .next_back()
            .transpose()
            .or_storage()?
            .map_or(0, |(k, _)| key::tail(k.value()));
        let moved = index
            .range(lo.as_slice()..=hi.as_slice())
            .or_storage()?
            .take(PER_STEP)
            .map(|e| e.map(|(k, v)| (k.value().to_vec(), v.value())))
            .collect::<std::result::Result<Vec<_>, _>>()
            .or_storage()?;
        (moved, last)
    };
    if moved.is_empty() {
        return Ok(false);
    }
    {
        let mut meta = txn.open_table(META).or_storage()?;
        // No key of a post before the migration is older than the oldest one it
        // carries over (`step_keys` lowers the mark to it); later ones come after.
        if meta.get(EXPIRED).or_storage()?.is_none() {
            meta.insert(EXPIRED, last).or_storage()?;
        }
    }
    {
        let mut places = txn.open_table(PLACES).or_storage()?;
        for (k, thread) in &moved {
            if k.len() != 9 {
                return Err(damaged("message index"));
            }
            blocks::put(&mut places, key::tail(k), *thread, false)?;
        }
    }
    let done = {
        let mut index = txn.open_table(INDEX).or_storage()?;
        for (k, _) in &moved {
            index.remove(k.as_slice()).or_storage()?;
        }
        moved.last().map_or(0, |(k, _)| key::tail(k))
    };
    txn.commit().or_storage()?;
    if let Some(report) = progress {
        report("moving the message map", done, last);
    }
    Ok(true)
}

/// Moves up to [`PER_STEP`] digests of the age index into their messages'
/// records; `false` once none is left.
fn step_keys(db: &Db, progress: Option<&Progress>) -> Result<bool> {
    let txn = db.begin_write().or_storage()?;
    if !older(&txn.open_table(META).or_storage()?)? {
        return Ok(false);
    }
    let (lo, hi) = key::all_remembered();
    let aged = txn
        .open_table(INDEX)
        .or_storage()?
        .range(lo.as_slice()..hi.as_slice())
        .or_storage()?
        .take(PER_STEP)
        .map(|e| e.map(|(k, v)| (k.value().to_vec(), v.value())))
        .collect::<std::result::Result<Vec<_>, _>>()
        .or_storage()?;
    if aged.is_empty() {
        return Ok(false);
    }
    let mut oldest = u64::MAX;
    for (k, digest) in &aged {
        let (_, record) = key::split_remembered(k).ok_or_else(|| damaged("age index"))?;
        let (_, sent) = key::split_idempotency(record).ok_or_else(|| damaged("age index"))?;
        let id = txn
            .open_table(INDEX)
            .or_storage()?
            .get(record)
            .or_storage()?
            .map(|v| v.value());
        // A record the key no longer names was replaced; it has nothing to carry.
        let Some(id) = id else { continue };
        let mut places = txn.open_table(PLACES).or_storage()?;
        let Some(place) = blocks::place(&places, id)? else {
            continue;
        };
        let mut messages = txn.open_table(MESSAGES).or_storage()?;
        let found = messages
            .get((place.thread, id))
            .or_storage()?
            .map(|r| r.value().to_vec());
        let Some(bytes) = found else { continue };
        let mut message = codec::decode(&bytes)?;
        if message.key.is_none() {
            message.key = Some(PostKey {
                key: sent.to_string(),
                digest: *digest,
            });
            messages
                .insert((place.thread, id), codec::encode(&message).as_slice())
                .or_storage()?;
            blocks::set_keyed(&mut places, id)?;
        }
        oldest = oldest.min(id);
    }
    {
        let mut index = txn.open_table(INDEX).or_storage()?;
        for (k, _) in &aged {
            index.remove(k.as_slice()).or_storage()?;
        }
    }
    if oldest != u64::MAX {
        let mut meta = txn.open_table(META).or_storage()?;
        let mark = meta
            .get(EXPIRED)
            .or_storage()?
            .map_or(u64::MAX, |v| v.value());
        meta.insert(EXPIRED, mark.min(oldest - 1)).or_storage()?;
    }
    txn.commit().or_storage()?;
    if let Some(report) = progress {
        report(
            "moving the idempotency keys",
            aged.len() as u64,
            aged.len() as u64,
        );
    }
    Ok(true)
}
