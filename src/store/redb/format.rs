//! The file format's versions, in order, each with a fingerprint of its layout
//! and the step that migrates a file of the previous version, as
//! `store::postgres::schema` keeps its schema's versions.
//!
//! A format is a promise: a file written by a release is read by every later
//! one. The fingerprint hashes what a file holds: each table's name and its key
//! and value types (`tables::layout`), and the bytes the codecs write for a fixed
//! sample of each record kind. A test computes it from the code and compares it
//! with the last version's: a change of the format without a new version (and
//! its migration step) fails it.

use redb::ReadableTable;

use super::open::{holds_foreign_tables, OrStorage};
use super::tables::{FORMAT_KEY, META};
use crate::config::Progress;
use crate::error::{Error, Result};

/// A migration step: rewrites a file of the previous version into this one,
/// inside the open's write transaction.
type Step = fn(&redb::WriteTransaction, Option<&Progress>) -> Result<()>;

/// One version of the file format.
struct Format {
    version: u64,
    /// The hex SHA-256 of the format's layout (`fingerprint`, a test's).
    #[cfg_attr(not(test), allow(dead_code))]
    fingerprint: &'static str,
    /// From the previous version; `None` for the first.
    migrate: Option<Step>,
}

/// Every format, oldest first. Append a version for any change of the layout.
const FORMATS: &[Format] = &[Format {
    version: 1,
    fingerprint: "54b8b6a589b272a16baaa9e54bdfb53ddfd734e1354bc33290ac62f77d65dab7",
    migrate: None,
}];

/// The version this code writes.
pub(super) fn current() -> u64 {
    FORMATS.last().map_or(0, |f| f.version)
}

/// Brings the file to the current format inside `txn`: writes the version and a
/// new cursor key into a new file, migrates an older one, and refuses a newer
/// one or a redb file of another application before anything is written.
/// Returns the cursor key.
pub(super) fn settle(txn: &redb::WriteTransaction, progress: Option<&Progress>) -> Result<u64> {
    let found = txn
        .open_table(META)
        .or_storage()?
        .get(FORMAT_KEY)
        .or_storage()?
        .map(|v| v.value());
    match found {
        Some(found) if found > current() => {
            return Err(Error::SchemaTooNew {
                found,
                supported: current(),
            });
        }
        Some(found) => {
            for format in FORMATS.iter().filter(|f| f.version > found) {
                if let Some(step) = format.migrate {
                    step(txn, progress)?;
                }
            }
        }
        None => {
            if holds_foreign_tables(txn)? {
                return Err(Error::NotAForum(
                    "the file holds tables of another application".into(),
                ));
            }
            let mut key = [0u8; 8];
            getrandom::fill(&mut key)
                .map_err(|e| Error::storage(format!("OS random source: {e}")))?;
            txn.open_table(META)
                .or_storage()?
                .insert("cursor_key", u64::from_le_bytes(key))
                .or_storage()?;
        }
    }
    let mut meta = txn.open_table(META).or_storage()?;
    if found != Some(current()) {
        meta.insert(FORMAT_KEY, current()).or_storage()?;
    }
    let cursor_key = meta
        .get("cursor_key")
        .or_storage()?
        .map_or(0, |v| v.value());
    Ok(cursor_key)
}

/// The fingerprint of the format this code writes.
#[cfg(test)]
fn fingerprint() -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for row in super::tables::layout() {
        hash.update(row.as_bytes());
        hash.update([0]);
    }
    for sample in samples::all() {
        hash.update((sample.len() as u64).to_le_bytes());
        hash.update(&sample);
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A fixed record of each kind, as the codecs write it.
#[cfg(test)]
mod samples {
    use serde_json::{Map, Value};

    use crate::protocol::acts::Act;
    use crate::protocol::evidence::{Evidence, EvidenceKind};
    use crate::protocol::state::State;
    use crate::store::codec;
    use crate::store::records::{Awaiting, MessageRec, PostKey, Recent, ThreadRec};

    pub(super) fn message() -> MessageRec {
        MessageRec {
            id: 9,
            kind: Act::Assert,
            thread: 2,
            parent: Some(4),
            depth: 3,
            identity: "ainotes:bob".into(),
            extension: Some("w1".into()),
            human: true,
            body: "b \"quoted\" ünï".into(),
            created_at: 1_796_040_000_123,
            to: Some("ainotes:a".into()),
            state: Some(State::Rejected),
            provenance: Some(Map::from_iter([("model".to_string(), Value::from("m"))])),
            claim: Some(5),
            counter_claim: Some(6),
            evidence: vec![Evidence {
                kind: EvidenceKind::Log,
                reference: "r".into(),
                note: Some("n".into()),
            }],
            supersedes: vec![1, 2],
            valid_until: Some(1_796_040_000_000),
            key: Some(PostKey {
                key: "k-1".into(),
                digest: 0xfeed_beef,
            }),
        }
    }

    pub(super) fn thread() -> ThreadRec {
        let mut t = ThreadRec::bare(3, 7);
        t.topic = "Which port?".into();
        t.creator = "ainotes:alice".into();
        t.state = State::Decided;
        t.state_label = Some("Mod".into());
        t.awaiting = Some(Awaiting {
            identity: "*".into(),
            extension: None,
            message: 9,
        });
        t.last_body.insert("ainotes:alice".into(), 42);
        t.guards.since_progress = 3;
        t.guards.recent.push(Recent {
            message: 9,
            author: 11,
            hash: 12,
        });
        t
    }

    pub(super) fn all() -> Vec<Vec<u8>> {
        vec![
            codec::encode(&message()),
            codec::encode(&MessageRec::bare(1, 1, None)),
            codec::encode_thread(&thread()),
            super::super::words::segment_sample(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_is_the_last_version_s() {
        let last = FORMATS.last().expect("a version");
        let now = fingerprint();
        assert_eq!(
            now,
            last.fingerprint,
            "the file format changed (tables, key or value types, or a record's bytes). \
             Formats are promises: add version {} to FORMATS in src/store/redb/format.rs \
             with fingerprint \"{now}\" and a migration step from version {}, and write \
             its test; never edit a released version's entry.",
            last.version + 1,
            last.version
        );
    }

    #[test]
    fn versions_count_up_from_one_and_only_the_first_has_no_step() {
        for (i, f) in FORMATS.iter().enumerate() {
            assert_eq!(f.version, i as u64 + 1);
            assert_eq!(f.migrate.is_none(), i == 0);
            assert_eq!(f.fingerprint.len(), 64);
        }
    }
}
