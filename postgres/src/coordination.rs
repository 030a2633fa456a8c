//! The coordination profile's records (SPEC §16) in PostgreSQL: `presence` by
//! (identity, extension), `leases` by id, and the lease counter in `parley_meta`;
//! and the imported claims of the provenance profile (SPEC §18.3).
//!
//! A lease is judged and written by the forum's one writer (`read::Tx::writer`
//! holds the forum's advisory lock until commit), so two engines racing for one
//! resource are judged one after the other, each seeing the other's commit.

use super::read::{big, Tx};
use parley_forum::storage::codec::{decode_json, encode_json};
use parley_forum::storage::records::{LeaseRec, PresenceRec};
use parley_forum::Result;

impl Tx<'_> {
    pub(super) fn read_presences(&self, identity: Option<&str>) -> Result<Vec<PresenceRec>> {
        // No extension is stored as '' (an extension is never empty): in the "C"
        // collation it sorts first, as SPEC §16.1 orders them.
        let rows = self.with(|c| match identity {
            Some(id) => c.rows(
                "SELECT rec FROM presence WHERE identity = $1 ORDER BY identity, extension",
                &[&id],
            ),
            None => c.rows("SELECT rec FROM presence ORDER BY identity, extension", &[]),
        })?;
        rows.iter()
            .map(|r| decode_json(r.get::<_, &[u8]>(0)))
            .collect()
    }

    pub(super) fn read_leases(&self) -> Result<Vec<LeaseRec>> {
        let rows = self.with(|c| c.rows("SELECT rec FROM leases ORDER BY id", &[]))?;
        rows.iter()
            .map(|r| decode_json(r.get::<_, &[u8]>(0)))
            .collect()
    }

    pub(super) fn read_lease(&self, id: u64) -> Result<Option<LeaseRec>> {
        let row = self.with(|c| c.row("SELECT rec FROM leases WHERE id = $1", &[&big(id)]))?;
        row.map(|r| decode_json(r.get::<_, &[u8]>(0))).transpose()
    }

    pub(super) fn write_presence(&mut self, rec: &PresenceRec) -> Result<()> {
        let bytes = encode_json(rec)?;
        let extension = rec.extension.as_deref().unwrap_or("");
        self.with(|c| {
            c.exec(
                "INSERT INTO presence (identity, extension, rec) VALUES ($1, $2, $3) \
                 ON CONFLICT (identity, extension) DO UPDATE SET rec = excluded.rec",
                &[&rec.identity, &extension, &bytes],
            )
        })?;
        Ok(())
    }

    pub(super) fn take_lease_id(&mut self) -> Result<u64> {
        // Under the forum's lock: no other engine takes one now.
        let row = self.with(|c| {
            c.row(
                "UPDATE parley_meta SET value = value + 1 WHERE key = 'lease_last' RETURNING value",
                &[],
            )
        })?;
        let row = row.ok_or_else(|| super::sql::damaged("lease counter"))?;
        Ok(row.get::<_, i64>(0) as u64)
    }

    pub(super) fn write_lease(&mut self, rec: &LeaseRec) -> Result<()> {
        let bytes = encode_json(rec)?;
        self.with(|c| {
            c.exec(
                "INSERT INTO leases (id, rec) VALUES ($1, $2) \
                 ON CONFLICT (id) DO UPDATE SET rec = excluded.rec",
                &[&big(rec.id), &bytes],
            )
        })?;
        Ok(())
    }

    pub(super) fn delete_lease(&mut self, id: u64) -> Result<()> {
        self.with(|c| c.exec("DELETE FROM leases WHERE id = $1", &[&big(id)]))?;
        Ok(())
    }
}

/// The imported claims of SPEC §18.3 (table `imports`), judged and written by
/// the forum's one writer like leases.
impl Tx<'_> {
    pub(super) fn read_imported(&self, realm: &str, claim: &str) -> Result<Option<u64>> {
        let row = self.with(|c| {
            c.row(
                "SELECT local FROM imports WHERE realm = $1 AND claim = $2",
                &[&realm, &claim],
            )
        })?;
        Ok(row.map(|r| r.get::<_, i64>(0) as u64))
    }

    pub(super) fn write_imported(&mut self, realm: &str, claim: &str, local: u64) -> Result<()> {
        self.with(|c| {
            c.exec(
                "INSERT INTO imports (realm, claim, local) VALUES ($1, $2, $3)",
                &[&realm, &claim, &big(local)],
            )
        })?;
        Ok(())
    }
}
