//! The artifacts of SPEC §18.1 in the forum file: one row per SHA-256, holding
//! the media type, the time of the first put and the bytes, in a typed table.

use crate::store::records::ArtifactRec;
use redb::ReadableTable;

use super::open::OrStorage;
use super::tables::ARTIFACTS;
use super::Writer;
use crate::error::Result;

type Row = (&'static str, i64, &'static [u8]);

/// The artifact of this digest.
pub(super) fn artifact(
    table: &impl ReadableTable<[u8; 32], Row>,
    digest: &[u8; 32],
) -> Result<Option<ArtifactRec>> {
    Ok(table.get(digest).or_storage()?.map(|guard| {
        let (media_type, created_at, content) = guard.value();
        ArtifactRec {
            media_type: media_type.to_string(),
            created_at,
            content: content.to_vec(),
        }
    }))
}

/// Whether an artifact of this digest is stored.
pub(super) fn has_artifact(
    table: &impl ReadableTable<[u8; 32], Row>,
    digest: &[u8; 32],
) -> Result<bool> {
    Ok(table.get(digest).or_storage()?.is_some())
}

impl Writer<'_> {
    pub(super) fn write_artifact(&mut self, digest: &[u8; 32], rec: &ArtifactRec) -> Result<()> {
        self.table(ARTIFACTS)?
            .insert(
                digest,
                (
                    rec.media_type.as_str(),
                    rec.created_at,
                    rec.content.as_slice(),
                ),
            )
            .or_storage()?;
        Ok(())
    }
}
