//! `check`: what an offline look at a closed forum file finds.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata};

use super::open::{self, OrStorage};
use super::tables::*;
use super::{words, RedbStore};
use crate::error::{Error, Result};
use crate::store::codec;

/// What [`check`] found in a forum file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckReport {
    /// Whether every page passed redb's checksums. `false` means redb found damage
    /// and repaired what it could; the counts below are what is left.
    pub sound: bool,
    /// The format version the file is written in (`src/store/redb/format.rs`).
    pub schema_version: u64,
    /// Threads, messages, claims, events, identities and tokens stored.
    pub threads: u64,
    /// Messages stored.
    pub messages: u64,
    /// Claims stored.
    pub claims: u64,
    /// Events stored.
    pub events: u64,
    /// Identities that ever posted or hold a token.
    pub identities: u64,
    /// Tokens issued (revoked ones included).
    pub tokens: u64,
    /// Records that do not decode: each is named here (`message 3 of thread 1: …`).
    pub unreadable: Vec<String>,
    /// The file's size in bytes.
    pub bytes: u64,
    /// The file's permission bits (`0o600` when Parley created it).
    pub mode: u32,
}

impl CheckReport {
    /// Whether the file is a sound forum every record of which reads.
    pub fn ok(&self) -> bool {
        self.sound && self.unreadable.is_empty()
    }
}

/// Checks the closed forum file at `path`: redb's integrity check (the checksum of
/// every page), then every thread and message record decoded. Never creates a
/// file; a file that is not a Parley forum is refused untouched, as by an open.
pub fn check(path: &Path) -> Result<CheckReport> {
    let shown = path.display().to_string();
    checked(path).map_err(|e| match e {
        Error::Storage(m) if !m.message().contains(&shown) => {
            Error::storage_caused_by(format!("{shown} did not pass the check: {m}"), m)
        }
        other => other,
    })
}

fn checked(path: &Path) -> Result<CheckReport> {
    let meta = std::fs::metadata(path).map_err(|e| {
        Error::storage_caused_by(format!("cannot check {}: {e}", path.display()), e)
    })?;
    let mut db = open::open_file(path, false, super::format::current())?;
    let sound = open::unpanicked(path, || db.check_integrity().or_storage())?;
    // Refuses a redb file of another application, and migrates an older format
    // exactly as an open would.
    drop(db);
    drop(RedbStore::open_existing(path)?);
    let db = open::open_file(path, false, super::format::current())?;
    open::unpanicked(path, || count(&db, sound, &meta))
}

fn count(db: &open::Db, sound: bool, meta: &std::fs::Metadata) -> Result<CheckReport> {
    let txn = db.begin_read().or_storage()?;
    let schema_version = txn
        .open_table(META)
        .or_storage()?
        .get(FORMAT_KEY)
        .or_storage()?
        .map_or(0, |v| v.value());
    let mut report = CheckReport {
        sound,
        schema_version,
        threads: 0,
        messages: 0,
        claims: txn.open_table(CLAIMS).or_storage()?.len().or_storage()?,
        events: txn.open_table(EVENTS).or_storage()?.len().or_storage()?,
        identities: txn
            .open_table(IDENTITIES)
            .or_storage()?
            .len()
            .or_storage()?,
        tokens: txn.open_table(TOKENS).or_storage()?.len().or_storage()?,
        unreadable: Vec::new(),
        bytes: meta.len(),
        mode: meta.permissions().mode() & 0o7777,
    };
    for entry in txn.open_table(THREADS).or_storage()?.iter().or_storage()? {
        let (id, value) = entry.or_storage()?;
        report.threads += 1;
        if let Err(e) = codec::decode_thread(value.value()) {
            let id = id.value();
            report
                .unreadable
                .push(format!("the record of thread {id}: {e}"));
        }
    }
    for entry in txn.open_table(MESSAGES).or_storage()?.iter().or_storage()? {
        let (key, value) = entry.or_storage()?;
        let (thread, message) = key.value();
        report.messages += 1;
        if let Err(e) = codec::decode(value.value()) {
            report
                .unreadable
                .push(format!("message {message} of thread {thread}: {e}"));
        }
    }
    for entry in txn
        .open_table(WORD_SEGMENTS)
        .or_storage()?
        .iter()
        .or_storage()?
    {
        let (id, value) = entry.or_storage()?;
        if let Err(e) = words::check_segment(value.value()) {
            let id = id.value();
            report
                .unreadable
                .push(format!("the word segment of message {id}: {e}"));
        }
    }
    for entry in txn.open_table(WORDS).or_storage()?.iter().or_storage()? {
        let (key, value) = entry.or_storage()?;
        if let Err(e) = words::check_block(value.value()) {
            let (word, last) = key.value();
            report
                .unreadable
                .push(format!("the word block ({word:?}, {last}): {e}"));
        }
    }
    Ok(report)
}
