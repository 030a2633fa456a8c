//! The storage baselines: what the disk and the database cost without the protocol.
//!
//! - raw redb: one ~600-byte value inserted per transaction, durable or not — the
//!   floor under every post, since a post is one redb write transaction;
//! - SQLite in WAL mode with `synchronous=FULL`: one row per transaction, the
//!   common choice for an embedded forum.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use redb::{Database, TableDefinition};

use crate::measure::per_second;
use crate::workload::{body, concurrently};
use crate::Res;

const RAW: TableDefinition<u64, &[u8]> = TableDefinition::new("raw");

/// A record the size of a stored message (~600 bytes).
pub fn record(seq: u64) -> Vec<u8> {
    let mut r = format!(
        "{{\"id\":{seq},\"thread\":{},\"identity\":\"ainotes:w{}\",\"kind\":\"note\",\"body\":\"{}\"}}",
        seq % 64,
        seq % 8,
        body(seq)
    )
    .into_bytes();
    r.resize(600, b' ');
    r
}

/// A redb file taking one insert per transaction.
pub struct RawRedb {
    db: Database,
    durable: bool,
    next: u64,
}

impl RawRedb {
    pub fn create(path: &Path, durable: bool) -> Res<RawRedb> {
        let db = Database::create(path).map_err(|e| format!("raw redb {}: {e}", path.display()))?;
        Ok(RawRedb {
            db,
            durable,
            next: 1,
        })
    }

    /// Inserts `count` records, one transaction each; returns the records per second.
    pub fn insert_rate(&mut self, count: usize) -> Res<f64> {
        Ok(per_second(self.insert_time(count)?, count))
    }

    /// Inserts `count` records, one transaction each; returns the time they took.
    pub fn insert_time(&mut self, count: usize) -> Res<Duration> {
        let records: Vec<Vec<u8>> = (0..count as u64).map(|i| record(self.next + i)).collect();
        let start = Instant::now();
        for rec in &records {
            self.insert(rec)
                .map_err(|e| format!("raw redb insert: {e}"))?;
        }
        Ok(start.elapsed())
    }

    fn insert(&mut self, rec: &[u8]) -> Result<(), redb::Error> {
        let mut txn = self.db.begin_write()?;
        if !self.durable {
            txn.set_durability(redb::Durability::None)?;
        }
        txn.open_table(RAW)?.insert(self.next, rec)?;
        txn.commit()?;
        self.next += 1;
        Ok(())
    }
}

/// SQLite in WAL mode, `synchronous=FULL`: the writer threads share one connection
/// (behind a mutex) and insert one row per (autocommit) transaction. One shared
/// connection is SQLite's faster arrangement here: with a connection per thread,
/// writers wait for each other in SQLite's busy handler, which sleeps.
pub struct Sqlite {
    conn: Mutex<rusqlite::Connection>,
    writers: usize,
    next: std::sync::atomic::AtomicU64,
}

impl Sqlite {
    pub fn create(path: &Path, writers: usize) -> Res<Sqlite> {
        let err = |e: rusqlite::Error| format!("sqlite {}: {e}", path.display());
        let conn = rusqlite::Connection::open(path).map_err(err)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(err)?;
        if mode != "wal" {
            return Err(format!("sqlite refused WAL mode (got {mode})"));
        }
        conn.execute_batch(
            "PRAGMA synchronous=FULL;
             CREATE TABLE IF NOT EXISTS messages (
                 id INTEGER PRIMARY KEY, thread INTEGER NOT NULL,
                 identity TEXT NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL,
                 created_at TEXT NOT NULL);
             CREATE INDEX IF NOT EXISTS messages_thread ON messages(thread, id);",
        )
        .map_err(err)?;
        Ok(Sqlite {
            conn: Mutex::new(conn),
            writers,
            next: std::sync::atomic::AtomicU64::new(1),
        })
    }

    /// Each writer inserts `per_writer` rows concurrently; returns rows per second.
    pub fn insert_rate(&self, per_writer: usize) -> Res<f64> {
        use std::sync::atomic::Ordering;
        let batches: Vec<Vec<(u64, String)>> = (0..self.writers)
            .map(|_| {
                (0..per_writer)
                    .map(|_| {
                        let seq = self.next.fetch_add(1, Ordering::Relaxed);
                        (seq, body(seq))
                    })
                    .collect()
            })
            .collect();
        let elapsed = concurrently(&batches, |w, rows| {
            let identity = format!("ainotes:w{w}");
            for (seq, body) in rows {
                let conn = self.conn.lock().map_err(|_| "poisoned".to_string())?;
                let mut stmt = conn
                    .prepare_cached(
                        "INSERT INTO messages (thread, identity, kind, body, created_at)
                         VALUES (?1, ?2, 'note', ?3, '2026-11-30T12:00:00.000Z')",
                    )
                    .map_err(|e| format!("sqlite prepare: {e}"))?;
                stmt.execute(rusqlite::params![(*seq % 64) as i64, identity, body])
                    .map_err(|e| format!("sqlite insert: {e}"))?;
            }
            Ok(())
        })?;
        Ok(per_second(elapsed, self.writers * per_writer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baselines_write_what_they_count() {
        let dir = tempfile::tempdir().unwrap();
        let mut raw = RawRedb::create(&dir.path().join("raw.redb"), false).unwrap();
        assert!(raw.insert_rate(20).unwrap() > 0.0);
        use redb::{ReadableDatabase, ReadableTableMetadata};
        assert_eq!(
            raw.db
                .begin_read()
                .unwrap()
                .open_table(RAW)
                .unwrap()
                .len()
                .unwrap(),
            20
        );
        assert_eq!(record(7).len(), 600);

        let lite = Sqlite::create(&dir.path().join("lite.db"), 3).unwrap();
        assert!(lite.insert_rate(5).unwrap() > 0.0);
        let conn = lite.conn.lock().unwrap();
        let n: i64 = conn
            .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 15);
    }
}
