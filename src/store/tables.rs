//! Every redb table of a forum file, in one place. Records are JSON bytes.

use redb::TableDefinition;

/// The version of the layout below. A file with a newer one is refused.
/// Version 2 keeps thread records in [`MESSAGES`]; a version-1 file (a `threads`
/// table) is migrated on open. Version 3 adds the word index [`WORD_BLOCKS`], built on
/// open for a version-2 file. Version 4 moves the message → thread map from one
/// [`INDEX`] entry per message into blocks (`super::blocks`), and a keyed post's
/// digest from an index by age into its message's record (`super::expiry`); an
/// older file is migrated on open (`super::map_migration`). Version 5
/// writes the idempotency records of the word index's tail when the tail is
/// merged, not with each post (`super::key_tail`); its migration removes the
/// tail's records that an older file holds. Version 6 keeps the threads of that
/// tail out of the thread list until the tail is merged (`super::activity`); its
/// migration takes them out.
pub(super) const SCHEMA_VERSION: u64 = 6;

/// `schema_version`, `cursor_key`, `lease_last` (the last lease id issued), and the progress marks of the word index and of
/// key expiry. Id counters are not stored: the next id of a kind is one past the
/// last key of its table, which saves a write per post.
pub(super) const META: TableDefinition<&str, u64> = TableDefinition::new("parley_meta");
/// First half of the SHA-256 of the secret → token record.
pub(super) const TOKENS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("tokens");
/// Identity → identity record.
pub(super) const IDENTITIES: TableDefinition<&str, &[u8]> = TableDefinition::new("identities");
/// Version 1's thread id → thread record, moved into [`MESSAGES`] by version 2.
pub(super) const THREADS_V1: TableDefinition<u64, &[u8]> = TableDefinition::new("threads");
/// (thread, message) → message record: a thread's messages are one range. After
/// them, at (thread, [`THREAD_RECORD`]), the thread's own record: a post's message
/// and its thread's new record land in one leaf of one table, and a commit updates
/// one table root fewer.
/// Up to version 4, thread 0, which no thread has, held the message → thread map
/// (moved to [`PLACES`] on open, `super::blocks::migrate`).
pub(super) const MESSAGES: TableDefinition<(u64, u64), &[u8]> = TableDefinition::new("messages");
/// The message-id slot of a thread's record in [`MESSAGES`].
pub(super) const THREAD_RECORD: u64 = u64::MAX;
/// Claim id → claim record.
pub(super) const CLAIMS: TableDefinition<u64, &[u8]> = TableDefinition::new("claims");
/// Event id → event record.
pub(super) const EVENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("events");
/// Every small index, under byte keys that start with a tag (see [`key`]). One table
/// instead of five: each table a transaction touches costs a commit several µs, and
/// a post touches this one for all its index entries.
pub(super) const INDEX: TableDefinition<&[u8], u64> = TableDefinition::new("index");
/// Where things are, in blocks, from version 5: (state code, position / 64) → a
/// block of the thread list (`super::activity`), and ([`super::blocks::MAP`], id /
/// 64) → a block of the message map (`super::blocks`). The table is small and a
/// post writes it at two ends (the newest block of each), beside the leaf of its
/// message; the map's blocks were in [`MESSAGES`] before, whose branch pages a
/// post then rewrote on one more path.
pub(super) const PLACES: TableDefinition<(u8, u64), &[u8]> = TableDefinition::new("places");
/// (word, first message) → a block of (message, thread) pairs: the word index of
/// SPEC §14.4 (see `super::words`). A word's blocks are one range, in message order.
pub(super) const WORD_BLOCKS: TableDefinition<(&str, u64), &[u8]> =
    TableDefinition::new("word_blocks");

/// (identity, extension or `""` for none) → presence record (SPEC §16.1). An
/// extension is never empty, so `""` is free to mean "none", and sorts first.
/// The realm key pair (SPEC §18.3): `"ed25519_seed"` → the 32-byte Ed25519 seed.
/// Made when the forum is created, or on the first open of an older file. The
/// file is its owner's only (mode 0600, `super::file`); the seed leaves the store
/// only as a `RealmSecret`, which never shows it.
pub(super) const REALM_KEY: TableDefinition<&str, &[u8]> = TableDefinition::new("realm_key");
/// (realm, claim id there) → the local claim that imported it (SPEC §18.3), so
/// that a claim is imported once.
pub(super) const IMPORTS: TableDefinition<(&str, &str), u64> = TableDefinition::new("imports");
/// The entry of [`REALM_KEY`] that holds the seed.
pub(super) const REALM_SEED: &str = "ed25519_seed";

pub(super) const PRESENCE: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("presence");
/// Lease id → lease record (SPEC §16.2), while the lease may be active: a release
/// removes it, and so does a later lease write once it expired. Ids are counted in
/// [`META`] (`lease_last`), so a removed id is never issued again.
pub(super) const LEASES: TableDefinition<u64, &[u8]> = TableDefinition::new("leases");
/// SHA-256 of the bytes → (media type, created at in ms, the bytes): the
/// artifacts of SPEC §18.1. Written once per digest, never changed.
pub(super) const ARTIFACTS: TableDefinition<[u8; 32], (&str, i64, &[u8])> =
    TableDefinition::new("artifacts");

