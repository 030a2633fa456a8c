//! Every redb table of a forum file, in one place: one typed table per record
//! kind and per index. Numbers in keys are ids or times, so the newest entry of
//! an index is its last key and a post appends to the right-most leaf.
//!
//! Changing a table here changes the file format: `format.rs` fingerprints this
//! list, and a test fails until the change has a new format version.

use redb::TableDefinition;

/// `format` (the file's format version, `super::format`), `cursor_key`, and
/// `lease_last` (the last lease id issued). Id counters are not stored: the next
/// id of a kind is one past the last key of its table.
pub(super) const META: TableDefinition<&str, u64> = TableDefinition::new("parley_meta");
/// The [`META`] key of the format version.
pub(super) const FORMAT_KEY: &str = "format";
/// First half of the SHA-256 of the secret → token record (JSON).
pub(super) const TOKENS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("tokens");
/// Identity → identity record (JSON).
pub(super) const IDENTITIES: TableDefinition<&str, &[u8]> = TableDefinition::new("identities");
/// Thread id → thread record (`store::codec`).
pub(super) const THREADS: TableDefinition<u64, &[u8]> = TableDefinition::new("threads");
/// (thread, message) → message record (`store::codec`): a thread's messages are
/// one range, read in one scan by `get_thread`.
pub(super) const MESSAGES: TableDefinition<(u64, u64), &[u8]> = TableDefinition::new("messages");
/// Message id → its thread: finds a message, and is the forum's message feed.
pub(super) const MESSAGE_THREADS: TableDefinition<u64, u64> =
    TableDefinition::new("message_threads");
/// Claim id → claim record (JSON).
pub(super) const CLAIMS: TableDefinition<u64, &[u8]> = TableDefinition::new("claims");
/// Event id → event record (JSON).
pub(super) const EVENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("events");
/// (thread, event) → (): a thread's events.
pub(super) const THREAD_EVENTS: TableDefinition<(u64, u64), ()> =
    TableDefinition::new("thread_events");
/// (state code, latest message) → thread: the thread list, a log of bumps per
/// state. A post removes its thread's entry and appends the new one.
pub(super) const ACTIVITY: TableDefinition<(u8, u64), u64> = TableDefinition::new("activity");
/// (awaited identity or `"*"`, turn-setting message) → thread: the inbox.
pub(super) const TURNS: TableDefinition<(&str, u64), u64> = TableDefinition::new("turns");
/// First message of a segment → the postings of its messages (`super::words`):
/// the word index's newest part, one segment per indexed post.
pub(super) const WORD_SEGMENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("word_segments");
/// (word, last message of the block) → a block of postings (`super::words`): the
/// segments, merged by word.
pub(super) const WORDS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("words");
/// (identity, idempotency key) → the message its post made (SPEC §14.3).
pub(super) const KEYS: TableDefinition<(&str, &str), u64> = TableDefinition::new("keys");
/// (post time in ms, identity, idempotency key) → message: the keys by age, for
/// their expiry (`super::keys`).
pub(super) const KEY_AGES: TableDefinition<(i64, &str, &str), u64> =
    TableDefinition::new("key_ages");
/// (identity, message) → time in ms: recent writes of llm identities, for the
/// rate limit.
pub(super) const WRITES: TableDefinition<(&str, u64), i64> = TableDefinition::new("writes");
/// (identity, extension or `""` for none) → presence record (SPEC §16.1). An
/// extension is never empty, so `""` is free to mean "none", and sorts first.
pub(super) const PRESENCE: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("presence");
/// Lease id → lease record (SPEC §16.2), while the lease may be active. Ids are
/// counted in [`META`] (`lease_last`), so a removed id is never issued again.
pub(super) const LEASES: TableDefinition<u64, &[u8]> = TableDefinition::new("leases");
/// SHA-256 of the bytes → (media type, created at in ms, the bytes): the
/// artifacts of SPEC §18.1. Written once per digest, never changed.
pub(super) const ARTIFACTS: TableDefinition<[u8; 32], (&str, i64, &[u8])> =
    TableDefinition::new("artifacts");
/// (realm, claim id there) → the local claim that imported it (SPEC §18.3).
pub(super) const IMPORTS: TableDefinition<(&str, &str), u64> = TableDefinition::new("imports");
/// The realm key pair (SPEC §18.3): [`REALM_SEED`] → the 32-byte Ed25519 seed,
/// made when the forum is created. The file is its owner's only (mode 0600).
pub(super) const REALM_KEY: TableDefinition<&str, &[u8]> = TableDefinition::new("realm_key");
/// The entry of [`REALM_KEY`] that holds the seed.
pub(super) const REALM_SEED: &str = "ed25519_seed";

/// Creates every table in `txn`, so reads never meet a missing one.
pub(super) fn create_all(txn: &redb::WriteTransaction) -> Result<(), redb::TableError> {
    txn.open_table(META)?;
    txn.open_table(TOKENS)?;
    txn.open_table(IDENTITIES)?;
    txn.open_table(THREADS)?;
    txn.open_table(MESSAGES)?;
    txn.open_table(MESSAGE_THREADS)?;
    txn.open_table(CLAIMS)?;
    txn.open_table(EVENTS)?;
    txn.open_table(THREAD_EVENTS)?;
    txn.open_table(ACTIVITY)?;
    txn.open_table(TURNS)?;
    txn.open_table(WORD_SEGMENTS)?;
    txn.open_table(WORDS)?;
    txn.open_table(KEYS)?;
    txn.open_table(KEY_AGES)?;
    txn.open_table(WRITES)?;
    txn.open_table(PRESENCE)?;
    txn.open_table(LEASES)?;
    txn.open_table(ARTIFACTS)?;
    txn.open_table(IMPORTS)?;
    txn.open_table(REALM_KEY)?;
    Ok(())
}

#[cfg(test)]
/// Each table's name and its key and value types, as redb names them: what the
/// format's fingerprint hashes (`super::format`).
pub(super) fn layout() -> Vec<String> {
    fn row<K: redb::Key + 'static, V: redb::Value + 'static>(def: TableDefinition<K, V>) -> String {
        use redb::TableHandle;
        format!(
            "{} {} {}",
            def.name(),
            K::type_name().name(),
            V::type_name().name()
        )
    }
    vec![
        row(META),
        row(TOKENS),
        row(IDENTITIES),
        row(THREADS),
        row(MESSAGES),
        row(MESSAGE_THREADS),
        row(CLAIMS),
        row(EVENTS),
        row(THREAD_EVENTS),
        row(ACTIVITY),
        row(TURNS),
        row(WORD_SEGMENTS),
        row(WORDS),
        row(KEYS),
        row(KEY_AGES),
        row(WRITES),
        row(PRESENCE),
        row(LEASES),
        row(ARTIFACTS),
        row(IMPORTS),
        row(REALM_KEY),
    ]
}
