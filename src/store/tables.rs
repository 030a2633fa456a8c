//! Every redb table of a forum file, in one place. Records are JSON bytes.

use redb::TableDefinition;

/// The version of the layout below. A file with a newer one is refused.
pub(super) const SCHEMA_VERSION: u64 = 1;

/// `schema_version` and `cursor_key`. Id counters are not stored: the next id of a
/// kind is one past the last key of its table, which saves a write per post.
pub(super) const META: TableDefinition<&str, u64> = TableDefinition::new("parley_meta");
/// First half of the SHA-256 of the secret → token record.
pub(super) const TOKENS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("tokens");
/// Identity → identity record.
pub(super) const IDENTITIES: TableDefinition<&str, &[u8]> = TableDefinition::new("identities");
/// Thread id → thread record.
pub(super) const THREADS: TableDefinition<u64, &[u8]> = TableDefinition::new("threads");
/// (thread, message) → message record: a thread's messages are one range.
pub(super) const MESSAGES: TableDefinition<(u64, u64), &[u8]> = TableDefinition::new("messages");
/// Message id → its thread.
pub(super) const MESSAGE_THREAD: TableDefinition<u64, u64> = TableDefinition::new("message_thread");
/// Claim id → claim record.
pub(super) const CLAIMS: TableDefinition<u64, &[u8]> = TableDefinition::new("claims");
/// Event id → event record.
pub(super) const EVENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("events");
/// (thread, event) → (): a thread's events are one range.
pub(super) const THREAD_EVENTS: TableDefinition<(u64, u64), ()> =
    TableDefinition::new("thread_events");
/// (awaited identity or "*", turn-setting message) → thread: the inbox index.
pub(super) const TURNS: TableDefinition<(&str, u64), u64> = TableDefinition::new("turns");
/// (state code, or `ALL_STATES`; latest message) → thread: the thread list index,
/// with each thread under its state and under `ALL_STATES`.
pub(super) const ACTIVITY: TableDefinition<(u8, u64), u64> = TableDefinition::new("activity");
/// The `ACTIVITY` key prefix of the whole list.
pub(super) const ALL_STATES: u8 = u8::MAX;
/// (identity, message) → time: recent writes of llm identities (rate limit).
pub(super) const WRITES: TableDefinition<(&str, u64), i64> = TableDefinition::new("writes");