/// Keys of [`INDEX`]. Numbers are big-endian so byte order is numeric order;
/// identities never contain a NUL byte, which ends them.
pub(crate) mod key {
    /// `MESSAGE ‖ message` → thread, up to version 3 (read by its migration).
    const MESSAGE: u8 = 1;
    /// `ACTIVITY ‖ state code ‖ latest message` → thread: the thread list, per
    /// state, up to version 4 (read by its migration, `super::activity`).
    const ACTIVITY: u8 = 2;
    /// `TURN ‖ awaited identity or "*" ‖ 0 ‖ turn-setting message` → thread: the inbox.
    const TURN: u8 = 3;
    /// `THREAD_EVENT ‖ thread ‖ event` → 0: a thread's events.
    const THREAD_EVENT: u8 = 4;
    /// `WRITE ‖ identity ‖ 0 ‖ message` → time: recent writes, for the rate limit.
    const WRITE: u8 = 5;
    /// `REMEMBERED ‖ time ‖ KEY record` → the envelope's digest: idempotency keys by
    /// age, up to version 3 (read by its migration).
    const REMEMBERED: u8 = 6;
    /// `KEY ‖ identity ‖ 0 ‖ idempotency key` → the message its post made, for the
    /// posts the word index has merged (the tail's are in `super::key_tail`).
    const KEY: u8 = 7;

    fn with_u64(mut key: Vec<u8>, n: u64) -> Vec<u8> {
        key.extend_from_slice(&n.to_be_bytes());
        key
    }

    fn named(tag: u8, name: &str) -> Vec<u8> {
        let mut key = Vec::with_capacity(name.len() + 10);
        key.push(tag);
        key.extend_from_slice(name.as_bytes());
        key.push(0);
        key
    }

    pub(in crate::store) fn message(id: u64) -> Vec<u8> {
        with_u64(vec![MESSAGE], id)
    }

    /// All message keys: `[first, last]`.
    pub(in crate::store) fn messages() -> (Vec<u8>, Vec<u8>) {
        (message(0), message(u64::MAX))
    }

    /// The whole thread list of version 4: `[first, end)`.
    pub(in crate::store) fn all_activity() -> (Vec<u8>, Vec<u8>) {
        (vec![ACTIVITY], vec![ACTIVITY + 1])
    }

    /// The state and position of a version-4 thread-list key.
    pub(in crate::store) fn split_activity(k: &[u8]) -> Option<(u8, u64)> {
        match k {
            [ACTIVITY, state, pos @ ..] => Some((*state, u64::from_be_bytes(pos.try_into().ok()?))),
            _ => None,
        }
    }

    pub(in crate::store) fn turn(identity: &str, pos: u64) -> Vec<u8> {
        with_u64(named(TURN, identity), pos)
    }

    pub(in crate::store) fn thread_event(thread: u64, event: u64) -> Vec<u8> {
        with_u64(with_u64(vec![THREAD_EVENT], thread), event)
    }

    pub(in crate::store) fn write(identity: &str, message: u64) -> Vec<u8> {
        with_u64(named(WRITE, identity), message)
    }

    /// The key of an idempotency record: `KEY ‖ identity ‖ 0 ‖ key`.
    pub(in crate::store) fn idempotency(identity: &str, key: &str) -> Vec<u8> {
        let mut k = named(KEY, identity);
        k.extend_from_slice(key.as_bytes());
        k
    }

    /// Every idempotency record: `[first, end)`.
    pub(in crate::store) fn all_idempotency() -> (Vec<u8>, Vec<u8>) {
        (vec![KEY], vec![KEY + 1])
    }
    /// The identity and key of an idempotency record's key.
    pub(in crate::store) fn split_idempotency(record: &[u8]) -> Option<(&str, &str)> {
        let rest = record.strip_prefix(&[KEY])?;
        let nul = rest.iter().position(|&b| b == 0)?;
        let identity = std::str::from_utf8(&rest[..nul]).ok()?;
        let key = std::str::from_utf8(&rest[nul + 1..]).ok()?;
        Some((identity, key))
    }

    /// The whole age index of version 3.
    pub(in crate::store) fn all_remembered() -> (Vec<u8>, Vec<u8>) {
        (vec![REMEMBERED], vec![REMEMBERED + 1])
    }

    /// The time and record key of an age-index key.
    pub(in crate::store) fn split_remembered(k: &[u8]) -> Option<(u64, &[u8])> {
        let n: [u8; 8] = k.get(1..9)?.try_into().ok()?;
        Some((u64::from_be_bytes(n), &k[9..]))
    }

    /// The number a key ends with.
    pub(in crate::store) fn tail(key: &[u8]) -> u64 {
        let mut n = [0u8; 8];
        n.copy_from_slice(&key[key.len() - 8..]);
        u64::from_be_bytes(n)
    }
}
