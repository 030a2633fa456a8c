//! The artifacts of SPEC §18.1 in PostgreSQL: `artifacts` keyed by the SHA-256 of
//! the bytes (bytea), written once by the forum's one writer.

use super::read::Tx;
use parley_forum::storage::records::ArtifactRec;
use parley_forum::Result;

impl Tx<'_> {
    pub(super) fn read_artifact(&self, digest: &[u8; 32]) -> Result<Option<ArtifactRec>> {
        let key: &[u8] = digest;
        let row = self.with(|c| {
            c.row(
                "SELECT media_type, created_at, content FROM artifacts WHERE digest = $1",
                &[&key],
            )
        })?;
        Ok(row.map(|r| ArtifactRec {
            media_type: r.get(0),
            created_at: r.get(1),
            content: r.get(2),
        }))
    }

    pub(super) fn artifact_stored(&self, digest: &[u8; 32]) -> Result<bool> {
        let key: &[u8] = digest;
        let row = self.with(|c| c.row("SELECT 1 FROM artifacts WHERE digest = $1", &[&key]))?;
        Ok(row.is_some())
    }

    pub(super) fn write_artifact(&mut self, digest: &[u8; 32], rec: &ArtifactRec) -> Result<()> {
        let key: &[u8] = digest;
        // The engine writes only a digest it did not find; `DO NOTHING` keeps the
        // first put's media type and time should two ever meet.
        self.with(|c| {
            c.exec(
                "INSERT INTO artifacts (digest, media_type, created_at, content) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (digest) DO NOTHING",
                &[&key, &rec.media_type, &rec.created_at, &rec.content],
            )
        })?;
        Ok(())
    }
}
