//! The file format's versions, in order, each with a fingerprint of its layout
//! and the step that migrates a file of the previous version, as
//! parley-postgres's `schema` module keeps its schema's versions.
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
    fingerprint: "46fcd4f704781c5f1602c44fc002489a49e7c05d36099c27609432a9b62442b3",
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
    use crate::store::codec::{self, tests};
    use crate::store::records::MessageRec;

    pub(super) fn all() -> Vec<Vec<u8>> {
        vec![
            codec::encode(&tests::full()),
            codec::encode(&MessageRec::bare(1, 1, None)),
            codec::encode_thread(&tests::full_thread()),
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
