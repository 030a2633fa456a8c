//! Idempotency keys (SPEC §14.3): one table, [`KEYS`], that a retry reads with
//! one lookup, and an index by age, [`KEY_AGES`], that the expiry walks from its
//! oldest entry. A key used again after it expired replaces its record; the age
//! entry of the older post then names a message the record no longer names, and
//! the expiry drops that entry alone.

use redb::ReadableTable;

use super::open::OrStorage;
use super::tables::{KEYS, KEY_AGES};
use crate::error::Result;
use crate::store::Forgot;

/// The message `identity` posted under `key`, if remembered.
pub(super) fn get(
    keys: &impl ReadableTable<(&'static str, &'static str), u64>,
    identity: &str,
    key: &str,
) -> Result<Option<u64>> {
    Ok(keys.get((identity, key)).or_storage()?.map(|v| v.value()))
}

/// Remembers that `identity`'s post under `key`, made at `at` (ms), is `message`.
pub(super) fn put(
    txn: &redb::WriteTransaction,
    identity: &str,
    key: &str,
    message: u64,
    at: i64,
) -> Result<()> {
    txn.open_table(KEYS)
        .or_storage()?
        .insert((identity, key), message)
        .or_storage()?;
    txn.open_table(KEY_AGES)
        .or_storage()?
        .insert((at, identity, key), message)
        .or_storage()?;
    Ok(())
}

/// Forgets up to `max` keys of posts made before `before` (ms), oldest first,
/// looking at no more than `max` age entries.
pub(super) fn forget(txn: &redb::WriteTransaction, before: i64, max: usize) -> Result<Forgot> {
    let mut ages = txn.open_table(KEY_AGES).or_storage()?;
    let mut expired: Vec<(i64, String, String, u64)> = Vec::new();
    let mut more = false;
    for entry in ages.range((i64::MIN, "", "")..).or_storage()? {
        let (k, v) = entry.or_storage()?;
        let (at, identity, key) = k.value();
        if at >= before {
            break;
        }
        if expired.len() == max {
            more = true;
            break;
        }
        expired.push((at, identity.to_owned(), key.to_owned(), v.value()));
    }
    let mut keys = txn.open_table(KEYS).or_storage()?;
    let mut forgot = 0;
    for (at, identity, key, message) in &expired {
        ages.remove((*at, identity.as_str(), key.as_str()))
            .or_storage()?;
        // A key used again after it expired names the newer post: it stays.
        let current = keys
            .get((identity.as_str(), key.as_str()))
            .or_storage()?
            .map(|v| v.value());
        if current == Some(*message) {
            keys.remove((identity.as_str(), key.as_str()))
                .or_storage()?;
            forgot += 1;
        }
    }
    Ok(Forgot { keys: forgot, more })
}
