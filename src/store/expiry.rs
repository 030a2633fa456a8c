//! The expiry of idempotency keys (SPEC §14.3) without an index by age.
//!
//! A keyed post's key and digest are in its message's record, and the message map
//! ([`super::blocks`]) marks the keyed ones. Messages are numbered in commit
//! order, which is the order of their times, so the expired keys are the keyed
//! messages from [`EXPIRED`] on, up to the first one still within the limit. A
//! pass looks at a bounded number of ids, and the mark lets it pass the others
//! without reading them.

use crate::store::redb_error::OrStorage;
use redb::ReadableTable;

use super::blocks;
use super::codec;
use super::tables::{key, INDEX, MESSAGES, META, PLACES};
use super::Forgot;
use crate::error::Result;

/// The [`META`] key of the last message id the expiry has passed.
pub(super) const EXPIRED: &str = "keys_expired_through";
/// Ids one pass looks at, per key it may forget.
const IDS_PER_KEY: usize = 64;

/// Forgets up to `max` keys of posts made before `before` (ms). The records of
/// messages through `merged` are in [`INDEX`]; those of later ones, the word
/// index's tail, are forgotten by `forget_tail(record, message)`, which says
/// whether the record still named that message (see `super::key_tail`). The
/// records removed from [`INDEX`] are added to `unindexed`.
pub(super) fn forget(
    txn: &redb::WriteTransaction,
    before: i64,
    max: usize,
    merged: u64,
    forget_tail: &mut dyn FnMut(&[u8], u64) -> bool,
    unindexed: &mut Vec<Vec<u8>>,
) -> Result<Forgot> {
    let from = txn
        .open_table(META)
        .or_storage()?
        .get(EXPIRED)
        .or_storage()?
        .map_or(0, |v| v.value());
    let budget = max.saturating_mul(IDS_PER_KEY);
    let (mut through, mut visited, mut more) = (from, 0usize, false);
    let mut expired: Vec<(u64, Vec<u8>)> = Vec::new();
    {
        let places = txn.open_table(PLACES).or_storage()?;
        let messages = txn.open_table(MESSAGES).or_storage()?;
        blocks::scan(&places, from, |id, place| {
            if visited == budget || expired.len() == max {
                more = true;
                return Ok(false);
            }
            visited += 1;
            if !place.keyed {
                through = id;
                return Ok(true);
            }
            let Some(record) = messages.get((place.thread, id)).or_storage()? else {
                through = id;
                return Ok(true);
            };
            let message = codec::decode(record.value())?;
            if message.created_at >= before {
                return Ok(false);
            }
            if let Some(k) = &message.key {
                expired.push((id, key::idempotency(&message.identity, &k.key)));
            }
            through = id;
            Ok(true)
        })?;
    }
    let mut keys = 0;
    if !expired.is_empty() {
        let mut index = txn.open_table(INDEX).or_storage()?;
        for (id, record) in &expired {
            // A key used again after it expired names the newer post: it stays.
            // A record this transaction merged is in both places.
            let in_tail = forget_tail(record, *id);
            if *id > merged {
                keys += usize::from(in_tail);
                continue;
            }
            let current = index
                .get(record.as_slice())
                .or_storage()?
                .map(|v| v.value());
            if current == Some(*id) {
                index.remove(record.as_slice()).or_storage()?;
                unindexed.push(record.clone());
                keys += 1;
            }
        }
    }
    if through != from {
        txn.open_table(META)
            .or_storage()?
            .insert(EXPIRED, through)
            .or_storage()?;
    }
    Ok(Forgot { keys, more })
}
